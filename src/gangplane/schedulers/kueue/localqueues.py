"""LocalQueue ``spec.stopPolicy`` in the core; pure, time passed in.

After kueue ``pkg/controller/core/localqueue_controller.go`` (a stopped LocalQueue leaves the queue manager, a
restarted one is added back with its workloads) and ``workload_controller.go`` (``reconcileOnLocalQueueActiveState``
and the ``LocalQueueRestarted`` requeue):

- ``Hold``: the LocalQueue's pending workloads leave the ClusterQueue's heap (so its pending counts and the
  visibility API no longer list them) and say ``QuotaReserved=False`` ``Suspended``, "LocalQueue NAME is
  inactive"; admitted ones keep running;
- ``HoldAndDrain``: its admitted workloads are evicted too (``Evicted`` and ``Requeued=False``,
  ``LocalQueueStopped``, "The LocalQueue is stopped"), then held like the pending ones;
- back to ``None``: its held workloads are queued again, and those the drain evicted get ``Requeued=True``,
  ``LocalQueueRestarted``, "The LocalQueue was restarted after being stopped";
- deleted: its pending workloads leave the ClusterQueue's queue and say ``Misconfigured``, "LocalQueue NAME
  doesn't exist", until it is created again (``follow_local_queue``).

Only the LocalQueues whose policy changed are reconfigured. The drain and the restart mark read the stored
conditions, so a core rebuilt after a control-plane restart settles the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from gangplane.api.scheduling.kueue import StopPolicy
from gangplane.api.scheduling.kueue_workload import EvictionReason
from gangplane.api.scheduling.kueue_workload import WorkloadConditionType as C
from gangplane.schedulers.kueue.model import LocalQueueKey, WorkloadRequest
from gangplane.schedulers.kueue.state import Eviction, KueueState
from gangplane.schedulers.kueue.workloads import Phase, WorkloadState

STOPPED_MESSAGE = "The LocalQueue is stopped"  # as upstream, without its name
RESTARTED, RESTARTED_MESSAGE = "LocalQueueRestarted", "The LocalQueue was restarted after being stopped"


def _queue_of(state: WorkloadState) -> LocalQueueKey:
    return state.request.namespace, state.request.local_queue


def set_stop_policies(
    core: KueueState, policies: Mapping[LocalQueueKey, StopPolicy], now: float
) -> list[str]:
    """Follow every LocalQueue's ``stopPolicy`` (absent: None); returns the workloads whose status changed:
    the pending ones of the LocalQueues that stopped or started."""
    stopped: dict[LocalQueueKey, StopPolicy] = {lq: p for lq, p in policies.items() if p != StopPolicy.NONE}
    changed = stopped.keys() ^ core.stopped_local_queues.keys()
    core.stopped_local_queues = stopped
    if not changed:
        return []
    touched = []
    for state in core.workloads.values():
        if state.phase != Phase.PENDING or _queue_of(state) not in changed:
            continue
        if core.held(state):
            core.queues.forget(state.key, state.cluster_queue)
            core.push_or_hold(state, now)
        else:
            core.enqueue(state, now)
        touched.append(state.key)
    return touched


def follow_local_queue(core: KueueState, request: WorkloadRequest, now: float) -> str | None:
    """``request`` names another ClusterQueue than its workload's (the LocalQueue was deleted: none, or
    created): a pending workload leaves the old ClusterQueue's queue and is queued afresh, so a deleted
    LocalQueue's workloads say "LocalQueue NAME doesn't exist" (kueue ``pkg/cache/queue`` manager
    ``DeleteLocalQueue``, then the workload controller's ``getQueueBlocker``). An inactive one only remembers
    it for its reactivation; an admitted one keeps its quota where it was admitted, as upstream. Returns the
    ClusterQueue it left, or None."""
    state = core.workloads.get(request.key)
    if state is None or state.cluster_queue == request.cluster_queue:
        return None
    if state.phase not in (Phase.PENDING, Phase.INACTIVE):
        return None
    left = state.cluster_queue
    core.queues.forget(state.key, left)
    state.request, state.shape = request, None
    if state.phase == Phase.PENDING:
        core.enqueue(state, now)
    return left


def drain(core: KueueState, now: float) -> list[Eviction]:
    """Evict the admitted workloads of every ``HoldAndDrain`` LocalQueue (their jobs are stopped by the shell)."""
    draining = {lq for lq, policy in core.stopped_local_queues.items() if policy == StopPolicy.HOLD_AND_DRAIN}
    if not draining:
        return []
    victims = sorted(
        k for k, s in core.workloads.items() if s.phase == Phase.ADMITTED and _queue_of(s) in draining
    )
    return [core.evict(key, EvictionReason.LOCAL_QUEUE_STOPPED, STOPPED_MESSAGE, now) for key in victims]


def _drained(state: WorkloadState) -> bool:
    """Left ``Requeued=False`` by a drain, and not finished since."""
    requeued = state.conditions.get(C.REQUEUED)
    if requeued is None or state.phase == Phase.FINISHED:
        return False
    return requeued.status == "False" and requeued.reason == EvictionReason.LOCAL_QUEUE_STOPPED


def mark_restarted(core: KueueState, existing: Collection[LocalQueueKey], now: float) -> list[str]:
    """``Requeued=True`` ``LocalQueueRestarted`` on the workloads a drain left ``Requeued=False`` whose
    LocalQueue exists (is in ``existing``) and runs again (upstream checks this first on every Workload
    reconcile). Returns them."""
    found = []
    for key, state in core.workloads.items():
        if _drained(state) and _queue_of(state) in existing and not core.held(state):
            state.set_condition(C.REQUEUED, True, RESTARTED, RESTARTED_MESSAGE, now)
            found.append(key)
    return found


def settle(
    core: KueueState, existing: Collection[LocalQueueKey], now: float
) -> tuple[list[str], list[Eviction]]:
    """Once every workload is read back (a first pass after a restart, a LocalQueue change): the restart marks
    and the drains of stopped LocalQueues and ClusterQueues, from the stored conditions, as upstream's workload
    reconcile checks them whenever it runs (LocalQueue before ClusterQueue). Returns (marked, evictions)."""
    marked = mark_restarted(core, existing, now) + core.mark_restarted(now)
    return marked, drain(core, now) + core.drain_stopped(now)
