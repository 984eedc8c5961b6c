"""One Kueue admission cycle over a cycle-local copy of the quota tree (kueue.md §3, §5).

After kueue ``pkg/scheduler/scheduler.go`` ``schedule()``:

1. requeue what is due (batched requeues, finished backoffs);
2. pop exactly one head per active ClusterQueue;
3. bring the kept copy of the quota tree (the view, ``quota.KeptView``) level with it and nominate every
   head: namespace and queue checks, then flavors;
4. order the entries — classical: within-nominal before borrowing, then priority, then queue time; with fair
   sharing: the DRS tournament, re-run after each entry;
5. process each entry against the view: admit (Fit), evict victims (Preempt), or leave it pending;
6. put every head not admitted back: heap or inadmissible set, per the ClusterQueue's queueing strategy.

Admissions and evictions are applied to the state directly; the returned ``CycleResult`` tells the shell what
to write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gangplane.api.scheduling.kueue import QueueingStrategy
from gangplane.api.scheduling.kueue_workload import EvictionReason
from gangplane.schedulers.kueue.fairpreemption import find_fair_targets
from gangplane.schedulers.kueue.fairsharing import Contender, next_fair_entry
from gangplane.schedulers.kueue.flavors import Assignment, assign_flavors
from gangplane.schedulers.kueue.model import (
    AssignmentMode,
    ClusterQueueSpec,
    FlavorResource,
    PendingReason,
    PendingSource,
    Usage,
    selector_matches,
)
from gangplane.schedulers.kueue.preemption import (
    Preemptor,
    Target,
    find_targets,
    oracle_for,
    preemption_message,
    queue_path,
)
from gangplane.schedulers.kueue.quota import QuotaTree, available
from gangplane.schedulers.kueue.state import Eviction, KueueState
from gangplane.schedulers.kueue.workloads import Phase, WorkloadState, mark_admitted, mark_pending


@dataclass
class Entry:
    workload: WorkloadState
    assignment: Assignment | None = None
    reason: str = ""
    message: str = ""
    inadmissible: bool = False
    admitted: bool = False
    source: PendingSource = PendingSource.SCHEDULER
    """Who says why it is pending: the workload controller for a queue that blocks it, else the scheduler."""
    targets: list[Target] = field(default_factory=list)
    """Victims found at nomination, against the cycle's starting view (upstream's ``preemptionTargets``)."""

    @property
    def preemptor(self) -> Preemptor:
        w = self.workload
        return Preemptor(w.key, w.cluster_queue, w.priority, w.queue_time)


@dataclass
class CycleResult:
    heads: int = 0
    admitted: list[WorkloadState] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    pending: list[WorkloadState] = field(default_factory=list)
    inadmissible: int = 0

    @property
    def progressed(self) -> bool:
        """False when the cycle changed nothing: running another one before an outside event is pointless."""
        return bool(self.admitted or self.evictions or self.inadmissible)


# ---------------------------------------------------------------- nomination


def _nominate(state: KueueState, workload: WorkloadState, view: QuotaTree) -> Entry:
    entry = Entry(workload)
    spec = state.cluster_queues.get(workload.cluster_queue)
    if spec is None or not state.is_active(spec.name):
        _blocked_by_cluster_queue(entry, spec is None)
        return entry
    if not selector_matches(spec.namespace_selector, workload.request.namespace_labels):
        entry.reason, entry.inadmissible = PendingReason.MISCONFIGURED, True
        entry.message = "workload namespace doesn't match ClusterQueue selector"
        return entry
    _assign(state, entry, spec, view)
    return entry


def _blocked_by_cluster_queue(entry: Entry, missing: bool) -> None:
    """A missing or inactive ClusterQueue: upstream's queue manager pops no head of it, and its workload
    controller says why (``getQueueBlocker``), so no ``Pending`` Event is recorded."""
    name = entry.workload.cluster_queue
    entry.inadmissible, entry.source = True, PendingSource.WORKLOAD_CONTROLLER
    if missing:
        entry.reason, entry.message = PendingReason.MISCONFIGURED, f"ClusterQueue {name} doesn't exist"
    else:
        entry.reason, entry.message = PendingReason.SUSPENDED, f"ClusterQueue {name} is inactive"


def _assign(state: KueueState, entry: Entry, spec: ClusterQueueSpec, view: QuotaTree,
            pinned: Mapping[str, Mapping[str, str]] | None = None) -> None:  # fmt: skip
    """Flavors against ``view``, and the victims when they need preemption (upstream ``getAssignments``)."""
    oracle = oracle_for(spec, view, lambda fr, amount: _find(state, entry, spec, view, {fr: amount}, {fr}))
    fair = state.config.fair_sharing is not None
    entry.assignment = assign_flavors(entry.workload.request, spec, view, state.flavors, oracle, fair_sharing=fair,
                                      pinned=pinned)  # fmt: skip
    entry.targets = _targets(state, entry, view) if entry.assignment.mode == AssignmentMode.PREEMPT else []
    if entry.assignment.mode == AssignmentMode.NO_FIT:
        entry.reason, entry.message = entry.assignment.reason, _why(state, entry.assignment)
        entry.inadmissible = True


def _why(state: KueueState, assignment: Assignment) -> str:
    """The flavor assigner's message, only when the state explains (it is built from every reason)."""
    return assignment.message() if state.explain else ""


def _classical_order(entries: list[Entry]) -> list[Entry]:
    def key(e: Entry) -> tuple[int, int, float, str]:
        borrow = e.assignment.borrow if e.assignment is not None else 0
        return borrow, -e.workload.priority, e.workload.queue_time, e.workload.key

    return sorted(entries, key=key)


# ---------------------------------------------------------------- processing


def _fits(view: QuotaTree, cq: str, assignment: Assignment) -> bool:
    node = view.cqs[cq]
    return all(amount <= available(node, fr) for fr, amount in assignment.usage.items())


def _blocked_by_pods_ready(state: KueueState) -> bool:
    config = state.config.wait_for_pods_ready
    if not (config.enabled and config.block_admission):
        return False
    return len(state.readiness) > 0  # an admitted workload is still waiting for its pods


def _admit(state: KueueState, entry: Entry, view: QuotaTree, now: float, result: CycleResult) -> None:
    assert entry.assignment is not None
    workload = entry.workload
    if _blocked_by_pods_ready(state):
        entry.reason, entry.message = (
            PendingReason.WAITING_FOR_PODS_READY,
            "Waiting for all admitted workloads to be in PodsReady condition",
        )
        return
    if not _fits(view, workload.cluster_queue, entry.assignment):
        entry.reason = PendingReason.WAITING_FOR_QUOTA
        entry.message = "Workload no longer fits after processing another workload"
        return
    usage = entry.assignment.usage
    view.add_usage(workload.cluster_queue, usage)
    state.tree.add_usage(workload.cluster_queue, usage)
    state.admitted.add(workload)
    mark_admitted(workload, entry.assignment, now, conditions=state.explain)
    state.track_readiness(workload)
    queue = state.queues.queue(workload.cluster_queue)
    if queue.sticky == workload.key:
        queue.sticky = None
    entry.admitted = True
    result.admitted.append(workload)


def capped_reservation(assignment: Assignment, spec: ClusterQueueSpec, view: QuotaTree) -> Usage:
    """What a workload that needs preemption but found no victims holds back in the cycle (kueue scheduler
    ``quotaResourcesToReserve``): without borrowing, what is left of its nominal quota; when borrowing, what is
    left below nominal + borrowingLimit (all of it without a limit)."""
    if assignment.mode != AssignmentMode.PREEMPT:
        return dict(assignment.usage)
    used, quotas = view.cqs[spec.name].usage, spec.quotas()
    reserved: Usage = {}
    for fr, amount in assignment.usage.items():
        quota = quotas.get(fr)
        nominal = quota.nominal if quota is not None else 0
        if assignment.borrow > 0:
            limit = quota.borrowing_limit if quota is not None else None
            reserved[fr] = amount if limit is None else min(amount, nominal + limit - used.get(fr, 0))
        else:
            reserved[fr] = max(0, min(amount, nominal - used.get(fr, 0)))
    return reserved


def _find(state: KueueState, entry: Entry, spec: ClusterQueueSpec, view: QuotaTree, usage: Usage,
          frs: set[FlavorResource]) -> list[Target]:  # fmt: skip
    """Victims for ``usage`` on the contested ``frs``, fair or classical as configured (``getTargets``)."""
    if state.config.fair_sharing is not None:
        strategies = state.config.fair_sharing
        return find_fair_targets(
            entry.preemptor, spec, view, usage, frozenset(frs), state.admitted, strategies
        )
    return find_targets(entry.preemptor, spec, view, usage, frs, state.admitted)


def _targets(state: KueueState, entry: Entry, view: QuotaTree) -> list[Target]:
    assert entry.assignment is not None
    spec = state.cluster_queues[entry.workload.cluster_queue]
    return _find(state, entry, spec, view, entry.assignment.usage, entry.assignment.preempt_frs)


def _fits_without(view: QuotaTree, cq: str, usage: Usage, gone: list[Target]) -> bool:
    """Whether ``usage`` fits ``cq`` once ``gone`` are evicted (upstream scheduler ``fits``)."""
    for target in gone:
        view.remove_usage(target.workload.cluster_queue, target.workload.usage)
    fits = all(amount <= available(view.cqs[cq], fr) for fr, amount in usage.items())
    for target in gone:
        view.add_usage(target.workload.cluster_queue, target.workload.usage)
    return fits


def _no_candidates(state: KueueState, entry: Entry, view: QuotaTree) -> None:
    assert entry.assignment is not None
    entry.reason, entry.message = PendingReason.WAITING_FOR_QUOTA, _why(state, entry.assignment)
    entry.inadmissible = True
    spec = state.cluster_queues[entry.workload.cluster_queue]
    if spec.preemption.reclaim_within_cohort != "Any":  # upstream's CanAlwaysReclaim
        # keep lower entries off the quota it waits for, capped at what it could ever get
        view.add_usage(spec.name, capped_reservation(entry.assignment, spec, view))


def _recompute(state: KueueState, entry: Entry, view: QuotaTree) -> bool:
    """Targets overlapping another preemptor's: assign again against the view, whose victims are already gone
    (upstream's RecomputeAssignmentUponPreemptionTargetsOverlap, on by default), on the flavors nominated
    before. True when the workload fits once those preemptions complete: it then waits for them, holding its
    usage (upstream ``DeferredFit``)."""
    assert entry.assignment is not None
    nominated = {p.name: dict(p.flavors) for p in entry.assignment.pod_sets}
    _assign(state, entry, state.cluster_queues[entry.workload.cluster_queue], view, nominated)
    assert entry.assignment is not None
    if entry.assignment.mode != AssignmentMode.FIT:
        return False
    entry.reason = PendingReason.WAITING_FOR_PREEMPTED_WORKLOADS
    entry.message = (
        "Workload has overlapping preemption targets with another workload, but will fit after these "
        "preemptions complete"
    )
    view.add_usage(entry.workload.cluster_queue, entry.assignment.usage)
    return True


def _preempt(
    state: KueueState, entry: Entry, view: QuotaTree, now: float, result: CycleResult, taken: set[str]
) -> None:  # fmt: skip
    """Upstream ``processEntry`` for a Preempt-mode entry: no victims, overlap, no longer fits, or evict."""
    workload = entry.workload
    if any(t.workload.key in taken for t in entry.targets) and _recompute(state, entry, view):
        return
    assert entry.assignment is not None
    if entry.assignment.mode == AssignmentMode.NO_FIT:
        return
    if not entry.targets:
        _no_candidates(state, entry, view)
        return
    if any(t.workload.key in taken for t in entry.targets):
        entry.reason = PendingReason.WAITING_FOR_QUOTA
        entry.message = "Workload has overlapping preemption targets with another workload"
        return
    usage = entry.assignment.usage
    if not _fits_without(view, workload.cluster_queue, usage, entry.targets):
        entry.reason = PendingReason.WAITING_FOR_QUOTA
        entry.message = "Workload no longer fits after processing another workload"
        return
    request = workload.request
    for target in entry.targets:
        taken.add(target.workload.key)
        view.remove_usage(target.workload.cluster_queue, target.workload.usage)
        message = preemption_message(request.uid, request.job_uid, target.reason,
                                     queue_path(view, workload.cluster_queue),
                                     queue_path(view, target.workload.cluster_queue))  # fmt: skip
        eviction = state.evict(target.workload.key, EvictionReason.PREEMPTED, message, now,
                               preemption=target.reason, preempting_cq=workload.cluster_queue,
                               in_cycle=True)  # fmt: skip
        result.evictions.append(eviction)
    view.add_usage(workload.cluster_queue, usage)
    state.queues.queue(workload.cluster_queue).sticky = workload.key
    entry.reason = PendingReason.WAITING_FOR_PREEMPTED_WORKLOADS
    # upstream: the flavor assigner's message, then the number of victims
    entry.message = (
        f"{entry.assignment.message()}. Pending the preemption of {len(entry.targets)} workload(s)"
    )


def _process(
    state: KueueState, entry: Entry, view: QuotaTree, now: float, result: CycleResult, taken: set[str]
) -> None:  # fmt: skip
    if entry.assignment is None or entry.inadmissible:
        return
    if entry.assignment.mode == AssignmentMode.FIT:
        _admit(state, entry, view, now, result)
    else:
        _preempt(state, entry, view, now, result, taken)


def _requeue(state: KueueState, entry: Entry, now: float, result: CycleResult) -> None:
    workload = entry.workload
    mark_pending(workload, entry.reason, entry.message, now, conditions=state.explain, by=entry.source)
    result.pending.append(workload)
    spec = state.cluster_queues.get(workload.cluster_queue)
    strict = spec is not None and spec.queueing_strategy == QueueingStrategy.STRICT_FIFO
    namespace_mismatch = entry.reason == PendingReason.MISCONFIGURED
    inadmissible = entry.inadmissible and (not strict or namespace_mismatch)
    if inadmissible:
        result.inadmissible += 1
        queue = state.queues.queue(workload.cluster_queue)
        if queue.sticky == workload.key:
            queue.sticky = None
    state.queues.requeue(workload, inadmissible=inadmissible)


def _ordered_processing(
    state: KueueState, entries: list[Entry], view: QuotaTree, now: float, result: CycleResult
) -> None:  # fmt: skip
    taken: set[str] = set()
    if state.config.fair_sharing is None:
        for entry in _classical_order(entries):
            _process(state, entry, view, now, result, taken)
        return
    live = [e for e in entries if e.assignment is not None and not e.inadmissible]
    while live:
        contenders = [_contender(e) for e in live]
        chosen = next_fair_entry(view, contenders)
        entry = live.pop(contenders.index(chosen))
        _process(state, entry, view, now, result, taken)


def _contender(entry: Entry) -> Contender:
    usage = entry.assignment.usage if entry.assignment is not None else {}
    w = entry.workload
    return Contender(w.cluster_queue, usage, w.priority, w.queue_time)


def run_cycle(state: KueueState, now: float) -> CycleResult:
    """One admission cycle at time ``now``."""
    state.wake_backoffs(now)
    result = CycleResult()
    heads = [w for w in state.queues.pop_heads() if w.phase == Phase.PENDING]
    result.heads = len(heads)
    if not heads:
        return result
    view = state.view.begin(state.tree)
    try:
        entries = [_nominate(state, head, view) for head in heads]
        _ordered_processing(state, entries, view, now, result)
    finally:
        state.view.end()
    for entry in entries:
        if not entry.admitted:
            _requeue(state, entry, now, result)
    return result
