"""LocalQueue ``spec.stopPolicy`` in the core (``localqueues``), ported from upstream (kubernetes-sigs/kueue at
``ff69552e79``):

- ``pkg/controller/core/workload_controller_eviction_test.go`` ``TestReconcileEviction``,
- ``pkg/controller/core/workload_controller_requeue_test.go`` ``TestReconcileRequeue``,

each case by its upstream name, plus the rules of ``workload_controller.go`` (``getQueueBlocker``: a stopped
LocalQueue's workload says ``Suspended``, "LocalQueue NAME is inactive") and of the queue manager (a stopped
LocalQueue's workloads leave the ClusterQueue's heap) that no table case covers.
"""

from __future__ import annotations

import dataclasses

from kueue_builders import cq, state, wl

from gangplane.api.meta import Condition
from gangplane.api.scheduling.kueue import StopPolicy
from gangplane.clock import rfc3339
from gangplane.schedulers.kueue.cycle import run_cycle
from gangplane.schedulers.kueue.flavors import Assignment, PodSetAssignment
from gangplane.schedulers.kueue.localqueues import drain, mark_restarted, set_stop_policies
from gangplane.schedulers.kueue.queuestatus import pending_counts
from gangplane.schedulers.kueue.state import KueueState
from gangplane.schedulers.kueue.workloads import History, Phase

NOW = 1_800_000_000.0
LQ, OTHER = ("ns", "lq"), ("ns", "other")
STOPPED = ("LocalQueueStopped", "The LocalQueue is stopped")
HELD = ("False", "Suspended", "LocalQueue lq is inactive")
RESTARTED = ("True", "LocalQueueRestarted", "The LocalQueue was restarted after being stopped")


def _core() -> KueueState:
    return state(cq("q1", {"default": {"cpu": 8}}))


def _admit(s: KueueState, name: str = "wl", history: History | None = None) -> None:
    assignment = Assignment([PodSetAssignment("main", 1, {"cpu": "default"}, {("default", "cpu"): 2})])
    s.restore_admitted(wl(name, "q1", {"cpu": 2}), assignment, NOW - 300, False, history)


def _seen(s: KueueState, key: str, *types: str) -> dict[str, tuple[str, str, str]]:
    found = s.workloads[key].conditions
    return {t: (found[t].status, found[t].reason, found[t].message) for t in types if t in found}


def _drain_cycles(s: KueueState, now: float) -> set[str]:
    admitted: set[str] = set()
    for _ in range(5):
        admitted |= {w.key for w in run_cycle(s, now).admitted}
    return admitted


def test_should_set_the_evicted_condition_with_local_queue_stopped_reason_when_the_stop_policy_is_hold_and_drain() -> (
    None
):
    """TestReconcileEviction; then, as the job reconciler and the next workload reconcile settle it, Requeued
    False with the same reason and QuotaReserved saying why it waits."""
    s = _core()
    _admit(s)
    assert set_stop_policies(s, {LQ: StopPolicy.HOLD_AND_DRAIN}, NOW) == []  # nothing was pending
    assert [(e.key, e.reason, e.message) for e in drain(s, NOW)] == [("ns/wl", *STOPPED)]
    assert _seen(s, "ns/wl", "Evicted", "Requeued", "QuotaReserved") == {
        "Evicted": ("True", *STOPPED),
        "Requeued": ("False", *STOPPED),
        "QuotaReserved": HELD,
    }
    assert s.workloads["ns/wl"].evictions == {("LocalQueueStopped", ""): 1}
    assert not any(s.tree.cqs["q1"].usage.values())  # the quota is released
    assert not s.queues.queue("q1").pending()  # held, in no heap
    assert drain(s, NOW + 1) == []  # upstream: "Workload is already evicted"


def test_should_set_the_workload_requeued_condition_to_true_on_local_queue_started() -> None:
    """TestReconcileRequeue: the LocalQueue exists and has no stopPolicy."""
    s = _core()
    stored = Condition(type="Requeued", status="False", reason=STOPPED[0], message=STOPPED[1],
                       last_transition_time=rfc3339(NOW - 300))  # fmt: skip
    s.add_workload(wl("wl", "q1", {"cpu": 2}), NOW, History(conditions=(stored,)))
    assert mark_restarted(s, {LQ}, NOW) == ["ns/wl"]
    assert _seen(s, "ns/wl", "Requeued") == {"Requeued": RESTARTED}
    assert mark_restarted(s, {LQ}, NOW + 1) == []


def test_not_marked_restarted_while_its_local_queue_is_stopped_or_missing() -> None:
    s = _core()
    stored = History(conditions=(Condition(type="Requeued", status="False", reason=STOPPED[0], message=STOPPED[1],
                                           last_transition_time=rfc3339(NOW - 300)),))  # fmt: skip
    set_stop_policies(s, {LQ: StopPolicy.HOLD}, NOW)
    s.add_workload(wl("held", "q1", {"cpu": 2}), NOW, stored)
    s.add_workload(dataclasses.replace(wl("orphan", "", {"cpu": 2}), local_queue="gone"), NOW, stored)
    assert mark_restarted(s, {LQ}, NOW) == []


def test_a_missing_local_queue_is_misconfigured_before_a_stopped_one_is_suspended() -> None:
    """``getQueueBlocker``'s order and reasons (UnadmittedWorkloadsObservability, on by default)."""
    s = _core()
    set_stop_policies(s, {OTHER: StopPolicy.HOLD}, NOW)
    s.add_workload(dataclasses.replace(wl("missing", "", {"cpu": 2}), local_queue="gone"), NOW)
    s.add_workload(dataclasses.replace(wl("held", "q1", {"cpu": 2}), local_queue="other"), NOW)
    assert _seen(s, "ns/missing", "QuotaReserved") == {
        "QuotaReserved": ("False", "Misconfigured", "LocalQueue gone doesn't exist")
    }
    assert _seen(s, "ns/held", "QuotaReserved") == {
        "QuotaReserved": ("False", "Suspended", "LocalQueue other is inactive")
    }


def test_hold_keeps_admitted_workloads_and_holds_pending_ones() -> None:
    s = _core()
    _admit(s, "running")
    s.add_workload(wl("waiting", "q1", {"cpu": 8}), NOW)  # does not fit beside the running one
    run_cycle(s, NOW)
    assert pending_counts(s) == {("q1", "ns", "lq"): 1}
    assert set_stop_policies(s, {LQ: StopPolicy.HOLD}, NOW) == ["ns/waiting"]
    assert drain(s, NOW) == []  # Hold drains nothing
    assert s.workloads["ns/running"].phase == Phase.ADMITTED
    assert _seen(s, "ns/waiting", "QuotaReserved") == {"QuotaReserved": HELD}
    assert pending_counts(s) == {}  # not counted in the ClusterQueue's or the LocalQueue's pending
    s.add_workload(wl("new", "q1", {"cpu": 2}), NOW)  # would fit now
    assert _seen(s, "ns/new", "QuotaReserved") == {"QuotaReserved": HELD}
    s.finish_workload("ns/running", True, "done", NOW + 1)
    assert _drain_cycles(s, NOW + 5) == set()
    assert set_stop_policies(s, {LQ: StopPolicy.HOLD}, NOW + 6) == []  # unchanged: nothing reconfigured


def test_only_the_stopped_local_queue_is_held() -> None:
    s = _core()
    s.add_workload(wl("mine", "q1", {"cpu": 2}), NOW)
    s.add_workload(dataclasses.replace(wl("theirs", "q1", {"cpu": 2}), local_queue="other"), NOW)
    assert set_stop_policies(s, {LQ: StopPolicy.HOLD_AND_DRAIN, OTHER: StopPolicy.NONE}, NOW) == ["ns/mine"]
    assert _drain_cycles(s, NOW) == {"ns/theirs"}
    assert drain(s, NOW) == []  # the admitted one is the other LocalQueue's


def test_restart_queues_held_and_drained_workloads_again() -> None:
    """The integration test "Using localQueue stop policy" "Should evict workloads when stop policy is drain",
    on the core: drained, a second workload held, both admitted once the stopPolicy is removed."""
    s = _core()
    s.add_workload(wl("wl1", "q1", {"cpu": 2}), NOW)
    assert _drain_cycles(s, NOW) == {"ns/wl1"}
    set_stop_policies(s, {LQ: StopPolicy.HOLD_AND_DRAIN}, NOW + 1)
    assert [e.key for e in drain(s, NOW + 1)] == ["ns/wl1"]
    s.add_workload(wl("wl2", "q1", {"cpu": 2}), NOW + 2)
    assert _drain_cycles(s, NOW + 5) == set()
    assert sorted(set_stop_policies(s, {}, NOW + 6)) == ["ns/wl1", "ns/wl2"]
    assert mark_restarted(s, {LQ}, NOW + 6) == ["ns/wl1"]
    assert _seen(s, "ns/wl1", "Requeued") == {"Requeued": RESTARTED}
    assert _drain_cycles(s, NOW + 6) == {"ns/wl1", "ns/wl2"}


def test_a_backoff_waits_out_a_hold() -> None:
    """A workload waiting out a backoff when its LocalQueue stops leaves the backoff; restarted before the
    backoff ends, it waits for the rest."""
    s = _core()
    s.add_workload(wl("wl", "q1", {"cpu": 2}), NOW)
    s.workloads["ns/wl"].requeue_at = NOW + 60
    s.queues.forget("ns/wl", "q1")
    s.queues.push(s.workloads["ns/wl"], NOW)
    set_stop_policies(s, {LQ: StopPolicy.HOLD}, NOW + 1)
    assert "ns/wl" not in s.queues.backoff
    set_stop_policies(s, {}, NOW + 2)
    assert "ns/wl" in s.queues.backoff
    assert _drain_cycles(s, NOW + 3) == set()
