"""What an eviction writes before the pod delete: the DisruptionTarget condition and a Preempted Event."""

from __future__ import annotations

from gangplane.schedulers.core.preemption import disruption_condition, preempted_event
from gangplane.schedulers.loop import with_condition

POD = {
    "metadata": {"name": "w-0", "namespace": "ml", "uid": "u-1"},
    "spec": {"schedulerName": "volcano", "nodeName": "n1"},
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
}


def test_condition_as_kube_scheduler_writes_it() -> None:
    cond = disruption_condition("default-scheduler", "")
    assert cond == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "default-scheduler: preempting to accommodate a higher priority pod",
    }


def test_condition_joins_the_pod_status_and_names_the_preemptor() -> None:
    message = "Reclaimed by ml/big (priority 10, queue a)"
    updated = with_condition(POD, disruption_condition("volcano", message), 1_767_225_600.0)
    assert updated is not None
    ready, target = updated["status"]["conditions"]
    assert ready == {"type": "Ready", "status": "True"}
    assert target["message"] == f"volcano: {message}"
    assert target["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert with_condition(updated, disruption_condition("volcano", message), 1_767_225_700.0) is None


def test_preempted_event_on_the_victim() -> None:
    event = preempted_event(POD, "volcano", "Reclaimed by ml/big (priority 10, queue a)", 1_767_225_600.0)
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "w-0",
        "namespace": "ml",
        "uid": "u-1",
    }
    assert (event["type"], event["reason"], event["source"]) == (
        "Normal",
        "Preempted",
        {"component": "volcano"},
    )
    assert event["message"] == "Reclaimed by ml/big (priority 10, queue a)"
    assert event["metadata"]["namespace"] == "ml" and event["firstTimestamp"] == "2026-01-01T00:00:00Z"
