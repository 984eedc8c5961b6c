"""Short builders for Kueue core tests: queues, cohorts, flavors and workloads with integer amounts."""

from __future__ import annotations

from collections.abc import Mapping

from gangplane.api.scheduling.kueue import PreemptionPolicy, QueueingStrategy
from gangplane.schedulers.kueue.model import (
    ClusterQueueSpec,
    CohortSpec,
    FlavorQuotas,
    PodSetRequest,
    Preemption,
    ResourceGroup,
    ResourceQuota,
    WorkloadRequest,
)
from gangplane.schedulers.kueue.podsready import WaitForPodsReady
from gangplane.schedulers.kueue.state import KueueConfig, KueueState

Quota = int | tuple[int, int | None, int | None]


def _quota(q: Quota) -> ResourceQuota:
    if isinstance(q, int):
        return ResourceQuota(q)
    return ResourceQuota(*q)


def group(flavors: Mapping[str, Mapping[str, Quota]]) -> ResourceGroup:
    """``{"a100": {"gpu": 8}}`` or ``{"a100": {"gpu": (nominal, borrowingLimit, lendingLimit)}}``."""
    covered = tuple(sorted({r for res in flavors.values() for r in res}))
    return ResourceGroup(
        covered,
        tuple(FlavorQuotas(name, {r: _quota(q) for r, q in res.items()}) for name, res in flavors.items()),
    )


def cq(
    name: str,
    flavors: Mapping[str, Mapping[str, Quota]] | None = None,
    *,
    cohort: str | None = None,
    within: PreemptionPolicy = PreemptionPolicy.NEVER,
    reclaim: PreemptionPolicy = PreemptionPolicy.NEVER,
    borrow_within: PreemptionPolicy = PreemptionPolicy.NEVER,
    threshold: int | None = None,
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO,
    **kwargs: object,
) -> ClusterQueueSpec:
    groups = (group(flavors),) if flavors else ()
    preemption = Preemption(within, reclaim, borrow_within, threshold)
    return ClusterQueueSpec(
        name,
        groups,
        cohort,
        strategy,
        preemption,
        **kwargs,  # type: ignore[arg-type]
    )


def cohort(name: str, flavors: Mapping[str, Mapping[str, Quota]] | None = None, parent: str | None = None,
           weight: float = 1.0) -> CohortSpec:  # fmt: skip
    return CohortSpec(name, parent, (group(flavors),) if flavors else (), weight)


def wl(
    name: str,
    cluster_queue: str,
    requests: Mapping[str, int],
    *,
    count: int = 1,
    priority: int = 0,
    created: float = 0.0,
    namespace: str = "ns",
    node_selector: Mapping[str, str] | None = None,
) -> WorkloadRequest:
    pod_set = PodSetRequest("main", count, dict(requests), dict(node_selector or {}))
    return WorkloadRequest(
        key=f"{namespace}/{name}",
        namespace=namespace,
        local_queue="lq",
        cluster_queue=cluster_queue,
        pod_sets=(pod_set,),
        priority=priority,
        created=created,
        uid=name,
    )


def state(*cqs: ClusterQueueSpec, cohorts: tuple[CohortSpec, ...] = (), flavors=(), pods_ready=False,
          fair=None, now: float = 0.0) -> KueueState:  # fmt: skip
    from gangplane.schedulers.kueue.model import FlavorSpec

    config = KueueConfig(WaitForPodsReady(enabled=pods_ready), fair)
    s = KueueState(config)
    names = {f for c in cqs for g in c.resource_groups for f in (x.name for x in g.flavors)}
    given = {f.name: f for f in flavors}
    s.configure(cqs, cohorts, [given.get(n, FlavorSpec(n)) for n in sorted(names)], now)
    return s
