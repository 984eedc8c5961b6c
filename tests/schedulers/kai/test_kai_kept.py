"""A KAI scheduler that keeps its jobs across cycles decides as a fresh one, cycle by cycle (hypothesis).

The simulator's KAI policy drives one long-lived ``KaiScheduler`` (no explanations) through arrivals, ends,
reclaims and preemptions, handing it the shell's ``Changes``; it keeps its jobs, their queue sums and its
waiting lines (``schedulers/kai/kept.py``) and allocates over the lines (``lines.py``). At every cycle a
fresh scheduler with explanations on (every job built from the whole lists, every waiting job walked in
allocate, reclaim and preempt without early exits) decides on the same view first: bindings and
evictions must be the same, in the same order.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_kai_memo import trace

from gangplane.schedulers.base import ClusterView, CycleResult
from gangplane.schedulers.kai.scheduler import KaiScheduler
from gangplane.schedulers.kai.session import KaiConfig
from gangplane.simulator.cluster import ClusterSpec, QueueSpec, uniform_cluster
from gangplane.simulator.engine import simulate
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.policies import PolicyOptions
from gangplane.simulator.policies.kai import Kai


class _Checked(KaiScheduler):
    """The kept scheduler, checked against a fresh one on each view before it decides."""

    def __init__(self) -> None:
        super().__init__(KaiConfig(explain=False))
        self.cycles = 0
        self.kept_cycles = 0

    def cycle(self, view: ClusterView) -> CycleResult:
        assert view.changes is not None  # the shell says what changed: the kept path can run
        _check_pending_lookup(view)
        token = view.snapshot.checkpoint()
        fresh = KaiScheduler(KaiConfig(explain=True)).cycle(dataclasses.replace(view, changes=None))
        view.snapshot.rollback(token)
        kept = self.memo.kept
        result = super().cycle(view)
        self.cycles += 1
        self.kept_cycles += kept is not None and self.memo.kept is kept
        assert (result.bindings, result.evictions) == (fresh.bindings, fresh.evictions)
        return result


def _check_pending_lookup(view: ClusterView) -> None:
    """The shell's ``Changes.pending`` answers, for every pod of a changed group, the very ``PodInfo`` the
    view's pending tuple holds for it, or ``None`` when the tuple has none."""
    assert view.changes is not None and view.changes.pending is not None
    pending = {p.key: p for p in view.pending}
    for group in view.changes.groups:
        for pod in view.changes.members(group):
            key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
            assert view.changes.pending(key) is pending.get(key)


jobs_strategy = st.lists(
    st.tuples(
        st.integers(0, 300),  # arrival
        st.sampled_from((1, 1, 2, 3)),  # members
        st.sampled_from((1, 2, 4)),  # GPUs per member
        st.integers(5, 150),  # duration
        st.sampled_from(("a", "b", "c")),
        st.sampled_from((0, 0, 10, 50, 150)),  # priority (>= 100: not preemptible)
        st.sampled_from((0.0, 0.0, 1.5e9)),  # memory per member (bytes)
    ),
    min_size=1,
    max_size=24,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=jobs_strategy,
    quota_a=st.sampled_from((None, 4, 8)),
    limit_b=st.sampled_from((None, 2, 6)),
    nodes=st.integers(2, 5),
)
def test_kept_jobs_and_lines_decide_as_a_fresh_scheduler(
    jobs: list[tuple[int, int, int, int, str, int, float]],
    quota_a: int | None,
    limit_b: int | None,
    nodes: int,
) -> None:
    queues = (
        QueueSpec("a", nominal_gpus=quota_a, weight=2),
        QueueSpec("b", nominal_gpus=None if limit_b is None else 4, borrowing_limit=limit_b),
        QueueSpec("c"),
    )
    cluster = ClusterSpec(uniform_cluster(nodes, 4).nodes, queues)
    specs = [
        JobSpec(i, float(t), m, g, float(d), q, priority=p, memory_per_member=mem)
        for i, (t, m, g, d, q, p, mem) in enumerate(sorted(jobs))
    ]
    policy = Kai(cluster, PolicyOptions())
    checked = _Checked()
    policy.integration.scheduler = checked  # type: ignore[attr-defined]
    simulate(specs, policy, cluster)
    # only the first cycle, and one per priority first seen (a new PriorityClass), builds every job again
    assert checked.kept_cycles >= checked.cycles - 1 - len({s.priority for s in specs})


def test_a_long_contended_trace_decides_as_a_fresh_scheduler() -> None:
    """A longer trace than hypothesis draws: waiting lines of many jobs and shapes, reclaims and
    preemptions; every cycle checked as above."""
    specs = trace(7, count=70, span=840)
    queues = (QueueSpec("a", nominal_gpus=8, weight=2), QueueSpec("b", nominal_gpus=4, borrowing_limit=8),
              QueueSpec("c"))  # fmt: skip
    cluster = ClusterSpec(uniform_cluster(4, 4).nodes, queues)
    policy = Kai(cluster, PolicyOptions())
    checked = _Checked()
    policy.integration.scheduler = checked  # type: ignore[attr-defined]
    result = simulate(specs, policy, cluster)
    assert checked.kept_cycles >= checked.cycles - 4
    assert sum(r.preemptions for r in result.records) > 0
