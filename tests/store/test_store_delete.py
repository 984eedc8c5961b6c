"""Conformance: finalizers, deletionTimestamp, garbage collection via ownerReferences, deletecollection."""

from __future__ import annotations

import pytest

from gangplane.errors import NotFound
from gangplane.store import ListOptions, Propagation
from gangplane.store.core import ObjectStore

from .conftest import JOB, JOBSET, POD, owner_ref, pod


def exists(store: ObjectStore, name: str, rt: object = POD) -> bool:
    try:
        store.get(rt, "default", name)  # type: ignore[arg-type]
    except NotFound:
        return False
    return True


def make_job(store: ObjectStore, name: str = "job") -> dict[str, object]:
    return store.create(JOB, {"metadata": {"name": name, "namespace": "default"}, "spec": {}})


def test_finalizers_keep_the_object_until_emptied(store: ObjectStore) -> None:
    store.create(POD, pod("a", finalizers=["x/a", "x/b"]))
    marked = store.delete(POD, "default", "a")
    assert marked["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:00Z"
    assert store.get(POD, "default", "a")["metadata"]["deletionTimestamp"]
    assert store.delete(POD, "default", "a") == store.get(POD, "default", "a")
    store.update(
        POD, {**marked, "metadata": {**marked["metadata"], "finalizers": ["x/b"], "resourceVersion": ""}}
    )
    assert exists(store, "a")
    store.patch(POD, "default", "a", {"metadata": {"finalizers": None}}, "merge")
    assert not exists(store, "a")


def test_removing_last_finalizer_emits_deleted(store: ObjectStore) -> None:
    store.create(POD, pod("a", finalizers=["x/a"]))
    watch = store.watch(POD, resource_version=store.list(POD).resource_version, timeout=5)
    store.delete(POD, "default", "a")
    store.patch(POD, "default", "a", [{"op": "remove", "path": "/metadata/finalizers"}], "json")
    events = [e for _, e in zip(range(2), watch, strict=False)]
    watch.close()
    assert [e.type.value for e in events] == ["MODIFIED", "DELETED"]
    assert "finalizers" not in events[1].object["metadata"]


def test_background_deletes_owner_then_dependents_across_types(store: ObjectStore) -> None:
    job = make_job(store)
    jobset = store.create(
        JOBSET, {"metadata": {"name": "js", "namespace": "default", "ownerReferences": [owner_ref(job)]}}
    )
    store.create(POD, pod("p1", owners=[owner_ref(jobset)]))
    store.create(POD, pod("keep"))
    watch = store.watch(POD, resource_version=store.list(POD).resource_version, timeout=5)
    store.delete(JOB, "default", "job")
    assert not exists(store, "js", JOBSET) and not exists(store, "p1")
    assert exists(store, "keep")
    assert next(iter(watch)).type.value == "DELETED"
    watch.close()


def test_background_waits_for_owner_finalizers(store: ObjectStore) -> None:
    job = store.create(JOB, {"metadata": {"name": "job", "namespace": "default", "finalizers": ["f"]}})
    store.create(POD, pod("p1", owners=[owner_ref(job)]))
    store.delete(JOB, "default", "job")
    assert exists(store, "p1")
    store.patch(JOB, "default", "job", {"metadata": {"finalizers": []}}, "merge")
    assert not exists(store, "job", JOB) and not exists(store, "p1")


def test_dependent_with_another_live_owner_only_loses_the_reference(store: ObjectStore) -> None:
    a, b = make_job(store, "a"), make_job(store, "b")
    store.create(POD, pod("shared", owners=[owner_ref(a), owner_ref(b)]))
    store.delete(JOB, "default", "a")
    refs = store.get(POD, "default", "shared")["metadata"]["ownerReferences"]
    assert [r["name"] for r in refs] == ["b"]
    store.delete(JOB, "default", "b")
    assert not exists(store, "shared")


def test_foreground_keeps_owner_until_blocking_dependents_are_gone(store: ObjectStore) -> None:
    job = make_job(store)
    store.create(POD, pod("blocking", owners=[owner_ref(job, block=True)], finalizers=["hold"]))
    store.create(POD, pod("free", owners=[owner_ref(job)]))
    marked = store.delete(JOB, "default", "job", propagation=Propagation.FOREGROUND)
    assert marked["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert marked["metadata"]["deletionTimestamp"]
    assert not exists(store, "free")
    assert store.get(POD, "default", "blocking")["metadata"]["deletionTimestamp"]
    assert exists(store, "job", JOB)
    store.patch(POD, "default", "blocking", {"metadata": {"finalizers": None}}, "merge")
    assert not exists(store, "blocking") and not exists(store, "job", JOB)


def test_foreground_without_dependents_deletes_at_once(store: ObjectStore) -> None:
    make_job(store)
    store.delete(JOB, "default", "job", propagation=Propagation.FOREGROUND)
    assert not exists(store, "job", JOB)


def test_foreground_owner_with_own_finalizer_waits_for_both(store: ObjectStore) -> None:
    job = store.create(JOB, {"metadata": {"name": "job", "namespace": "default", "finalizers": ["mine"]}})
    store.create(POD, pod("p", owners=[owner_ref(job, block=True)]))
    store.delete(JOB, "default", "job", propagation=Propagation.FOREGROUND)
    assert not exists(store, "p")
    assert store.get(JOB, "default", "job")["metadata"]["finalizers"] == ["mine"]
    store.patch(JOB, "default", "job", {"metadata": {"finalizers": None}}, "merge")
    assert not exists(store, "job", JOB)


def test_orphan_strips_references_and_keeps_dependents(store: ObjectStore) -> None:
    job = make_job(store)
    other = make_job(store, "other")
    store.create(POD, pod("p1", owners=[owner_ref(job)]))
    store.create(POD, pod("p2", owners=[owner_ref(job), owner_ref(other)]))
    store.delete(JOB, "default", "job", propagation=Propagation.ORPHAN)
    assert not exists(store, "job", JOB)
    assert "ownerReferences" not in store.get(POD, "default", "p1")["metadata"]
    assert [r["name"] for r in store.get(POD, "default", "p2")["metadata"]["ownerReferences"]] == ["other"]


def test_delete_collection_uses_selectors(store: ObjectStore) -> None:
    for name, team in (("a", "x"), ("b", "y"), ("c", "x")):
        store.create(POD, pod(name, labels={"team": team}))
    store.create(POD, pod("d", "other", labels={"team": "x"}))
    deleted = store.delete_collection(POD, ListOptions(namespace="default", label_selector="team=x"))
    assert [o["metadata"]["name"] for o in deleted.items] == ["a", "c"]
    assert sorted(o["metadata"]["name"] for o in store.list(POD).items) == ["b", "d"]


@pytest.mark.parametrize("propagation", list(Propagation))
def test_gc_index_survives_reference_changes(store: ObjectStore, propagation: Propagation) -> None:
    job = make_job(store)
    store.create(POD, pod("p", owners=[owner_ref(job)]))
    store.update(POD, pod("p"))
    store.delete(JOB, "default", "job", propagation=propagation)
    assert exists(store, "p")


def test_a_dependent_created_after_its_owner_is_gone_is_collected(store: ObjectStore) -> None:
    """A controller acting on a stale read recreates a child of a deleted owner: the GC removes it."""
    job = make_job(store)
    ref = owner_ref(job)
    store.delete(JOB, "default", "job")
    watch = store.watch(POD, resource_version=store.list(POD).resource_version, timeout=5)
    created = store.create(POD, pod("late", owners=[ref]))
    assert created["metadata"]["name"] == "late"  # the create itself succeeds, as on a real API server
    assert not exists(store, "late")
    assert [e.type.value for e in (next(iter(watch)), next(iter(watch)))] == ["ADDED", "DELETED"]
    watch.close()
