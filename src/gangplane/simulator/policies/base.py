"""The contract between the event engine and a scheduling policy.

The engine owns time and the job timelines; a policy owns its queue and its scheduler core's state (a
snapshot of the nodes). Calls, all with the engine's virtual ``now``:

1. ``submit`` when a job arrives, or comes back after a failure (the engine already called ``release``).
2. ``release`` when a running job completes or fails; the policy frees its nodes. Never called for a job the
   policy preempted itself.
3. ``schedule`` once after every batch of events at one instant (and at any ``next_cycle`` wake-up). It
   returns decisions in the order they happened. A ``Preempt`` means the policy has already freed the
   victim's nodes and put it back in its own queue; the engine only cancels its completion. ``Start`` of a
   job that was never ``Admit``-ted implies admission at the same instant.
4. ``next_cycle`` after ``schedule``: the next instant the policy wants a cycle although nothing happens
   (a periodic scheduler, a gang timeout), or ``None``.

Policies must be deterministic for a given input order; randomness comes from the seed in ``PolicyOptions``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from gangplane.schedulers.core.scoring import Strategy
from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.preemption import Preemption


@dataclass(frozen=True, slots=True)
class Admit:
    """Quota reserved (Kueue admission) before pods are placed."""

    job_id: int


@dataclass(frozen=True, slots=True)
class Start:
    """Every member placed; ``nodes[i]`` hosts member ``i``."""

    job_id: int
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Preempt:
    job_id: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Reject:
    """The job can never run on this cluster (a gang larger than any placement allows)."""

    job_id: int
    reason: str


Decision = Admit | Start | Preempt | Reject


PLACEMENTS = {"binpack": Strategy.BINPACK, "spread": Strategy.SPREAD}


@dataclass(frozen=True, slots=True)
class PolicyOptions:
    seed: int = 0
    backfill_depth: int | None = None
    """Backfill: waiting jobs of one gang shape examined for the shadow-time rule per cycle (Slurm's
    ``bf_max_job_test`` analogue, but per shape); ``None`` = all (exact EASY)."""
    backfill_window: int | None = None
    """Backfill: only the first ``backfill_window`` waiting jobs in queue order may start (the head included);
    ``None`` = every waiting job (subject to ``backfill_depth``). Models a scheduler that looks at a fixed-size
    window of the queue, as the saturation experiment in performance-anchors.md §3 does."""
    placement: str | None = None
    """``binpack`` (MostAllocated) or ``spread`` (LeastAllocated) node scoring for the policies that place
    gangs themselves (fifo, backfill, conservative) and for Coscheduling's default scheduler; ``None`` = each
    policy's own default (bin-pack; kube-scheduler's LeastAllocated for Coscheduling)."""
    preemption: Preemption | None = None
    """What a preempted run keeps (restart from scratch, or checkpoint-restart with a cost); the engine applies
    it and preemptive policies plan with it. ``None`` = the policy's own model (``policy_preemption``):
    checkpoint-restart at no cost for las and srtf, restart from scratch for every other policy."""
    las_thresholds: tuple[float, ...] = (3600.0,)
    """Tiresias 2D-LAS: attained GPU-seconds at which a job moves to the next queue (Tiresias' simulator
    default: two queues split at 3,600 GPU-s)."""
    las_starvation: float = 0.0
    """Tiresias 2D-LAS starvation guard: a job waiting longer than this multiple of its executed time goes
    back to the first queue; 0 = off (the Tiresias simulator's default)."""
    cycle_interval: float = 0.0
    """Seconds between scheduling cycles for periodic schedulers (Volcano ``schedulePeriod``); 0 = on change."""
    explain: int | None = None
    """Job id whose waiting the integration policies explain at each cycle (``simulator.explain``); ``None``
    = no explanations."""

    def __post_init__(self) -> None:
        if self.placement is not None and self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, not {self.placement!r}")

    @property
    def strategy(self) -> Strategy:
        """``placement`` as the core's scoring strategy (bin-pack unless chosen)."""
        return self.strategy_or(Strategy.BINPACK)

    def strategy_or(self, default: Strategy) -> Strategy:
        return default if self.placement is None else PLACEMENTS[self.placement]


class Policy(Protocol):
    name: str

    def submit(self, job: JobSpec, now: float) -> None: ...

    def release(self, job_id: int, now: float) -> None: ...

    def schedule(self, now: float) -> Sequence[Decision]: ...

    def next_cycle(self, now: float) -> float | None: ...


PolicyFactory = Callable[[ClusterSpec, PolicyOptions], Policy]


def policy_preemption(policy: Policy, options: PolicyOptions) -> Preemption:
    """The preemption model a replay of ``policy`` uses: the policy's own (``preemption`` attribute of the
    preemptive policies, derived from ``options``), else ``options.preemption``, else restart from scratch."""
    model = getattr(policy, "preemption", None)
    return model if isinstance(model, Preemption) else options.preemption or Preemption()


__all__ = [
    "Admit",
    "Decision",
    "Policy",
    "PolicyFactory",
    "PolicyOptions",
    "Preempt",
    "Reject",
    "Start",
    "policy_preemption",
]
