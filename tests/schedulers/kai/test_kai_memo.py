"""The KAI scheduler's memo and fast paths change no decision.

``KaiScheduler`` keeps parsed PodGroups, pods, queues and the last fair shares across cycles, skips reclaim
and preempt where no victim exists, remembers within allocate the gang shapes that found no room, and builds
no why-pending text or status unless ``explain`` is on. Each replay below runs the same random trace
(quotas, so reclaim has work; priorities, so preempt has work) twice through the simulator's KAI policy:
once as the simulator runs it, once with a fresh memo every cycle and ``explain`` on (every action walks
every starving job). Starts, ends, nodes and preemptions must agree job for job.
"""

from __future__ import annotations

import random

import pytest

from gangplane.schedulers.base import ClusterView, CycleResult
from gangplane.schedulers.kai.memo import KaiMemo
from gangplane.schedulers.kai.scheduler import KaiScheduler
from gangplane.schedulers.kai.session import KaiConfig
from gangplane.simulator.cluster import ClusterSpec, QueueSpec, uniform_cluster
from gangplane.simulator.engine import simulate
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.policies import PolicyOptions
from gangplane.simulator.policies.kai import Kai


class _Unmemoised(KaiScheduler):
    """The reference: nothing kept between cycles, and every reason built."""

    def cycle(self, view: ClusterView) -> CycleResult:
        self.memo = KaiMemo()
        return super().cycle(view)


def trace(seed: int, count: int = 36, span: int = 400) -> list[JobSpec]:
    rng = random.Random(seed)
    arrivals = sorted(rng.randrange(0, span) for _ in range(count))
    return [
        JobSpec(
            i,
            float(arrival),
            rng.choice((1, 1, 2, 3)),
            rng.choice((1, 2, 4)),
            float(rng.randrange(5, 150)),
            rng.choice(("a", "b", "c")),
            priority=rng.choice((0, 0, 10, 50, 150)),
        )
        for i, arrival in enumerate(arrivals)
    ]


def _outcome(jobs: list[JobSpec], cluster: ClusterSpec, reference: bool) -> list[tuple[object, ...]]:
    policy = Kai(cluster, PolicyOptions())
    if reference:
        policy.integration.scheduler = _Unmemoised(KaiConfig(explain=True))  # type: ignore[attr-defined]
    result = simulate(jobs, policy, cluster)
    return [(r.start, r.end, r.preemptions, tuple(s.nodes for s in r.segments)) for r in result.records]


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_memo_and_fast_paths_decide_as_a_fresh_session(seed: int) -> None:
    queues = (
        QueueSpec("a", nominal_gpus=8, weight=2),
        QueueSpec("b", nominal_gpus=4, borrowing_limit=8),
        QueueSpec("c"),
    )
    cluster = ClusterSpec(uniform_cluster(4, 4).nodes, queues)
    jobs = trace(seed)
    fast = _outcome(jobs, cluster, reference=False)
    assert fast == _outcome(jobs, cluster, reference=True)
    assert sum(preempted for _, _, preempted, _ in fast) > 0  # reclaim or preempt had work


def test_memo_forgets_objects_no_longer_seen() -> None:
    memo = KaiMemo()
    first, second = {"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}
    assert memo.pods.get(id(first), first, lambda: 1) == 1
    memo.end_cycle()
    assert memo.pods.get(id(second), second, lambda: 2) == 2
    memo.end_cycle()
    assert memo.pods.get(id(first), first, lambda: 3) == 3  # forgotten after a cycle without it
    changed = {"metadata": {"name": "b", "resourceVersion": "7"}}
    assert memo.pods.get(id(second), changed, lambda: 4) == 4  # another dict under the same key
