"""Isolation: one malformed object never fails the pass. Its own pods get a clear ``Error`` reason; every
other pod, of every scheduler, schedules as usual (issue #16)."""

from __future__ import annotations

import copy
from typing import Any

from gangplane.api.scheduling import kai
from gangplane.api.scheduling import volcano as vc
from gangplane.api.scheduling.coscheduling import SCHEDULER_NAME as COSCHEDULING
from gangplane.schedulers.base import ClusterView, CycleResult, Status
from gangplane.schedulers.default import DefaultScheduler
from gangplane.schedulers.kai import KaiScheduler
from gangplane.schedulers.loop import INVALID_POD, SCHEDULER_ERROR, plan_pass
from gangplane.schedulers.volcano import VolcanoScheduler
from gangplane.store.base import ResourceType
from gangplane.store.catalog import (
    COSCHEDULING_PODGROUPS,
    KAI_PODGROUPS,
    KAI_QUEUES,
    PRIORITY_CLASSES,
    VOLCANO_PODGROUPS,
    VOLCANO_QUEUES,
)
from schedulers.kube_builders import T0, node, pod, pod_group

BAD_CLASS = {"metadata": {"name": "urgent"}, "value": "high"}
GOOD_CLASS = {"metadata": {"name": "normal"}, "value": 10}
NODES = [node(f"n{i}", cpu="16", gpu=8) for i in range(2)]


def _kai_queue(name: str) -> dict[str, Any]:
    res = {r: {"quota": -1, "limit": -1, "overQuotaWeight": 1} for r in ("gpu", "cpu", "memory")}
    return {"metadata": {"name": name}, "spec": {"resources": res}}


def _kai_group(name: str, size: int, priority_class: str, **spec: Any) -> dict[str, Any]:
    body = {"minMember": size, "queue": "q", "priorityClassName": priority_class, **spec}
    return {"metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}"}, "spec": body}


def _vc_group(name: str, size: int, priority_class: str, **spec: Any) -> dict[str, Any]:
    body = {"minMember": size, "queue": "default", "priorityClassName": priority_class, **spec}
    meta = {"name": name, "namespace": "ml", "uid": f"uid-{name}"}
    return {"metadata": meta, "spec": body, "status": {"phase": "Inqueue"}}


def _members(name: str, size: int, scheduler: str, annotation: str) -> list[dict[str, Any]]:
    pods = [pod(f"{name}-{i}", gpu=1, scheduler=scheduler) for i in range(size)]
    for p in pods:
        p["metadata"]["annotations"] = {annotation: name}
    return pods


def _all_schedulers() -> dict[str, Any]:
    return {
        "default-scheduler": DefaultScheduler(),
        COSCHEDULING: DefaultScheduler(COSCHEDULING),
        "volcano": VolcanoScheduler(),
        kai.SCHEDULER_NAME: KaiScheduler(),
    }


def _world(classes: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[ResourceType, list[Any]]]:
    """A good and a bad job for every scheduler; the bad ones name the broken PriorityClass or are broken."""
    pods = [pod("plain", cpu="1"), pod("plain-bad", cpu="1", priority="very")]
    pods += [pod(f"cos-{i}", gpu=1, group="cos") for i in range(2)]
    pods += [pod(f"cosbad-{i}", gpu=1, group="cosbad") for i in range(2)]
    pods += _members("vgood", 2, "volcano", vc.GROUP_NAME_ANNOTATION)
    pods += _members("vbad", 2, "volcano", vc.GROUP_NAME_ANNOTATION)
    pods += _members("vmal", 2, "volcano", vc.GROUP_NAME_ANNOTATION)
    pods += _members("kgood", 2, kai.SCHEDULER_NAME, kai.POD_GROUP_ANNOTATION)
    pods += _members("kbad", 2, kai.SCHEDULER_NAME, kai.POD_GROUP_ANNOTATION)
    pods += _members("kmal", 2, kai.SCHEDULER_NAME, kai.POD_GROUP_ANNOTATION)
    bad_cos = pod_group("cosbad", 2)
    bad_cos["spec"]["minMember"] = "two"
    objects: dict[ResourceType, list[Any]] = {
        PRIORITY_CLASSES: classes,
        COSCHEDULING_PODGROUPS: [pod_group("cos", 2), bad_cos],
        VOLCANO_QUEUES: [],
        VOLCANO_PODGROUPS: [
            _vc_group("vgood", 2, "normal"),
            _vc_group("vbad", 2, "urgent"),
            _vc_group("vmal", 2, "normal", minMember="lots"),
        ],
        KAI_QUEUES: [_kai_queue("q")],
        KAI_PODGROUPS: [
            _kai_group("kgood", 2, "normal"),
            _kai_group("kbad", 2, "urgent"),
            _kai_group("kmal", 2, "normal", minSubGroup={"not": "a number"}),
        ],
    }
    return pods, objects


def _outcome(classes: list[dict[str, Any]]) -> tuple[set[str], dict[str, tuple[Status, str, str]]]:
    pods, objects = _world(classes)
    planned = plan_pass(T0, copy.deepcopy(NODES), pods, objects, _all_schedulers())
    bound = {b.pod_key for b in planned.bindings()}
    pending = {
        k: (r.status, r.reason, r.message)
        for _, res in planned.results
        for r in res.pending
        for k in r.pod_keys
    }
    return bound, pending


def test_each_broken_object_holds_back_only_its_own_pods() -> None:
    bound, pending = _outcome([GOOD_CLASS, BAD_CLASS])
    good = {"ml/plain", "ml/cos-0", "ml/cos-1", "ml/vgood-0", "ml/vgood-1", "ml/kgood-0", "ml/kgood-1"}
    assert good <= bound
    assert not bound & {k for k in pending}
    assert pending["ml/plain-bad"][:2] == (Status.ERROR, INVALID_POD)
    assert "invalid literal" in pending["ml/plain-bad"][2]
    assert pending["ml/cosbad-0"][:2] == (Status.ERROR, "InvalidPodGroup")
    assert "PodGroup ml/cosbad is malformed" in pending["ml/cosbad-0"][2]
    assert pending["ml/vbad-0"][2] == "PriorityClass urgent: value must be an integer, got 'high'"
    assert "PodGroup ml/vmal is malformed" in pending["ml/vmal-1"][2]
    assert pending["ml/kbad-0"][1:] == ("InvalidPriorityClass", BAD_CLASS_MESSAGE)
    assert pending["ml/kmal-1"][1] == "InvalidPodGroup"


BAD_CLASS_MESSAGE = "PriorityClass urgent: value must be an integer, got 'high'"


def test_without_the_broken_class_the_same_jobs_schedule() -> None:
    bound, _ = _outcome([GOOD_CLASS, {"metadata": {"name": "urgent"}, "value": 1000}])
    assert {"ml/vbad-0", "ml/vbad-1", "ml/kbad-0", "ml/kbad-1"} <= bound


class _Crashing:
    name = "crashing"
    watches: tuple[ResourceType, ...] = ()

    def group_of(self, pod: Any) -> None:
        return None

    def cycle(self, view: ClusterView) -> CycleResult:
        raise RuntimeError("boom")


def test_a_crashing_scheduler_leaves_the_others_scheduling() -> None:
    pods = [pod("mine", scheduler="crashing"), pod("theirs")]
    schedulers = {"crashing": _Crashing(), "default-scheduler": DefaultScheduler()}
    planned = plan_pass(T0, [node("n0")], pods, {}, schedulers)  # type: ignore[dict-item]
    assert [b.pod_key for b in planned.bindings()] == ["ml/theirs"]
    [reason] = planned.results[0][1].pending
    assert reason.pod_keys == ("ml/mine",) and reason.status is Status.ERROR
    assert reason.reason == SCHEDULER_ERROR and "RuntimeError: boom" in reason.message
    assert planned.snapshot is not None and planned.snapshot.location("ml/theirs") is not None


def test_a_malformed_queue_holds_back_only_its_jobs() -> None:
    pods = _members("ok", 1, "volcano", vc.GROUP_NAME_ANNOTATION) + _members(
        "stuck", 1, "volcano", vc.GROUP_NAME_ANNOTATION
    )
    groups = [_vc_group("ok", 1, ""), {**_vc_group("stuck", 1, ""), "spec": {"minMember": 1, "queue": "odd"}}]
    odd = {"metadata": {"name": "odd"}, "spec": {"weight": "heavy"}, "status": {"state": "Open"}}
    objects: dict[ResourceType, list[Any]] = {VOLCANO_PODGROUPS: groups, VOLCANO_QUEUES: [odd]}
    planned = plan_pass(T0, NODES, pods, objects, {"volcano": VolcanoScheduler()})
    assert [b.pod_key for b in planned.bindings()] == ["ml/ok-0"]
    [reason] = planned.results[0][1].pending
    assert reason.pod_keys == ("ml/stuck-0",) and "queue odd is malformed" in reason.message
