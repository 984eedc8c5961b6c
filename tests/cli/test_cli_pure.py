"""The pure parts of the kubectl-style CLI: kind resolution, table layout, manifest order, apply verbs,
TrainJob summaries, describe text and the plain run view."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from gangplane.cli import describe, jobstatus, jsonpath, kinds, manifests, printers
from gangplane.cli.jobstatus import COMPLETE, FAILED, PENDING, RUNNING, SUSPENDED, summarize
from gangplane.cli.logstream import prefix_for, split_lines
from gangplane.cli.objects import apply_verb
from gangplane.cli.runview import PlainView, status_lines
from gangplane.errors import ManifestError
from gangplane.store import catalog


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("trainjobs", catalog.TRAINJOBS),
        ("trainjob", catalog.TRAINJOBS),
        ("TrainJob", catalog.TRAINJOBS),
        ("trainjobs.trainer.kubeflow.org", catalog.TRAINJOBS),
        ("trainjob.v1alpha1.trainer.kubeflow.org", catalog.TRAINJOBS),
        ("po", catalog.PODS),
        ("pods", catalog.PODS),
        ("cq", catalog.CLUSTER_QUEUES),
        ("pg", catalog.COSCHEDULING_PODGROUPS),
        ("podgroups.scheduling.volcano.sh", catalog.VOLCANO_PODGROUPS),
        ("pg.scheduling.run.ai", catalog.KAI_PODGROUPS),
        ("queues", catalog.VOLCANO_QUEUES),  # a plural beats Kueue's short name "queues"
        ("lq", catalog.LOCAL_QUEUES),
        ("clustertrainingruntimes", catalog.CLUSTER_TRAINING_RUNTIMES),
    ],
)
def test_resolve_kind(text: str, expected: Any) -> None:
    assert kinds.resolve_kind(text) == expected


@pytest.mark.parametrize("text", ["widgets", "trainjobs.example.com", "pods.v2"])
def test_unknown_kind_says_so(text: str) -> None:
    with pytest.raises(kinds.UnknownKind, match=f'resource type "{text}"'):
        kinds.resolve_kind(text)


R = kinds.Request


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["trainjob", "a", "b"], [R(catalog.TRAINJOBS, ("a", "b"))]),
        (["trainjob/a", "trainjob/b"], [R(catalog.TRAINJOBS, ("a", "b"))]),
        (["trainjob/a", "po/b", "trainjobs/c"], [R(catalog.TRAINJOBS, ("a",)), R(catalog.PODS, ("b",)),
                                          R(catalog.TRAINJOBS, ("c",))]),
        (["pods"], [R(catalog.PODS)]),
        (["trainjobs,pods"], [R(catalog.TRAINJOBS), R(catalog.PODS)]),
        (["trainjobs,po,pods", "x"], [R(catalog.TRAINJOBS, ("x",)), R(catalog.PODS, ("x",))]),
        (["all"], [R(catalog.PODS), R(catalog.SERVICES), R(catalog.JOBS)]),
        (["trainjobs,all"], [R(catalog.TRAINJOBS), R(catalog.PODS), R(catalog.SERVICES), R(catalog.JOBS)]),
    ],
)  # fmt: skip
def test_parse_resources_like_kubectl(args: list[str], expected: list[kinds.Request]) -> None:
    assert kinds.parse_resources(args) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "you must specify the type of resource to get"),
        (["pod/a", "b"], "no need to specify a resource type as a separate argument"),
        (["pod/"], "must have a single resource and name"),
        (["pods,widgets"], 'the server doesn\'t have a resource type "widgets"'),
    ],
)
def test_parse_resources_rejects_with_kubectls_words(args: list[str], message: str) -> None:
    with pytest.raises(kinds.UnknownKind, match=re.escape(message)):
        kinds.parse_resources(args)


DOC = {
    "kind": "List",
    "items": [
        {"metadata": {"name": "a", "labels": {"x.io/y": "1"}},
         "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Done", "status": "False"}]}},
        {"metadata": {"name": "b"}, "spec": {"n": 3, "tags": ["p", "q"]}},
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{.items[*].metadata.name}", "a b"),
        (r'{range .items[*]}{.metadata.name}{"\t"}{.spec.n}{"\n"}{end}', "a\t\nb\t3\n"),
        ("{range .items}{.metadata.name},{end}", "a,b,"),
        ('{.items[0].status.conditions[?(@.type=="Ready")].status}', "True"),
        ("{.items[?(@.spec.n>2)].metadata.name}", "b"),
        ("{.items[0].metadata.labels['x\\.io/y']}{.items[0].metadata.labels['x.io/y']}", "1"),
        ("{..name}", "a b"),
        ("n={.items[1].spec.n} tags={.items[1].spec.tags}", 'n=3 tags=["p", "q"]'),
        ("{.items[-1:].metadata.name}", "b"),
        ("{.missing.key}", ""),
    ],
)
def test_jsonpath_templates(template: str, expected: str) -> None:
    assert jsonpath.render(template, DOC) == expected


def test_output_formats_parse_and_reject_like_kubectl() -> None:
    assert printers.parse_output("wide").output == printers.Output.WIDE
    assert printers.parse_output("jsonpath={.a}").template == "{.a}"
    for bad in ("xml", "jsonpath", "wide=x", "custom-columns=NAME"):
        with pytest.raises(printers.OutputError):
            printers.parse_output(bad)
    with pytest.raises(jsonpath.JsonPathError):
        printers.parse_output("jsonpath={range .items[*]}{.a}")
    objs = DOC["items"]
    rows = printers.custom_column_rows("NAME:.metadata.name,TAGS:.spec.tags[*]", objs)  # type: ignore[arg-type]
    assert rows == ["NAME   TAGS", "a      <none>", "b      p,q"]


TABLE = {
    "columnDefinitions": [
        {"name": "Name", "priority": 0},
        {"name": "State", "priority": 0},
        {"name": "Suspended", "priority": 1},
        {"name": "Age", "priority": 0},
    ],
    "rows": [
        {"cells": ["mnist", "Complete", "False", "5m"], "object": {"metadata": {"namespace": "team-a"}}},
        {"cells": ["a-much-longer-name", "", "True", "10s"], "object": {"metadata": {"namespace": "b"}}},
    ],
}


def test_table_layout_like_kubectl() -> None:
    assert printers.format_table(TABLE).splitlines() == [
        "NAME                 STATE      AGE",
        "mnist                Complete   5m",
        "a-much-longer-name   <none>     10s",
    ]


def test_wide_table_with_namespaces_and_no_headers() -> None:
    assert printers.format_table(TABLE, wide=True, with_namespace=True, headers=False).splitlines() == [
        "team-a   mnist                Complete   False   5m",
        "b        a-much-longer-name   <none>     True    10s",
    ]


def test_object_name_and_dump_hide_managed_fields() -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "managedFields": [{"manager": "m"}]}}
    assert printers.object_name(catalog.PODS, obj) == "pod/p"
    assert (
        printers.object_name(catalog.TRAINJOBS, {"metadata": {"name": "j"}})
        == "trainjob.trainer.kubeflow.org/j"
    )
    assert "managedFields" not in printers.dump(obj, printers.Output.YAML)
    listed = printers.dump(printers.as_list([obj]), printers.Output.JSON)
    assert '"kind": "List"' in listed and "managedFields" not in listed


def _doc(
    kind: str, name: str, api_version: str = "trainer.kubeflow.org/v1alpha1"
) -> tuple[str, dict[str, Any]]:
    return "f.yaml", {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}


def test_manifests_apply_runtimes_before_trainjobs_and_delete_in_reverse() -> None:
    docs = [
        _doc("TrainJob", "job"),
        _doc("ConfigMap", "cm", "v1"),
        _doc("ClusterTrainingRuntime", "rt"),
        _doc("Namespace", "ns", "v1"),
        _doc("ClusterQueue", "cq", "kueue.x-k8s.io/v1beta1"),
    ]
    resolved = manifests.resolve(docs)
    assert [m.name for m in manifests.apply_order(resolved)] == ["ns", "cq", "rt", "cm", "job"]
    assert [m.name for m in manifests.delete_order(resolved)] == ["job", "cm", "rt", "cq", "ns"]
    # sent to the served v1beta1 endpoint, which converts it to the stored v1beta2, as kubectl does
    assert resolved[4].rt == dataclasses.replace(catalog.CLUSTER_QUEUES, version="v1beta1")


def test_manifest_namespaces() -> None:
    job, runtime = manifests.resolve([_doc("TrainJob", "job"), _doc("ClusterTrainingRuntime", "rt")])
    assert job.namespace("team") == "team" and job.placed("team")["metadata"]["namespace"] == "team"
    assert runtime.namespace("team") == "" and "namespace" not in runtime.placed("team")["metadata"]


@pytest.mark.parametrize(
    "doc",
    [
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {}},
    ],
)
def test_manifest_errors(doc: dict[str, Any]) -> None:
    with pytest.raises(ManifestError):
        manifests.resolve([("f.yaml", doc)])


def test_apply_verb() -> None:
    def obj(rv: str, time: str, value: str) -> dict[str, Any]:
        managed = [{"manager": "gangplane", "operation": "Apply", "time": time}]
        return {"metadata": {"resourceVersion": rv, "managedFields": managed}, "data": {"k": value}}

    before = obj("5", "2026-01-01T00:00:00Z", "a")
    assert apply_verb(None, before) == "created"
    assert apply_verb(before, obj("5", "2026-01-01T00:00:00Z", "a")) == "unchanged"
    assert apply_verb(before, obj("6", "2026-01-01T00:00:09Z", "a")) == "unchanged"  # only bookkeeping moved
    assert apply_verb(before, obj("6", "2026-01-01T00:00:09Z", "b")) == "configured"


# ---------------------------------------------------------------- TrainJob summaries


def trainjob(*conditions: tuple[str, str, str], nodes: int = 2) -> dict[str, Any]:
    conds = [{"type": t, "status": s, "message": m} for t, s, m in conditions]
    return {
        "metadata": {"name": "mnist"},
        "spec": {"trainer": {"numNodes": nodes}},
        "status": {"conditions": conds},
    }


def pod(
    index: int, phase: str = "Pending", node: str = "", unschedulable: str = "", **status: Any
) -> dict[str, Any]:
    labels = {
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "batch.kubernetes.io/job-completion-index": str(index),
    }
    conditions = []
    if unschedulable:
        conditions.append(
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": unschedulable}
        )
    return {
        "metadata": {"name": f"mnist-node-0-{index}", "labels": labels},
        "spec": {"containers": [{"name": "node"}]} | ({"nodeName": node} if node else {}),
        "status": {"phase": phase, "conditions": conditions, **status},
    }


@pytest.mark.parametrize(
    ("job", "pods", "phase", "exit_code", "gang"),
    [
        pytest.param(trainjob(), [], PENDING, None, False, id="no-pods"),
        pytest.param(trainjob(), [pod(0, node="n1"), pod(1)], PENDING, None, False, id="half-bound"),
        pytest.param(
            trainjob(),
            [pod(0, "Running", "n1"), pod(1, "Pending", "n2")],
            PENDING,
            None,
            True,
            id="bound-starting",
        ),
        pytest.param(
            trainjob(), [pod(0, "Running", "n1"), pod(1, "Running", "n2")], RUNNING, None, True, id="running"
        ),
        pytest.param(
            trainjob(nodes=3),
            [pod(0, "Running", "n1"), pod(1, "Running", "n2")],
            RUNNING,
            None,
            False,
            id="short-gang",
        ),
        pytest.param(trainjob(("Suspended", "True", "queued")), [], SUSPENDED, None, False, id="suspended"),
        pytest.param(
            trainjob(("Complete", "True", "done")),
            [pod(0, "Succeeded", "n1")],
            COMPLETE,
            0,
            False,
            id="complete",
        ),
        pytest.param(
            trainjob(("Complete", "True", ""), ("Failed", "True", "boom")),
            [],
            FAILED,
            1,
            False,
            id="failed-wins",
        ),
        pytest.param(trainjob(("Complete", "False", "")), [], PENDING, None, False, id="false-condition"),
    ],
)
def test_summary_phase_exit_code_and_gang(
    job: dict[str, Any], pods: list[dict[str, Any]], phase: str, exit_code: int | None, gang: bool
) -> None:
    summary = summarize(job, pods)
    assert (summary.phase, summary.exit_code, summary.gang_formed) == (phase, exit_code, gang)
    assert summary.finished is (exit_code is not None)


def test_summary_explains_why_it_waits() -> None:
    waiting = trainjob(("Suspended", "False", "resumed"), ("GangPending", "True", "waiting for 2 pods"))
    message = "0/3 nodes are available: 3 Insufficient cpu"
    summary = summarize(waiting, [pod(1, unschedulable=message), pod(0, unschedulable=message)])
    # each distinct message once, with the pods it concerns
    assert summary.reasons == ("waiting for 2 pods", f"{message} (pods mnist-node-0-0, mnist-node-0-1)")
    assert [n.pod for n in summary.nodes] == ["mnist-node-0-0", "mnist-node-0-1"]  # by completion index
    assert summary.gang_line() == "0/2 pods bound"  # no PodGroup: pods scheduled one by one, no gang
    # the waiting condition already quotes the scheduler: the pods join that line instead of repeating it
    quoted = trainjob(("gangplane.dev/Waiting", "True", f"2 of 2 pods unschedulable: {message}"))
    grouped = [pod(i, unschedulable=message) for i in (0, 1)]
    for p in grouped:
        p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "mnist"
    summary = summarize(quoted, grouped)
    assert summary.reasons == (f"2 of 2 pods unschedulable: {message} (pods mnist-node-0-0, mnist-node-0-1)",)
    assert summary.gang and summary.gang_line() == "waiting: 0/2 pods bound"
    failed = summarize(trainjob(("Failed", "True", "node-0 exited 3")), [])
    assert failed.reasons == ("node-0 exited 3",)


def test_pod_group_keys_agree_with_the_api_modules() -> None:
    from gangplane.api.scheduling import coscheduling, kai, volcano

    assert jobstatus.POD_GROUP_LABELS == (coscheduling.POD_GROUP_LABEL, coscheduling.LEGACY_POD_GROUP_LABEL)
    assert jobstatus.POD_GROUP_ANNOTATIONS == (volcano.GROUP_NAME_ANNOTATION, kai.POD_GROUP_ANNOTATION)


def test_node_status_reads_container_states() -> None:
    crashed = pod(
        0, "Running", "n1", containerStatuses=[{"state": {"waiting": {"reason": "CrashLoopBackOff"}}}]
    )
    assert jobstatus.node_status(crashed).reason == "CrashLoopBackOff"
    done = pod(0, "Succeeded", "n1", containerStatuses=[{"state": {"terminated": {"reason": "Completed"}}}])
    assert jobstatus.node_status(done).reason == ""


def test_plain_view_prints_only_changes() -> None:
    printed: list[str] = []
    view = PlainView(printed.append)
    view.status(summarize(trainjob(), [pod(0), pod(1)]))
    view.status(summarize(trainjob(), [pod(0), pod(1)]))
    assert printed == status_lines(summarize(trainjob(), [pod(0), pod(1)]))
    printed.clear()
    view.status(summarize(trainjob(), [pod(0, "Running", "n1"), pod(1)]))
    assert printed == ["trainjob/mnist 1/2 pods bound", "  pod/mnist-node-0-0 Running on n1"]
    view.log("[mnist-node-0-0]", "hello")
    assert printed[-1] == "[mnist-node-0-0] hello"


# ---------------------------------------------------------------- describe and logs


def test_describe_fields_conditions_and_events() -> None:
    obj = {
        "metadata": {"name": "mnist", "namespace": "default", "labels": {"app": "x"},
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"runtimeRef": {"name": "torch"}, "trainer": {"numNodes": 2, "command": ["python", "-c", "1"]}},
        "status": {"conditions": [{"type": "Complete", "status": "True", "reason": "JobSetCompleted",
                                   "message": "done", "lastTransitionTime": "2026-01-01T00:01:00Z"}]},
    }  # fmt: skip
    events = [{"type": "Normal", "reason": "Created", "message": "made", "source": {"component": "trainer"},
               "lastTimestamp": "2026-01-01T00:00:30Z"}]  # fmt: skip
    text = describe.describe(catalog.TRAINJOBS, obj, events, now=1_767_225_720.0)
    lines = text.splitlines()
    assert "Created:      2026-01-01T00:00:00Z (2m ago)" in lines
    assert "  Runtime Ref:" in lines and "    Name:  torch" in lines
    assert "      - python" in lines and "    Num Nodes:  2" in lines
    assert lines[lines.index("Conditions:") + 2].split() == [
        "Complete",
        "True",
        "JobSetCompleted",
        "60s",
        "done",
    ]
    assert lines[lines.index("Events:") + 2].split() == ["Normal", "Created", "90s", "trainer", "made"]


@pytest.mark.parametrize(("key", "shown"), [("runtimeRef", "Runtime Ref"), ("numProcPerNode", "Num Proc Per Node"),
                                            ("app.kubernetes.io/name", "app.kubernetes.io/name")])  # fmt: skip
def test_title(key: str, shown: str) -> None:
    assert describe.title(key) == shown


def test_log_lines_split_across_chunks_and_prefixes() -> None:
    lines, rest = split_lines(b"par", b"tial\nnext\nunfin")
    assert (lines, rest) == (["partial", "next"], b"unfin")
    one = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "main"}]}}
    two = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    assert (prefix_for(one, "main"), prefix_for(two, "b")) == ("[p]", "[p/b]")
