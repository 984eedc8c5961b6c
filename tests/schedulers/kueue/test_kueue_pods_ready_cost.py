"""waitForPodsReady costs what changed: deadlines are kept per workload as it is admitted, becomes ready or
leaves, so a pass reads no admitted workload that did not change, however many are admitted (issue #15)."""

from __future__ import annotations

import pytest
from kueue_builders import cq, state, wl

from gangplane.schedulers.kueue.cycle import run_cycle
from gangplane.schedulers.kueue.flavors import Assignment, PodSetAssignment
from gangplane.schedulers.kueue.podsready import ReadinessDeadlines, WaitForPodsReady
from gangplane.schedulers.kueue.state import KueueConfig, KueueState

CPU = "cpu"
TIMEOUT = WaitForPodsReady().timeout


def _with_admitted(count: int, *, block: bool = False) -> KueueState:
    """``count`` admitted 1-cpu workloads, none ready, in a ClusterQueue with room for one more."""
    s = state(cq("cq", {"default": {CPU: (count + 1) * 1000}}), pods_ready=True)
    s.config = KueueConfig(WaitForPodsReady(block_admission=block))
    for i in range(count):
        usage = {("default", CPU): 1000}
        assignment = Assignment([PodSetAssignment("main", 1, {CPU: "default"}, usage)])
        s.restore_admitted(wl(f"held-{i}", "cq", {CPU: 1000}), assignment, 0.0, pods_ready=False)
    return s


def _deadline_reads(s: KueueState, monkeypatch: pytest.MonkeyPatch, action) -> int:  # type: ignore[no-untyped-def]
    calls = []
    original = KueueState.pods_ready_deadline

    def counting(self: KueueState, workload):  # type: ignore[no-untyped-def]
        calls.append(workload.key)
        return original(self, workload)

    monkeypatch.setattr(KueueState, "pods_ready_deadline", counting)
    action()
    monkeypatch.setattr(KueueState, "pods_ready_deadline", original)
    return len(calls)


@pytest.mark.parametrize("admitted", [10, 1000])
def test_a_pass_reads_only_the_workloads_that_changed(admitted: int, monkeypatch: pytest.MonkeyPatch) -> None:
    s = _with_admitted(admitted)
    assert len(s.readiness) == admitted
    # nothing due yet: the timeout check reads no workload
    assert _deadline_reads(s, monkeypatch, lambda: s.check_pods_ready(TIMEOUT / 2)) == 0
    assert s.next_wakeup() is not None
    # one arrival admitted: only its own deadline is computed
    s.add_workload(wl("new", "cq", {CPU: 1000}, created=1), 1.0)
    reads = _deadline_reads(s, monkeypatch, lambda: run_cycle(s, 2.0))
    assert (reads, len(s.readiness)) == (1, admitted + 1)
    # one becomes ready: one read, and it leaves the deadlines
    assert _deadline_reads(s, monkeypatch, lambda: s.set_pods_ready("ns/held-0", True, 3.0)) == 1
    assert len(s.readiness) == admitted


def test_timeouts_evict_exactly_the_due_workloads_in_key_order() -> None:
    s = _with_admitted(3)
    s.set_pods_ready("ns/held-1", True, 5.0)
    evicted = s.check_pods_ready(TIMEOUT)
    assert [e.key for e in evicted] == ["ns/held-0", "ns/held-2"]
    assert (len(s.readiness), s.earliest_pods_ready_deadline()) == (0, None)


def test_block_admission_waits_while_any_admitted_workload_is_not_ready() -> None:
    s = _with_admitted(2, block=True)
    s.add_workload(wl("new", "cq", {CPU: 1000}, created=1), 1.0)
    assert run_cycle(s, 2.0).admitted == []
    for key in ("ns/held-0", "ns/held-1"):
        s.set_pods_ready(key, True, 3.0)
    assert [w.key for w in run_cycle(s, 4.0).admitted] == ["ns/new"]


def test_deadlines_heap_stays_small_under_churn() -> None:
    deadlines = ReadinessDeadlines()
    for step in range(10_000):
        deadlines.set("a", float(step))  # every change leaves a stale heap entry behind
    assert deadlines.earliest() == 9_999.0
    assert len(deadlines._heap) <= 2 * len(deadlines) + 65
