"""What-if simulator: the scheduling and admission cores driven in virtual time over workloads and traces.

The engine (``engine``) replays jobs (``jobs``, from ``traces`` or ``scenario``) under one policy
(``policies``) and records timelines (``timeline``); ``metrics`` and ``bounds`` judge them, ``compare`` runs
several policies, ``export`` and ``plots`` (matplotlib, imported on demand) write results. Nothing here reads
the wall clock; the only randomness is seeded.
"""

from gangplane.simulator.bounds import Bounds, Violation, check, lower_bounds
from gangplane.simulator.cluster import ClusterSpec, NodeSpec, QueueSpec, uniform_cluster
from gangplane.simulator.compare import Comparison, Outcome, run_policies
from gangplane.simulator.engine import FailureModel, Simulation, simulate
from gangplane.simulator.jobs import JobSpec, pack_gang
from gangplane.simulator.metrics import Summary, summarise
from gangplane.simulator.scenario import Scenario, generate, load_scenario
from gangplane.simulator.timeline import JobRecord, Segment, SimResult
from gangplane.simulator.traces import TraceFormat, load_trace

__all__ = [
    "Bounds",
    "ClusterSpec",
    "Comparison",
    "FailureModel",
    "JobRecord",
    "JobSpec",
    "NodeSpec",
    "Outcome",
    "QueueSpec",
    "Scenario",
    "Segment",
    "SimResult",
    "Simulation",
    "Summary",
    "TraceFormat",
    "Violation",
    "check",
    "generate",
    "load_scenario",
    "load_trace",
    "lower_bounds",
    "pack_gang",
    "run_policies",
    "simulate",
    "summarise",
    "uniform_cluster",
]
