"""Conformance: CRUD, identity, optimistic concurrency, generation and the status subresource."""

from __future__ import annotations

import random
from typing import Any

import pytest

from gangplane.errors import AlreadyExists, CauseType, Conflict, FieldError, Forbidden, Invalid, NotFound
from gangplane.store import MemoryStore, Operation, ResourceType
from gangplane.store.core import ObjectStore
from gangplane.store.patch import MERGE_PATCH

from .conftest import CONFIGMAP, JOB, NODE, POD, MakeStore, pod


def test_create_sets_identity_and_get_returns_it(store: ObjectStore) -> None:
    created = store.create(POD, pod("a"))
    meta = created["metadata"]
    assert meta["uid"] and meta["creationTimestamp"] == "2026-01-01T00:00:00Z"
    assert meta["generation"] == 1 and int(meta["resourceVersion"]) > 0
    assert store.get(POD, "default", "a") == created


def test_create_defaults_api_version_and_kind(store: ObjectStore) -> None:
    created = store.create(JOB, {"metadata": {"name": "j", "namespace": "ns"}, "spec": {}})
    assert (created["apiVersion"], created["kind"]) == ("trainer.kubeflow.org/v1alpha1", "TrainJob")


def test_create_twice_is_already_exists(store: ObjectStore) -> None:
    store.create(POD, pod("a"))
    with pytest.raises(AlreadyExists):
        store.create(POD, pod("a"))


def test_same_name_in_other_namespace_or_type_is_distinct(store: ObjectStore) -> None:
    store.create(POD, pod("a", "ns1"))
    store.create(POD, pod("a", "ns2"))
    store.create(JOB, {"metadata": {"name": "a", "namespace": "ns1"}, "spec": {}})
    assert len(store.list(POD).items) == 2


@pytest.mark.parametrize(
    ("rt", "metadata"),
    [
        pytest.param(POD, {"name": "a"}, id="namespaced-without-namespace"),
        pytest.param(NODE, {"name": "n", "namespace": "x"}, id="cluster-scoped-with-namespace"),
        pytest.param(POD, {"namespace": "d"}, id="no-name"),
        pytest.param(POD, {"name": "Bad_Name", "namespace": "d"}, id="bad-name"),
    ],
)
def test_create_rejects_bad_identity(store: ObjectStore, rt: ResourceType, metadata: dict[str, Any]) -> None:
    with pytest.raises(Invalid):
        store.create(rt, {"metadata": metadata})


def test_cluster_scoped_objects_have_empty_namespace_key(store: ObjectStore) -> None:
    store.create(NODE, {"metadata": {"name": "n1"}})
    assert store.get(NODE, "", "n1")["metadata"]["name"] == "n1"
    assert "namespace" not in store.get(NODE, "", "n1")["metadata"]


def test_generate_name_appends_five_characters(store: ObjectStore) -> None:
    first = store.create(POD, {"metadata": {"generateName": "job-", "namespace": "d"}})
    second = store.create(POD, {"metadata": {"generateName": "job-", "namespace": "d"}})
    names = {first["metadata"]["name"], second["metadata"]["name"]}
    assert len(names) == 2 and all(n.startswith("job-") and len(n) == 9 for n in names)


def test_generated_names_and_uids_follow_a_seeded_rng() -> None:
    made = []
    for _ in range(2):
        with_seed = MemoryStore(rng=random.Random(1))
        made.append(with_seed.create(POD, {"metadata": {"generateName": "x-", "namespace": "d"}})["metadata"])
        with_seed.close()
    assert (made[0]["name"], made[0]["uid"]) == (made[1]["name"], made[1]["uid"])


def test_returned_objects_are_copies(store: ObjectStore) -> None:
    created = store.create(POD, pod("a", labels={"x": "1"}))
    created["metadata"]["labels"]["x"] = "mutated"
    got = store.get(POD, "default", "a")
    got["spec"]["containers"].clear()
    assert store.get(POD, "default", "a")["metadata"]["labels"] == {"x": "1"}
    assert store.get(POD, "default", "a")["spec"]["containers"]


def test_get_missing_is_not_found(store: ObjectStore) -> None:
    with pytest.raises(NotFound) as info:
        store.get(JOB, "d", "nope")
    assert info.value.code == 404 and "trainjobs.trainer.kubeflow.org" in info.value.message


def test_update_replaces_and_bumps_resource_version(store: ObjectStore) -> None:
    created = store.create(POD, pod("a"))
    created["metadata"]["labels"] = {"k": "v"}
    updated = store.update(POD, created)
    assert updated["metadata"]["labels"] == {"k": "v"}
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


def test_update_with_stale_resource_version_conflicts(store: ObjectStore) -> None:
    created = store.create(POD, pod("a"))
    store.update(POD, {**created, "metadata": {**created["metadata"], "labels": {"a": "1"}}})
    with pytest.raises(Conflict) as info:
        store.update(POD, {**created, "metadata": {**created["metadata"], "labels": {"b": "2"}}})
    assert info.value.code == 409


def test_update_without_resource_version_is_unconditional(store: ObjectStore) -> None:
    store.create(POD, pod("a"))
    store.update(POD, pod("a", labels={"a": "1"}))
    assert store.update(POD, pod("a", labels={"b": "2"}))["metadata"]["labels"] == {"b": "2"}


def test_update_missing_is_not_found(store: ObjectStore) -> None:
    with pytest.raises(NotFound):
        store.update(POD, pod("ghost"))


def test_update_keeps_system_metadata(store: ObjectStore) -> None:
    created = store.create(POD, pod("a"))
    sent = pod("a")
    sent["metadata"].update(uid="forged", creationTimestamp="1999-01-01T00:00:00Z", generation=42)
    updated = store.update(POD, sent)
    for field in ("uid", "creationTimestamp"):
        assert updated["metadata"][field] == created["metadata"][field]
    assert updated["metadata"]["generation"] == 1


def test_noop_update_keeps_resource_version(store: ObjectStore) -> None:
    created = store.create(POD, pod("a"))
    assert store.update(POD, created)["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_resource_versions_increase_across_types_and_operations(store: ObjectStore) -> None:
    versions = [int(store.create(POD, pod(f"p{i}"))["metadata"]["resourceVersion"]) for i in range(3)]
    versions.append(int(store.create(NODE, {"metadata": {"name": "n"}})["metadata"]["resourceVersion"]))
    versions.append(int(store.update(POD, pod("p0", labels={"a": "b"}))["metadata"]["resourceVersion"]))
    versions.append(int(store.delete(POD, "default", "p1")["metadata"]["resourceVersion"]))
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert int(store.list(POD).resource_version) == versions[-1]


@pytest.mark.parametrize(
    ("change", "bumped"),
    [
        pytest.param(lambda o: o["spec"].update(nodeName="n1"), True, id="spec"),
        pytest.param(lambda o: o["metadata"].update(labels={"a": "b"}), False, id="labels"),
        pytest.param(lambda o: o["metadata"].update(annotations={"a": "b"}), False, id="annotations"),
        pytest.param(lambda o: o.update(status={"phase": "Running"}), False, id="status-ignored"),
    ],
)
def test_generation_bumps_only_on_spec_change(store: ObjectStore, change: Any, bumped: bool) -> None:
    obj = store.create(POD, pod("a"))
    change(obj)
    assert store.update(POD, obj)["metadata"]["generation"] == (2 if bumped else 1)


def test_update_ignores_status_and_update_status_changes_only_status(store: ObjectStore) -> None:
    store.create(POD, pod("a"))
    assert "status" not in store.update(POD, pod("a", status={"phase": "Running"}))
    changed = store.update_status(POD, pod("a", labels={"sneaky": "1"}, status={"phase": "Running"}))
    assert changed["status"] == {"phase": "Running"}
    assert "labels" not in changed["metadata"] and changed["metadata"]["generation"] == 1
    assert store.update(POD, pod("a", labels={"x": "y"}))["status"] == {"phase": "Running"}


def test_create_drops_status_for_kinds_with_status_subresource(store: ObjectStore) -> None:
    assert "status" not in store.create(POD, pod("a", status={"phase": "Running"}))


def test_kind_without_status_subresource_keeps_status_in_update(store: ObjectStore) -> None:
    store.create(CONFIGMAP, {"metadata": {"name": "c", "namespace": "d"}, "status": {"x": 1}})
    updated = store.update(CONFIGMAP, {"metadata": {"name": "c", "namespace": "d"}, "status": {"x": 2}})
    assert updated["status"] == {"x": 2}
    with pytest.raises(NotFound):
        store.update_status(CONFIGMAP, updated)


def test_update_status_with_stale_version_conflicts(store: ObjectStore) -> None:
    created = store.create(POD, pod("a"))
    store.update_status(POD, {**created, "status": {"phase": "Pending"}})
    with pytest.raises(Conflict):
        store.update_status(POD, {**created, "status": {"phase": "Running"}})


def test_delete_without_finalizers_removes_and_returns_final_object(store: ObjectStore) -> None:
    created = store.create(POD, pod("a"))
    gone = store.delete(POD, "default", "a")
    assert gone["metadata"]["uid"] == created["metadata"]["uid"]
    assert int(gone["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    with pytest.raises(NotFound):
        store.get(POD, "default", "a")
    with pytest.raises(NotFound):
        store.delete(POD, "default", "a")


def test_delete_preconditions(store: ObjectStore) -> None:
    created = store.create(POD, pod("a"))
    with pytest.raises(Conflict):
        store.delete(POD, "default", "a", preconditions={"uid": "other"})
    with pytest.raises(Conflict):
        store.delete(POD, "default", "a", preconditions={"resourceVersion": "999999"})
    store.delete(POD, "default", "a", preconditions={"uid": created["metadata"]["uid"]})


def _deny_bad_image(rt: ResourceType, op: Operation, new: dict[str, Any], old: dict[str, Any] | None) -> Any:
    if op is Operation.DELETE:
        raise Forbidden(rt.kind, new["metadata"]["name"], [])
    if any(c.get("image") == "bad" for c in new.get("spec", {}).get("containers", [])):
        raise Invalid(rt.kind, new["metadata"]["name"], [FieldError("image", CauseType.INVALID, "bad image")])
    new.setdefault("metadata", {}).setdefault("labels", {})["defaulted"] = op.value.lower()
    return new


def test_admission_defaults_and_rejects_on_every_write(make_store: MakeStore) -> None:
    store = make_store(admission=_deny_bad_image)
    assert store.create(POD, pod("a"))["metadata"]["labels"] == {"defaulted": "create"}
    assert store.update(POD, pod("a", labels={"x": "1"}))["metadata"]["labels"]["defaulted"] == "update"
    bad = pod("b", spec={"containers": [{"name": "c", "image": "bad"}]})
    with pytest.raises(Invalid):
        store.create(POD, bad)
    with pytest.raises(Invalid):
        store.patch(POD, "default", "a", {"spec": {"containers": [{"name": "c", "image": "bad"}]}}, "merge")
    with pytest.raises(Forbidden):
        store.delete(POD, "default", "a")
    assert [p["metadata"]["name"] for p in store.list(POD).items] == ["a"]


def test_dry_run_writes_are_checked_but_store_nothing(store: ObjectStore) -> None:
    """``dryRun=All``: the answer is what the write would give; the store, its version and watchers see
    nothing."""
    store.create(POD, pod("kept"))
    before = store.list(POD).resource_version
    watch = store.watch(POD, resource_version=before, timeout=0.2)
    preview = store.create(POD, pod("ghost"), dry_run=True)
    assert preview["metadata"]["uid"] and preview["metadata"]["name"] == "ghost"
    with pytest.raises(AlreadyExists):
        store.create(POD, pod("kept"), dry_run=True)
    kept = store.get(POD, "default", "kept")
    changed = store.update(
        POD, {**kept, "metadata": {**kept["metadata"], "labels": {"x": "y"}}}, dry_run=True
    )
    assert changed["metadata"]["labels"] == {"x": "y"}
    store.patch(POD, "default", "kept", {"metadata": {"labels": {"a": "b"}}}, MERGE_PATCH, dry_run=True)
    store.delete(POD, "default", "kept", dry_run=True)
    assert [o["metadata"]["name"] for o in store.list(POD).items] == ["kept"]
    assert store.get(POD, "default", "kept")["metadata"].get("labels") in (None, {})
    assert store.list(POD).resource_version == before
    assert list(watch) == []
