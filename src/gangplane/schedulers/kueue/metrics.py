"""Prometheus metrics with Kueue's names and labels (kueue.md §12, kueue ``pkg/metrics/metrics.go``).

Every metric is registered on the registry passed in; importing this module registers nothing. Quantities in
the quota gauges are in Kueue's units (cpu in cores, other resources in base units).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from gangplane.schedulers.kueue.cycle import CycleResult
from gangplane.schedulers.kueue.fairsharing import weighted_share
from gangplane.schedulers.kueue.state import Eviction, KueueState
from gangplane.schedulers.kueue.workloads import WorkloadState

# Kueue's wait-time buckets: 1, then doubling from 2.5.
WAIT_BUCKETS = (1.0, *(2.5 * 2**i for i in range(14)))
ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(14))
_CQ_PC = ("cluster_queue", "priority_class")
_QUOTA = ("cohort", "cluster_queue", "flavor", "resource")


def _amount(resource: str, amount: int) -> float:
    return amount / 1000 if resource == "cpu" else float(amount)


class KueueMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.admission_attempts = Counter(
            "kueue_admission_attempts", "Admission attempts by result", ["result"], registry=r
        )
        self.attempt_duration = Histogram(
            "kueue_admission_attempt_duration_seconds", "Duration of an admission cycle", ["result"],
            buckets=ATTEMPT_BUCKETS, registry=r,
        )  # fmt: skip
        self.pending = Gauge(
            "kueue_pending_workloads", "Pending workloads", ["cluster_queue", "status"], registry=r
        )
        self.reserving = Gauge(
            "kueue_reserving_active_workloads", "Workloads holding quota", ["cluster_queue"], registry=r
        )
        self.admitted_active = Gauge(
            "kueue_admitted_active_workloads", "Admitted workloads", ["cluster_queue"], registry=r
        )
        self.quota_reserved = Counter(
            "kueue_quota_reserved_workloads", "Quota reservations", list(_CQ_PC), registry=r
        )
        self.quota_reserved_wait = Histogram(
            "kueue_quota_reserved_wait_time_seconds", "Creation or requeue to quota reservation", list(_CQ_PC),
            buckets=WAIT_BUCKETS, registry=r,
        )  # fmt: skip
        self.admitted = Counter("kueue_admitted_workloads", "Admitted workloads", list(_CQ_PC), registry=r)
        self.admission_wait = Histogram(
            "kueue_admission_wait_time_seconds", "Creation or requeue to admission", list(_CQ_PC),
            buckets=WAIT_BUCKETS, registry=r,
        )  # fmt: skip
        self.evicted = Counter(
            "kueue_evicted_workloads",
            "Evictions",
            ["cluster_queue", "reason", "underlying_cause"],
            registry=r,
        )
        self.preempted = Counter(
            "kueue_preempted_workloads",
            "Preemptions issued",
            ["preempting_cluster_queue", "reason"],
            registry=r,
        )
        self.finished = Counter(
            "kueue_finished_workloads", "Finished workloads", ["cluster_queue"], registry=r
        )
        self.usage = Gauge("kueue_cluster_queue_resource_usage", "Quota used", list(_QUOTA), registry=r)
        self.nominal = Gauge("kueue_cluster_queue_nominal_quota", "Nominal quota", list(_QUOTA), registry=r)
        self.borrowing_limit = Gauge(
            "kueue_cluster_queue_borrowing_limit", "Borrowing limit", list(_QUOTA), registry=r
        )
        self.lending_limit = Gauge(
            "kueue_cluster_queue_lending_limit", "Lending limit", list(_QUOTA), registry=r
        )
        self.weighted_share = Gauge(
            "kueue_cluster_queue_weighted_share", "Fair-sharing weighted share", ["cluster_queue", "cohort"],
            registry=r,
        )  # fmt: skip

    def observe_cycle(self, state: KueueState, result: CycleResult, now: float, seconds: float) -> None:
        """Record one cycle; ``seconds`` is its measured duration (wall time, from the shell)."""
        outcome = "success" if result.admitted else "inadmissible"
        if result.heads:
            self.admission_attempts.labels(outcome).inc()
            self.attempt_duration.labels(outcome).observe(seconds)
        for workload in result.admitted:
            self._observe_admitted(workload, now)
        for eviction in result.evictions:
            self.observe_eviction(state, eviction)
            if eviction.preemption_reason is not None and eviction.preempting_cluster_queue is not None:
                self.preempted.labels(eviction.preempting_cluster_queue, eviction.preemption_reason).inc()
        self.refresh(state)

    def _observe_admitted(self, workload: WorkloadState, now: float) -> None:
        labels = (workload.cluster_queue, workload.request.priority_class)
        wait = max(0.0, now - workload.queue_time)
        self.quota_reserved.labels(*labels).inc()
        self.quota_reserved_wait.labels(*labels).observe(wait)
        self.admitted.labels(*labels).inc()
        self.admission_wait.labels(*labels).observe(wait)

    def observe_eviction(self, state: KueueState, eviction: Eviction) -> None:
        workload = state.workloads.get(eviction.key)
        cq = workload.cluster_queue if workload is not None else ""
        self.evicted.labels(cq, eviction.reason, eviction.preemption_reason or eviction.cause).inc()

    def observe_finished(self, cluster_queue: str) -> None:
        self.finished.labels(cluster_queue).inc()

    def refresh(self, state: KueueState) -> None:
        """Queue-state and quota gauges from the current state."""
        for name, queue in state.queues.queues.items():
            self.pending.labels(name, "active").set(len(queue.active))
            self.pending.labels(name, "inadmissible").set(len(queue.inadmissible))
            admitted = len(state.admitted.get(name, {}))
            self.reserving.labels(name).set(admitted)
            self.admitted_active.labels(name).set(admitted)
        for name, spec in state.cluster_queues.items():
            node = state.tree.cqs.get(name)
            if node is None:
                continue
            cohort = spec.cohort or ""
            for (flavor, resource), quota in node.quotas.items():
                labels = (cohort, name, flavor, resource)
                self.nominal.labels(*labels).set(_amount(resource, quota.nominal))
                self.usage.labels(*labels).set(_amount(resource, node.usage.get((flavor, resource), 0)))
                if quota.borrowing_limit is not None:
                    self.borrowing_limit.labels(*labels).set(_amount(resource, quota.borrowing_limit))
                if quota.lending_limit is not None:
                    self.lending_limit.labels(*labels).set(_amount(resource, quota.lending_limit))
            self.weighted_share.labels(name, cohort).set(weighted_share(node))
