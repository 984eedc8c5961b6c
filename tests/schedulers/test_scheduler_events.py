"""What the scheduler shell records besides bindings: kube-scheduler's Events and a victim's DisruptionTarget."""

from controllers.job_passes import settle_plan
from gangplane.clock import rfc3339
from gangplane.controllers import job_pods as jp
from gangplane.controllers import job_policy as jpol
from gangplane.schedulers.base import CycleResult, Eviction
from gangplane.schedulers.core.preemption import DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER
from gangplane.schedulers.loop import SchedulerLoop
from gangplane.store.catalog import EVENTS, PODS
from gangplane.store.memory import MemoryStore
from schedulers.kube_builders import T0, pod
from schedulers.test_scheduler_loop import _synced
from waiting import wait_for


def _events(store: MemoryStore, reason: str) -> list[dict]:
    return [e for e in store.list(EVENTS).items if e["reason"] == reason]


def test_bound_pod_gets_a_scheduled_event(one_node) -> None:
    store, loop = one_node
    created = store.create(PODS, pod("a"))
    loop.start_informers()
    wait_for(_synced(loop, store), 5.0)
    loop.run_once()
    [event] = _events(store, "Scheduled")
    assert (event["type"], event["message"]) == ("Normal", "Successfully assigned ml/a to n0")
    assert event["source"] == {"component": "default-scheduler"}
    assert event["reportingComponent"] == "default-scheduler"
    assert event["involvedObject"]["kind"] == "Pod"
    assert event["involvedObject"]["uid"] == created["metadata"]["uid"]


def test_unschedulable_pod_gets_one_failed_scheduling_warning_per_message(one_node) -> None:
    store, loop = one_node
    store.create(PODS, pod("big", cpu="8"))
    loop.start_informers()
    wait_for(_synced(loop, store), 5.0)
    loop.run_once()
    wait_for(_synced(loop, store), 5.0)
    loop.queue.move()  # requeue the pod: a second attempt with the same outcome
    loop.run_once()
    [event] = _events(store, "FailedScheduling")
    assert event["type"] == "Warning" and event["count"] == 1
    assert event["message"].startswith("0/1 nodes are available: 1 Insufficient cpu")


def test_eviction_marks_the_victim_then_deletes_it(one_node) -> None:
    store, loop = one_node
    victim = store.create(PODS, pod("low", node_name="n0"))
    loop.start_informers()
    [before] = _evict(store, loop, "ml/low", "volcano", "preempted by ml/high")
    [cond] = [c for c in before["status"]["conditions"] if c["type"] == DISRUPTION_TARGET]
    assert (cond["status"], cond["reason"]) == ("True", PREEMPTION_BY_SCHEDULER)
    assert cond["message"] == "volcano: preempted by ml/high"
    [event] = _events(store, "Preempted")
    assert event["involvedObject"]["uid"] == victim["metadata"]["uid"]
    assert event["source"] == {"component": "volcano"} and event["message"] == "preempted by ml/high"
    assert store.list(PODS).items == []


def test_eviction_of_a_pod_already_gone_is_dropped(one_node) -> None:
    store, loop = one_node
    loop.writer.write(CycleResult(evictions=[Eviction("ml/gone", "Preempted")]), "volcano")
    assert store.list(EVENTS).items == []


def test_gang_preemption_victim_counts_as_a_disruption_for_pod_failure_policy(one_node) -> None:
    # the condition the writer sets is what a Job's podFailurePolicy matches (onPodConditions DisruptionTarget)
    store, loop = one_node
    rules = [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
    template = {"spec": {"containers": [{"name": "c"}], "restartPolicy": "Never"}}
    owner = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ml", "uid": "u"},
             "spec": {"backoffLimit": 0, "podFailurePolicy": {"rules": rules}, "template": template}}  # fmt: skip
    member = jp.build_pod(jp.defaulted_job(owner), None)
    member["metadata"]["name"] = member["metadata"].pop("generateName") + "0"
    member["spec"]["nodeName"] = "n0"
    owners = member["metadata"].pop("ownerReferences")  # the store collects a pod whose owner is absent
    store.create(PODS, member)
    [victim] = _evict(store, loop, f"ml/{member['metadata']['name']}", "volcano")
    victim["metadata"]["ownerReferences"] = owners
    killed = {"name": "c", "state": {"terminated": {"exitCode": 137, "finishedAt": rfc3339(T0)}}}
    victim["status"] = {**victim["status"], "phase": "Failed", "containerStatuses": [killed]}
    ignored = jpol.plan(owner, [victim], T0 + 30)
    assert len(ignored.create_pods) == 1 and "failed" not in ignored.status
    # counted in the pass after the one that recorded it as uncounted (the job-tracking finalizer, job_tracking.py)
    counted = settle_plan({**owner, "spec": {**owner["spec"], "podFailurePolicy": None}}, [victim], T0 + 30)
    assert counted.status.get("failed") == 1


def _evict(
    store: MemoryStore, loop: SchedulerLoop, key: str, scheduler: str, message: str = ""
) -> list[dict]:
    """Run the writer's eviction of ``key``; the victim as it was just before its delete (one, or none)."""
    seen: list[dict] = []
    delete = store.delete

    def spied(rt, namespace, name, *args, **kwargs):
        seen.append(store.get(rt, namespace, name))
        return delete(rt, namespace, name, *args, **kwargs)

    store.delete = spied  # type: ignore[method-assign]
    loop.writer.write(CycleResult(evictions=[Eviction(key, "Preempted", message)]), scheduler)
    return seen
