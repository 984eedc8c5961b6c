"""The pure parts: the served-resource table (checked against the upstream CRDs), discovery, OpenAPI, tables,
query parsing and log path confinement."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from crdschema import SHARED_DIR, load_yaml
from gangplane.errors import ApiError
from gangplane.server import discovery, logs, openapi, query, tls
from gangplane.server.lifecycle import kubeconfig
from gangplane.server.resources import RESOURCE_TYPES, default_registry
from gangplane.server.tables import human_duration, last_true_condition, trainjob_reason, trainjob_state
from gangplane.store.base import Propagation

CRDS = SHARED_DIR / "crds" if SHARED_DIR is not None else None
REGISTRY = default_registry()


def _crds() -> list[dict[str, Any]]:
    if CRDS is None or not CRDS.is_dir():
        pytest.skip("upstream CRDs (shared/crds) not found")
    return [load_yaml(p.read_text()) for p in sorted(CRDS.glob("*.yaml"))]


def test_every_upstream_crd_is_served_with_its_scope_short_names_and_status() -> None:
    crds = _crds()
    assert len(crds) == 17
    for crd in crds:
        spec, names = crd["spec"], crd["spec"]["names"]
        for version in (v for v in spec["versions"] if v.get("served")):
            served = REGISTRY.find(spec["group"], version["name"], names["plural"])
            assert served is not None, (spec["group"], version["name"], names["plural"])
            rt = served.rt
            assert rt.kind == names["kind"]
            assert rt.namespaced == (spec["scope"] == "Namespaced"), rt
            assert rt.short_names == tuple(names.get("shortNames") or ()), rt
            assert rt.categories == tuple(names.get("categories") or ()), rt
            assert rt.has_status == ("status" in (version.get("subresources") or {})), rt


def test_kueue_v1beta1_is_an_alias_of_v1beta2_storage() -> None:
    served = REGISTRY.find("kueue.x-k8s.io", "v1beta1", "clusterqueues")
    assert served is not None and served.is_alias and served.storage.version == "v1beta2"
    kueue = next(g for g in REGISTRY.groups() if g.name == "kueue.x-k8s.io")
    assert kueue.versions == ("v1beta2", "v1beta1")


def test_resource_types_are_unique() -> None:
    keys = [(rt.group, rt.version, rt.plural) for rt in RESOURCE_TYPES]
    assert len(keys) == len(set(keys)) == 31


def test_core_resource_list_has_subresources_and_short_names() -> None:
    doc = discovery.api_resource_list(REGISTRY, "", "v1")
    by_name = {r["name"]: r for r in doc["resources"]}
    assert doc["groupVersion"] == "v1"
    assert by_name["pods"]["shortNames"] == ["po"] and by_name["pods"]["categories"] == ["all"]
    assert by_name["pods/log"]["verbs"] == ["get"]
    assert by_name["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert "configmaps/status" not in by_name
    assert by_name["namespaces"]["namespaced"] is False
    assert set(discovery.VERBS) <= set(by_name["configmaps"]["verbs"])


def test_group_list_prefers_storage_versions() -> None:
    groups = {g["name"]: g for g in discovery.api_group_list(REGISTRY)["groups"]}
    assert "" not in groups
    assert groups["kueue.x-k8s.io"]["preferredVersion"]["version"] == "v1beta2"
    assert groups["batch"]["versions"] == [{"groupVersion": "batch/v1", "version": "v1"}]


def test_openapi_patch_operations_declare_field_validation_for_every_kind() -> None:
    root = openapi.root_document(REGISTRY)
    assert "api/v1" in root["paths"] and "apis/trainer.kubeflow.org/v1alpha1" in root["paths"]
    for group, version in {(s.rt.group, s.rt.version) for s in REGISTRY.served}:
        doc = openapi.group_version_document(REGISTRY.in_group_version(group, version))
        patched = {op["x-kubernetes-group-version-kind"]["kind"]: op
                   for path in doc["paths"].values() if (op := path.get("patch"))}  # fmt: skip
        for served in REGISTRY.in_group_version(group, version):
            op = patched[served.rt.kind]
            assert "fieldValidation" in [p["name"] for p in op["parameters"]]
            assert "application/strategic-merge-patch+json" not in op["requestBody"]["content"]
            assert openapi.schema_name(served.rt) in doc["components"]["schemas"]


def test_openapi_hash_changes_with_content() -> None:
    a = openapi.group_version_document(REGISTRY.in_group_version("", "v1"))
    b = openapi.group_version_document(REGISTRY.in_group_version("batch", "v1"))
    assert openapi.document_hash(a) != openapi.document_hash(b)
    assert openapi.schema_name(
        REGISTRY.in_group_version("trainer.kubeflow.org", "v1alpha1")[0].rt
    ).startswith("org.kubeflow.trainer.v1alpha1.")


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (200, "3m20s"), (900, "15m"),
     (3 * 3600 + 5, "3h"), (5 * 3600 + 1800, "5h30m"), (30 * 3600, "30h"), (3 * 86400 + 4 * 3600, "3d4h"),
     (10 * 86400, "10d"), (3 * 365 * 86400 + 86400, "3y1d"), (9 * 365 * 86400, "9y")],
)  # fmt: skip
def test_human_duration_matches_kubernetes(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown


def _c(kind: str, reason: str = "", status: str = "True") -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason}


@pytest.mark.parametrize(
    ("conditions", "state", "reason"),
    [([], "Running", ""),
     ([_c("gangplane.dev/Waiting", "PodsUnschedulable")], "Waiting", "PodsUnschedulable"),
     ([_c("gangplane.dev/Waiting", "QueuedByKueue"), _c("Suspended", "Suspended")], "Queued", "QueuedByKueue"),
     ([_c("gangplane.dev/Waiting", "Suspended"), _c("Suspended", "Suspended")], "Suspended", "Suspended"),
     ([_c("Suspended", "Resumed", "False")], "Running", ""),
     ([_c("Complete", "JobsCompleted")], "Complete", "JobsCompleted"),
     ([_c("Complete", "", "False"), _c("Failed", "DeadlineExceeded")], "Failed", "DeadlineExceeded"),
     ([_c("Created", "Created")], "Created", "")],
)  # fmt: skip
def test_trainjob_state_is_a_word_and_the_reason_a_wide_column(
    conditions: list[dict[str, str]], state: str, reason: str
) -> None:
    obj = {"status": {"conditions": conditions}}
    assert (trainjob_state(obj), trainjob_reason(obj)) == (state, reason)


@pytest.mark.parametrize(
    ("conditions", "state"),
    [([], ""), ([{"type": "Created", "status": "True"}, {"type": "Suspended", "status": "False"}], "Created"),
     ([{"type": "Created", "status": "True"}, {"type": "Complete", "status": "True"}], "Complete")],
)  # fmt: skip
def test_trainjob_state_is_the_last_true_condition(conditions: list[dict[str, str]], state: str) -> None:
    assert last_true_condition({"status": {"conditions": conditions}}) == state


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("pods", ("pods", None, "", "")),
        ("namespaces/ns1/pods", ("pods", "ns1", "", "")),
        ("namespaces/ns1/pods/p/log", ("pods", "ns1", "p", "log")),
        ("namespaces/ns1", ("namespaces", None, "ns1", "")),
        ("namespaces/ns1/status", ("namespaces", None, "ns1", "status")),
        ("nodes/n1/status", ("nodes", None, "n1", "status")),
        ("namespaces/ns1/configmaps/c/status", None),
        ("namespaces/ns1/nodes", None),
        ("configmaps/a/log", None),
        ("widgets", None),
    ],
)
def test_parse_target(path: str, expected: tuple[str, str | None, str, str] | None) -> None:
    target = query.parse_target(REGISTRY, "", "v1", path.split("/"))
    got = (
        None
        if target is None
        else (target.served.rt.plural, target.namespace, target.name, target.subresource)
    )
    assert got == expected


@pytest.mark.parametrize(
    ("params", "body", "policy"),
    [
        ({}, {}, Propagation.BACKGROUND),
        ({}, {"propagationPolicy": "Foreground"}, Propagation.FOREGROUND),
        ({"propagationPolicy": "Orphan"}, {"propagationPolicy": "Foreground"}, Propagation.ORPHAN),
        ({}, {"orphanDependents": True}, Propagation.ORPHAN),
        ({"orphanDependents": "false"}, {"orphanDependents": True}, Propagation.BACKGROUND),
    ],
)
def test_delete_params(params: dict[str, str], body: dict[str, Any], policy: Propagation) -> None:
    assert query.delete_params(params, body).propagation is policy


def test_delete_preconditions_pass_through() -> None:
    pre = query.delete_params({}, {"preconditions": {"uid": "u1", "resourceVersion": None}}).preconditions
    assert pre == {"uid": "u1"}


@pytest.mark.parametrize(
    ("params", "body", "grace"),
    [
        ({}, {}, None),
        ({}, {"gracePeriodSeconds": 0}, 0),  # kubectl delete --grace-period=0 --force
        ({"gracePeriodSeconds": "5"}, {"gracePeriodSeconds": 0}, 5),  # the query wins, as for the policy
        ({}, {"gracePeriodSeconds": -1}, -1),  # the store counts it as 1
    ],
)
def test_delete_grace_period(params: dict[str, str], body: dict[str, Any], grace: int | None) -> None:
    assert query.delete_params(params, body).grace_period == grace


@pytest.mark.parametrize(
    "body", [{"gracePeriodSeconds": "x"}, {"gracePeriodSeconds": True}, {"gracePeriodSeconds": 1.5}]
)
def test_delete_grace_period_must_be_an_integer(body: dict[str, Any]) -> None:
    with pytest.raises(ApiError) as raised:
        query.delete_params({}, body)
    assert raised.value.code == 400


@pytest.mark.parametrize(
    ("accept", "table"),
    [
        (
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io",
            True,
        ),
        ("application/json", False),
        ("application/json;as=Table;g=other", False),
        ("", False),
    ],
)
def test_wants_table(accept: str, table: bool) -> None:
    assert query.wants_table(accept) is table


def test_split_field_selector_keeps_store_fields_and_matches_event_fields() -> None:
    kept, terms = query.split_field_selector("metadata.name=a,involvedObject.name=p,type!=Normal")
    assert kept == "metadata.name=a"
    event = {"involvedObject": {"name": "p"}, "type": "Warning"}
    assert all(t.matches(event) for t in terms)
    assert not all(t.matches({"involvedObject": {"name": "q"}}) for t in terms)


@pytest.mark.parametrize("bad", ["application/vnd.kubernetes.protobuf", "text/plain"])
def test_only_json_bodies(bad: str) -> None:
    with pytest.raises(ApiError) as err:
        query.check_body_type(bad)
    assert err.value.code == 415


def test_tail() -> None:
    assert logs.tail(b"a\nb\nc\n", 2) == b"b\nc\n"
    assert logs.tail(b"a\nb\nc", 1) == b"c"
    assert logs.tail(b"a\n", None) == b"a\n"
    assert logs.tail(b"a\n", 5) == b"a\n"


def test_read_log_tails_large_files_from_the_end(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(30_000)))
    data, offset = logs.read_log(path, 2)
    assert data == b"line 29998\nline 29999\n" and offset == path.stat().st_size


@pytest.mark.parametrize(
    ("namespace", "pod", "container"),
    [("default", "..", "main"), ("default", "p", "../x"), ("a/b", "p", "main"), ("default", "P", "main"),
     ("default", "p", "")],
)  # fmt: skip
def test_log_path_rejects_names_that_could_escape(namespace: str, pod: str, container: str) -> None:
    with pytest.raises(ApiError):
        logs.log_path(Path("/tmp/gp-logs"), namespace, pod, container)


def test_log_path_layout(tmp_path: Path) -> None:
    assert logs.log_path(tmp_path, "ns", "p-0", "main") == tmp_path.resolve() / "ns" / "p-0" / "main.log"


def test_certificate_covers_loopback_and_the_host() -> None:
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    cert, key = tls.make_certificate("10.1.2.3", now)
    assert b"PRIVATE KEY" in key
    assert tls.covers(cert, "10.1.2.3") and tls.covers(cert, "127.0.0.1")
    assert not tls.covers(cert, "10.9.9.9")


def test_kubeconfig_has_server_token_and_ca() -> None:
    config = kubeconfig("https://127.0.0.1:1", "tok", b"PEM")
    assert config["clusters"][0]["cluster"] == {
        "server": "https://127.0.0.1:1",
        "certificate-authority-data": "UEVN",
    }
    assert config["users"][0]["user"] == {"token": "tok"}
    assert config["current-context"] == "gangplane"
