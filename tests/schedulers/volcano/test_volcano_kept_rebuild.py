"""Shortcuts of a kept Volcano session's open that must answer as a parse does: a group whose PodGroup is
as parsed but for its status and whose pods moved (most often a gang this scheduler bound, back with its
pods on their nodes and Running) has only its tasks built again (``reopen._pods_moved``); a job's queue
demand is computed once per what it reads (``kept.demand_inputs``)."""

from __future__ import annotations

from dataclasses import fields, replace
from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.core.classes import priority_classes
from gangplane.schedulers.core.objects import PodInfo, pod_info
from gangplane.schedulers.core.resources import PODS, ResourceIndex
from gangplane.schedulers.volcano import jobs as jb
from gangplane.schedulers.volcano import queues as qs
from gangplane.schedulers.volcano.hypernodes import build_tree
from gangplane.schedulers.volcano.kept import Kept, demand_inputs
from gangplane.schedulers.volcano.memo import Stamping
from gangplane.schedulers.volcano.reopen import _pods_moved
from gangplane.schedulers.volcano.session import _job

GPU = "nvidia.com/gpu"
INDEX = ResourceIndex([GPU])
TREE = build_tree([], [])
CLASSES = priority_classes([{"metadata": {"name": "high"}, "value": 9}])

Obj = dict[str, Any]
Pod = tuple[int, int, str, bool, bool, bool]
# per pod: gpus, priority, role, bound, deleting, succeeded
_pod = st.tuples(
    st.integers(0, 2), st.integers(0, 3), st.sampled_from(["", "ps", "worker"]), *[st.booleans()] * 3
)


def _group(rv: int, phase: str, spec: Obj) -> Obj:
    meta = {"name": "g", "namespace": "ns", "uid": "u", "creationTimestamp": "t0", "resourceVersion": str(rv)}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def _pod_obj(i: int, rv: int, fields: Pod) -> Obj:
    gpus, priority, role, bound, deleting, succeeded = fields
    annotations = {vc.GROUP_NAME_ANNOTATION: "g", **({vc.TASK_SPEC_KEY: role} if role else {})}
    meta: Obj = {"name": f"g-{i}", "namespace": "ns", "uid": f"p{i}", "resourceVersion": str(rv),
                 "annotations": annotations}  # fmt: skip
    if deleting:
        meta["deletionTimestamp"] = "t9"
    requests = {GPU: str(gpus)} if gpus else {}
    spec: Obj = {"schedulerName": "volcano", "priority": priority,
                 "containers": [{"name": "main", "resources": {"requests": requests}}]}  # fmt: skip
    if bound:
        spec["nodeName"] = "n0"
    phase = "Succeeded" if succeeded and bound else "Running" if bound else "Pending"
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def _members(pods: list[tuple[int, int, Pod]]) -> list[tuple[Obj, PodInfo]]:
    objs = [_pod_obj(i, rv, fields) for i, rv, fields in pods]
    return [(obj, pod_info(dict(obj), INDEX, group_of=jb.group_key)) for obj in objs]


def _parse(pg: Obj, members: list[tuple[Obj, PodInfo]]) -> jb.Job:
    view: Any = SimpleNamespace(snapshot=SimpleNamespace(index=INDEX))
    context = (INDEX, tuple(sorted(TREE.tier_names.items())), TREE.root_tier)
    job = _job(view, TREE, pg, members, CLASSES, (Stamping(), "ns/g", context))
    assert isinstance(job, jb.Job)
    return job


def _seen(job: jb.Job) -> list[object]:
    """Every field of a job (a new field is compared too), its objects and tasks' pod infos by identity."""
    seen: list[object] = []
    for field in fields(job):
        value = getattr(job, field.name)
        if field.name == "tasks":
            value = [(id(t.pod), t.status, t.role, t.best_effort) for t in value]
        elif field.name == "obj":
            value = id(value)
        elif isinstance(value, np.ndarray):
            value = (value.dtype, value.tobytes())
        seen.append((field.name, value))
    return seen


@settings(max_examples=300, deadline=None)
@given(
    before=st.lists(_pod, max_size=4),
    after=st.lists(st.tuples(st.integers(0, 5), _pod), max_size=5),
    same_requests=st.booleans(),
    classed=st.booleans(),
    phase=st.sampled_from(["Pending", "Inqueue", "Running"]),
)
def test_a_group_whose_pods_alone_moved_is_built_as_a_parse_builds_it(
    before: list[Pod],
    after: list[tuple[int, Pod]],
    same_requests: bool,
    classed: bool,
    phase: str,
) -> None:
    """Pods bound, finished, deleted, re-prioritised, given another role or request, added or gone: the job
    built from the kept one is the job a parse builds, holding the same pod infos."""
    spec: Obj = {"minMember": 2, "queue": "q", "minResources": {GPU: "2"}, "minTaskMember": {"ps": 1}}
    if classed:
        spec["priorityClassName"] = "high"
    old = _parse(_group(1, "Pending", spec), _members([(i, 10 + i, f) for i, f in enumerate(before)]))
    members = _members(sorted({i: (i, 20 + i, f) for i, f in after}.values()))
    if same_requests:  # the shell's bound pods share their request rows with the pending ones
        rows = {t.pod.key: t.pod.requests for t in old.tasks}
        members = [(pod, _with_rows(info, rows)) for pod, info in members]
    pg = _group(2, phase, spec)
    moved = _pods_moved(old, pg, members, CLASSES, INDEX)
    assert moved is not None
    assert _seen(moved) == _seen(_parse(pg, members))


def _with_rows(info: PodInfo, rows: dict[str, Any]) -> PodInfo:
    row = rows.get(info.key)
    return info if row is None or row.tobytes() != info.requests.tobytes() else replace(info, requests=row)


def test_a_moved_podgroup_spec_or_identity_is_parsed() -> None:
    spec: Obj = {"minMember": 1, "queue": "q"}
    members = _members([(0, 5, (1, 0, "", False, False, False))])
    old = _parse(_group(1, "Pending", spec), members)
    assert _pods_moved(old, _group(2, "Pending", {**spec, "minMember": 2}), members, CLASSES, INDEX) is None
    other = _group(2, "Pending", spec)
    other["metadata"]["uid"] = "v"
    assert _pods_moved(old, other, members, CLASSES, INDEX) is None
    bad = priority_classes([{"metadata": {"name": "high"}, "value": "x"}])
    classed = _parse(_group(1, "Pending", {**spec, "priorityClassName": "other"}), members)
    assert _pods_moved(classed, _group(2, "Pending", {**spec, "priorityClassName": "high"}), members, bad,
                       INDEX) is None  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(groups=st.lists(st.lists(_pod, min_size=1, max_size=3), min_size=1, max_size=3))
def test_a_jobs_demand_is_computed_once_per_what_it_reads(
    groups: list[list[Pod]],
) -> None:
    """Jobs alike in all ``job_demand`` reads get their demand rows from one computation, and each job's
    rows are the ones computed for it alone, over phases, gang minimums, ``minResources`` and pods."""
    computed: list[str] = []

    def demand(job: jb.Job) -> qs.QueueDemand:
        computed.append(job.key)
        return qs.job_demand(job, len(INDEX), INDEX.position(PODS))

    kept, jobs = Kept(), []
    for n, pods in enumerate(groups * 2):  # each group twice: the second time under another name
        members = _members([(i, 10 + i, f) for i, f in enumerate(pods)])
        for phase in ("Pending", "Inqueue", "Running"):
            for minimum in (None, 1, 3):
                for gang in (1, 2):
                    least = {"minResources": {GPU: str(minimum)}} if minimum else {}
                    group = _group(1, phase, {"minMember": gang, **least})
                    group["metadata"]["name"] = f"g{n}-{phase}-{minimum}-{gang}"
                    jobs.append(_parse(group, members))
    for job in jobs:
        kept.put(job, demand)
        alone = qs.job_demand(job, len(INDEX), INDEX.position(PODS))
        rows = np.array((alone.allocated, alone.request, alone.inqueue, alone.elastic))
        assert kept.parsed[job.key].demand.tobytes() == rows.tobytes()
    assert len(computed) == len({demand_inputs(job) for job in jobs}) <= len(jobs) // 2
