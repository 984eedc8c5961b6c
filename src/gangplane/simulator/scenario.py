"""Scenario files: a cluster shape, queues and workload generators (after Kueue's performance
``generator.yaml``: classes with a count, a size, a duration and an arrival rate per queue), or a trace.

```yaml
name: two-teams
seed: 7
cluster:
  nodeGroups:
    - {name: a100, count: 16, gpus: 8, cpu: 96, memory: 1Ti,
       labels: {pool: a100}, topology: [{key: example.com/rack, size: 4}]}
queues:
  - {name: team-a, nominalGpus: 64, weight: 2}
  - {name: team-b, nominalGpus: 64}
workloads:
  - {class: small, queue: team-a, count: 200, members: 1, gpusPerMember: 1,
     duration: {distribution: exponential, mean: 600}, arrival: {every: 30}}
  - {class: large, queue: team-b, count: 20, members: 4, gpusPerMember: 8, priority: 100,
     duration: {distribution: lognormal, median: 3600, sigma: 1.0}, arrival: {poisson: 0.002}}
```

Generated jobs are a pure function of the scenario and its seed (one numpy ``Generator`` per class, seeded
from ``seed`` and the class's position), so adding a class never changes the jobs of the classes before it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from gangplane.api.quantity import parse
from gangplane.simulator.cluster import ClusterSpec, NodeSpec, QueueSpec
from gangplane.simulator.jobs import DEFAULT_QUEUE, JobSpec
from gangplane.simulator.traces import TraceFormat, load_trace


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, allow_inf_nan=False
    )


class TopologyTier(_Model):
    """Nodes ``i`` of a group get label ``key`` = ``<key's last segment>-<i // size>``."""

    key: str
    size: int = Field(ge=1)


class NodeGroup(_Model):
    name: str
    count: int = Field(ge=1)
    gpus: int = Field(ge=0)
    cpu: str | float = 64
    memory: str | float = "512Gi"
    labels: dict[str, str] = Field(default_factory=dict)
    topology: list[TopologyTier] = Field(default_factory=list)

    def nodes(self) -> list[NodeSpec]:
        width = max(3, len(str(self.count - 1)))
        cpu, memory = float(parse(self.cpu)), float(parse(self.memory))
        return [
            NodeSpec(f"{self.name}-{i:0{width}d}", self.gpus, cpu, memory, self._labels(i))
            for i in range(self.count)
        ]

    def _labels(self, i: int) -> dict[str, str]:
        tiers = {tier.key: f"{tier.key.rsplit('/', 1)[-1]}-{i // tier.size}" for tier in self.topology}
        return {**self.labels, **tiers}


class Cluster(_Model):
    node_groups: list[NodeGroup] = Field(min_length=1)


class Queue(_Model):
    name: str
    nominal_gpus: int | None = Field(default=None, ge=0)
    borrowing_limit: int | None = Field(default=None, ge=0)
    weight: float = Field(default=1.0, gt=0)
    cohort: str = ""
    priority: int = 0


class Duration(_Model):
    """``fixed: s``, or a distribution: ``exponential`` (mean), ``lognormal`` (median, sigma),
    ``uniform`` (low, high)."""

    fixed: float | None = Field(default=None, ge=0)
    distribution: Literal["exponential", "lognormal", "uniform"] | None = None
    mean: float | None = Field(default=None, gt=0)
    median: float | None = Field(default=None, gt=0)
    sigma: float = Field(default=1.0, ge=0)
    low: float | None = Field(default=None, ge=0)
    high: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _one_kind(self) -> Duration:
        needs = {"exponential": ("mean",), "lognormal": ("median",), "uniform": ("low", "high")}
        if (self.fixed is None) == (self.distribution is None):
            raise ValueError("give either fixed or distribution")
        missing = [f for f in needs.get(self.distribution or "", ()) if getattr(self, f) is None]
        if missing:
            raise ValueError(f"{self.distribution} needs {', '.join(missing)}")
        return self

    def sample(self, rng: np.random.Generator, count: int) -> np.ndarray:
        if self.fixed is not None:
            return np.full(count, self.fixed)
        if self.distribution == "exponential":
            return rng.exponential(self.mean or 1.0, count)
        if self.distribution == "lognormal":
            return np.asarray(self.median) * np.exp(rng.normal(0.0, self.sigma, count))
        return rng.uniform(self.low or 0.0, self.high or 0.0, count)


class Arrival(_Model):
    """``every: s`` (fixed gaps, Kueue's ``timeout`` between creations) or ``poisson: jobs/s``; from ``start``."""

    every: float | None = Field(default=None, ge=0)
    poisson: float | None = Field(default=None, gt=0)
    start: float = Field(default=0.0, ge=0)

    @model_validator(mode="after")
    def _one_kind(self) -> Arrival:
        if (self.every is None) == (self.poisson is None):
            raise ValueError("give either every or poisson")
        return self

    def sample(self, rng: np.random.Generator, count: int) -> np.ndarray:
        if self.every is not None:
            return self.start + self.every * np.arange(count)
        gaps = rng.exponential(1.0 / (self.poisson or 1.0), count)
        arrivals: np.ndarray = self.start + np.r_[0.0, np.cumsum(gaps[1:])]
        return arrivals


class WorkloadClass(_Model):
    class_name: str = Field(alias="class")
    queue: str = DEFAULT_QUEUE
    count: int = Field(ge=1)
    members: int = Field(default=1, ge=1)
    gpus_per_member: int = Field(default=1, ge=0)
    cpu_per_member: float = Field(default=0.0, ge=0)
    memory_per_member: str | float = 0
    priority: int = 0
    duration: Duration
    arrival: Arrival


class Trace(_Model):
    path: Path
    format: TraceFormat = TraceFormat.CSV
    vc: str | None = None


class Scenario(_Model):
    name: str = "scenario"
    seed: int = 0
    cluster: Cluster
    queues: list[Queue] = Field(default_factory=list)
    workloads: list[WorkloadClass] = Field(default_factory=list)
    trace: Trace | None = None

    @model_validator(mode="after")
    def _some_jobs(self) -> Scenario:
        if not self.workloads and self.trace is None:
            raise ValueError("a scenario needs workloads or a trace")
        return self

    def cluster_spec(self) -> ClusterSpec:
        nodes = tuple(node for group in self.cluster.node_groups for node in group.nodes())
        queues = tuple(
            QueueSpec(q.name, q.nominal_gpus, q.borrowing_limit, q.weight, q.cohort, q.priority)
            for q in self.queues
        )
        return ClusterSpec(nodes, queues or (QueueSpec(DEFAULT_QUEUE),))


def generate(scenario: Scenario, base: Path | None = None, seed: int | None = None) -> list[JobSpec]:
    """The scenario's jobs, sorted by arrival with ids 0..n-1; a trace path is relative to ``base``."""
    seed = scenario.seed if seed is None else seed
    rows: list[tuple[float, int, JobSpec]] = []
    for position, workload in enumerate(scenario.workloads):
        rows += [
            (job.arrival, len(rows) + i, job) for i, job in enumerate(_class_jobs(workload, seed, position))
        ]
    if scenario.trace is not None:
        rows += [(job.arrival, len(rows) + i, job) for i, job in enumerate(_trace_jobs(scenario, base))]
    rows.sort(key=lambda row: (row[0], row[1]))
    return [_renumber(job, i) for i, (_, _, job) in enumerate(rows)]


def _class_jobs(workload: WorkloadClass, seed: int, position: int) -> list[JobSpec]:
    rng = np.random.default_rng([seed, position])
    arrivals = workload.arrival.sample(rng, workload.count)
    durations = workload.duration.sample(rng, workload.count)
    memory = float(parse(workload.memory_per_member))
    return [
        JobSpec(
            -1,
            float(arrival),
            workload.members,
            workload.gpus_per_member,
            float(duration),
            workload.queue,
            workload.priority,
            workload.cpu_per_member,
            memory,
            f"{workload.class_name}-{i}",
        )
        for i, (arrival, duration) in enumerate(zip(arrivals.tolist(), durations.tolist(), strict=True))
    ]


def _trace_jobs(scenario: Scenario, base: Path | None) -> list[JobSpec]:
    assert scenario.trace is not None
    path = (
        scenario.trace.path
        if base is None or scenario.trace.path.is_absolute()
        else base / scenario.trace.path
    )
    gpus_per_node = max(group.gpus for group in scenario.cluster.node_groups)
    return load_trace(path, scenario.trace.format, gpus_per_node=gpus_per_node, vc=scenario.trace.vc)


def _renumber(job: JobSpec, new_id: int) -> JobSpec:
    return replace(job, id=new_id)


def load_scenario(path: Path) -> Scenario:
    """Parse and validate a scenario file (``pydantic.ValidationError`` / ``yaml.YAMLError`` on bad input)."""
    data: Any = yaml.safe_load(path.read_text())
    return Scenario.model_validate(data)


__all__ = [
    "Arrival",
    "Cluster",
    "Duration",
    "NodeGroup",
    "Queue",
    "Scenario",
    "TopologyTier",
    "Trace",
    "WorkloadClass",
    "generate",
    "load_scenario",
]
