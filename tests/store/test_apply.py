"""Server-side apply: managedFields in FieldsV1, ownership, conflicts, force and removal of omitted fields."""

from __future__ import annotations

from typing import Any

import pytest

from gangplane.errors import Conflict, Invalid
from gangplane.store import APPLY_PATCH
from gangplane.store.apply import field_set, from_fields_v1, to_fields_v1
from gangplane.store.core import ObjectStore

from .conftest import POD


def config(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "a", "namespace": "default"},
        "spec": spec,
    }


def apply(
    store: ObjectStore, body: dict[str, Any], manager: str, *, force: bool = False, sub: str = ""
) -> Any:
    return store.patch(
        POD, "default", "a", body, APPLY_PATCH, field_manager=manager, force=force, subresource=sub
    )


def managers(obj: dict[str, Any]) -> dict[str, Any]:
    return {e["manager"]: e for e in obj["metadata"].get("managedFields", [])}


def test_fields_v1_encoding_matches_kubernetes() -> None:
    obj = {"spec": {"replicas": 1, "containers": [{"name": "x", "image": "i"}], "labels": {}}}
    tree = to_fields_v1(field_set(obj))
    assert tree == {
        "f:spec": {
            "f:replicas": {},
            "f:labels": {},
            "f:containers": {'k:{"name":"x"}': {".": {}, "f:name": {}, "f:image": {}}},
        }
    }
    assert from_fields_v1(tree) == field_set(obj)


def test_apply_creates_and_records_the_manager(store: ObjectStore) -> None:
    created = apply(store, config(containers=[{"name": "c", "image": "i:1"}]), "alice")
    entry = managers(created)["alice"]
    assert entry["operation"] == "Apply" and entry["fieldsType"] == "FieldsV1" and entry["apiVersion"] == "v1"
    assert entry["time"] == "2026-01-01T00:00:00Z"
    assert entry["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"c"}']["f:image"] == {}
    assert created["metadata"]["uid"] and created["metadata"]["generation"] == 1


def test_reapply_same_config_is_a_noop(store: ObjectStore) -> None:
    first = apply(store, config(nodeName="n"), "alice")
    assert (
        apply(store, config(nodeName="n"), "alice")["metadata"]["resourceVersion"]
        == first["metadata"]["resourceVersion"]
    )


def test_conflict_with_another_applier_lists_fields_and_managers(store: ObjectStore) -> None:
    apply(store, config(nodeName="n1", priority=1), "alice")
    with pytest.raises(Conflict) as info:
        apply(store, config(nodeName="n2", priority=2), "bob")
    assert info.value.code == 409
    assert sorted(c.path for c in info.value.causes) == [".spec.nodeName", ".spec.priority"]
    assert all('"alice"' in c.detail for c in info.value.causes)
    assert store.get(POD, "default", "a")["spec"]["nodeName"] == "n1"


def test_same_value_is_shared_ownership_not_conflict(store: ObjectStore) -> None:
    apply(store, config(nodeName="n1"), "alice")
    shared = apply(store, config(nodeName="n1"), "bob")
    assert set(managers(shared)) == {"alice", "bob"}


def test_force_transfers_ownership(store: ObjectStore) -> None:
    apply(store, config(nodeName="n1", priority=1), "alice")
    forced = apply(store, config(nodeName="n2"), "bob", force=True)
    assert forced["spec"]["nodeName"] == "n2"
    assert from_fields_v1(managers(forced)["alice"]["fieldsV1"]) == {("f:spec", "f:priority")}
    assert ("f:spec", "f:nodeName") in from_fields_v1(managers(forced)["bob"]["fieldsV1"])


def test_omitted_fields_are_removed_unless_someone_else_owns_them(store: ObjectStore) -> None:
    apply(
        store,
        config(nodeName="n1", priority=1, containers=[{"name": "c", "image": "i"}, {"name": "d"}]),
        "alice",
    )
    apply(store, config(priority=1), "bob")
    after = apply(store, config(containers=[{"name": "c", "image": "i"}]), "alice")
    assert "nodeName" not in after["spec"]
    assert after["spec"]["priority"] == 1
    assert [c["name"] for c in after["spec"]["containers"]] == ["c"]


def test_keyed_list_items_from_two_appliers_merge(store: ObjectStore) -> None:
    apply(store, config(containers=[{"name": "main", "image": "m"}]), "alice")
    both = apply(store, config(containers=[{"name": "side", "image": "s"}]), "bob")
    assert [c["name"] for c in both["spec"]["containers"]] == ["main", "side"]
    alone = apply(store, config(containers=[]), "bob")
    assert [c["name"] for c in alone["spec"]["containers"]] == ["main"]


def test_update_manager_owns_changed_fields_and_causes_conflicts(store: ObjectStore) -> None:
    apply(store, config(nodeName="n1"), "alice")
    patched = store.patch(POD, "default", "a", {"spec": {"nodeName": "n9"}}, "merge", field_manager="ctrl")
    entry = managers(patched)["ctrl"]
    assert entry["operation"] == "Update" and entry["fieldsV1"] == {"f:spec": {"f:nodeName": {}}}
    assert "alice" not in managers(patched)
    with pytest.raises(Conflict):
        apply(store, config(nodeName="n1", priority=3), "bob")


def test_apply_status_subresource(store: ObjectStore) -> None:
    apply(store, config(nodeName="n1"), "alice")
    body = config() | {"status": {"phase": "Running"}}
    after = apply(store, body, "kubelet", sub="status")
    assert after["status"] == {"phase": "Running"} and after["spec"]["nodeName"] == "n1"
    entry = managers(after)["kubelet"]
    assert entry["subresource"] == "status" and entry["fieldsV1"] == {"f:status": {"f:phase": {}}}
    assert apply(store, config(nodeName="n1") | {"status": {"phase": "X"}}, "alice")["status"] == {
        "phase": "Running"
    }


def test_apply_labels_are_owned_fields(store: ObjectStore) -> None:
    body = config()
    body["metadata"]["labels"] = {"a": "1", "b": "2"}
    apply(store, body, "alice")
    body["metadata"]["labels"] = {"a": "1"}
    assert apply(store, body, "alice")["metadata"]["labels"] == {"a": "1"}


@pytest.mark.parametrize(
    ("body", "manager"),
    [
        pytest.param(config(), "", id="no-manager"),
        pytest.param({"metadata": {"name": "other", "namespace": "default"}}, "m", id="name-mismatch"),
        pytest.param("- just\n- a list\n", "m", id="not-an-object"),
    ],
)
def test_apply_rejects(store: ObjectStore, body: Any, manager: str) -> None:
    with pytest.raises(Invalid):
        store.patch(POD, "default", "a", body, APPLY_PATCH, field_manager=manager)


def test_apply_accepts_yaml_text(store: ObjectStore) -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: default}\nspec: {nodeName: y}\n"
    assert store.patch(POD, "default", "a", text, APPLY_PATCH, field_manager="m")["spec"]["nodeName"] == "y"
