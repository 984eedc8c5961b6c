"""Nothing unservable is stored, and one bad row never stops a store from opening (issue #13)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from gangplane.errors import BadRequest, Gone, Invalid, RequestEntityTooLarge
from gangplane.store import MemoryStore, SqliteStore
from gangplane.store.history import Change, History
from store.conftest import CONFIGMAP, POD, MakeStore, pod


def configmap(name: str, **data: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "default"}, "data": data}


def _insert_row(path: Path, name: str, body: str, rv: int) -> None:
    db = sqlite3.connect(path)
    db.execute("INSERT INTO objects VALUES ('', 'configmaps', 'default', ?, ?, ?)", (name, rv, body))
    db.commit()
    db.close()


def test_bad_rows_are_quarantined_and_the_rest_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "store.db"
    store = SqliteStore(path)
    good = store.create(CONFIGMAP, configmap("good", a="b"))
    store.close()
    bad_meta = {"metadata": {"name": "owners", "namespace": "default", "uid": "u1", "ownerReferences": 5}}
    _insert_row(path, "owners", json.dumps(bad_meta), 50)
    _insert_row(path, "garbage", "{not json", 51)
    _insert_row(path, "nan", '{"metadata":{"name":"nan","namespace":"default","uid":"u2"},"x":NaN}', 52)
    store = SqliteStore(path)
    try:
        names = [o["metadata"]["name"] for o in store.list(CONFIGMAP).items]
        assert names == ["good"]
        assert store.get(CONFIGMAP, "default", "good") == good
        # the version counter never goes back below a quarantined row's version
        assert int(store.create(CONFIGMAP, configmap("next"))["metadata"]["resourceVersion"]) > 52
    finally:
        store.close()
    assert sum("quarantined" in r.message for r in caplog.records) == 3
    kept = sqlite3.connect(path).execute("SELECT name, reason FROM quarantine ORDER BY name").fetchall()
    assert [name for name, _ in kept] == ["garbage", "nan", "owners"]


def test_the_store_refuses_what_it_could_not_load_back(make_store: MakeStore) -> None:
    store = make_store()
    with pytest.raises(BadRequest):
        store.create(CONFIGMAP, {**configmap("c"), "x": float("inf")})
    with pytest.raises(BadRequest):
        store.create(CONFIGMAP, {"metadata": {"name": "c", "namespace": "default", "finalizers": 5}})
    with pytest.raises(RequestEntityTooLarge):
        store.create(CONFIGMAP, {**configmap("c"), "x": "y" * (2 * 1024 * 1024)})
    created = store.create(CONFIGMAP, configmap("c"))
    with pytest.raises(BadRequest):
        store.patch(
            CONFIGMAP, "default", "c", {"metadata": {"labels": {"a": 1}}}, "application/merge-patch+json"
        )
    with pytest.raises(Invalid):
        store.patch(
            CONFIGMAP, "default", "c", {"metadata": {"labels": {"a": "b c"}}}, "application/merge-patch+json"
        )
    assert store.get(CONFIGMAP, "default", "c") == created
    assert [o["metadata"]["name"] for o in store.list(CONFIGMAP).items] == ["c"]


def test_dry_run_is_validated_too(make_store: MakeStore) -> None:
    store = make_store()
    with pytest.raises(Invalid):
        store.create(CONFIGMAP, configmap("a..b"), dry_run=True)


def test_history_is_bounded_by_bytes(make_store: MakeStore) -> None:
    store = make_store(history_bytes=2 * 1024 * 1024)
    first = store.create(CONFIGMAP, configmap("big", a="x"))
    for i in range(40):
        store.update(CONFIGMAP, configmap("big", a=str(i) * 200_000))
    assert store._history.bytes <= 2 * 1024 * 1024
    with pytest.raises(Gone):
        store.watch(CONFIGMAP, resource_version=first["metadata"]["resourceVersion"])
    newest = store.get(CONFIGMAP, "default", "big")["metadata"]["resourceVersion"]
    store.watch(CONFIGMAP, resource_version=newest).close()


def test_history_always_keeps_the_newest_change() -> None:
    history = History(10, floor=0, max_bytes=1)
    for rv in (1, 2, 3):
        history.append(Change(rv, ("", "pods"), "ADDED", {}, None, 100))  # type: ignore[arg-type]
    assert [c.rv for c in history.since(2, ("", "pods"))] == [3]


def test_legacy_problems_do_not_block_finalizer_removal(tmp_path: Path) -> None:
    """An object stored before validation existed (a label value now refused) can still be deleted."""
    path = tmp_path / "store.db"
    store = SqliteStore(path)
    store.create(POD, pod("p", finalizers=["example.com/hold"]))
    store.close()
    db = sqlite3.connect(path)
    (body,) = db.execute("SELECT body FROM objects WHERE name = 'p'").fetchone()
    legacy = json.loads(body)
    legacy["metadata"]["labels"] = {"a": "b c"}
    db.execute("UPDATE objects SET body = ? WHERE name = 'p'", (json.dumps(legacy),))
    db.commit()
    db.close()
    store = SqliteStore(path)
    try:
        store.delete(POD, "default", "p")
        current = store.get(POD, "default", "p")
        store.update(POD, {**current, "metadata": {**current["metadata"], "finalizers": []}})
        assert store.list(POD).items == []
    finally:
        store.close()


def test_memory_store_validates_like_sqlite() -> None:
    store = MemoryStore()
    with pytest.raises(Invalid):
        store.create(
            POD, pod("p", spec={"containers": [{"name": "m", "resources": {"limits": {"cpu": "-1"}}}]})
        )
