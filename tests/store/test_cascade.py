"""Cascading deletes are linear in dependents (also dry-run), iterative on deep owner chains, and finish
after a crash: the startup sweep collects what a SIGKILL left behind (issue #13)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gangplane.store import Propagation, ResourceType, SqliteStore
from gangplane.store.core import ObjectStore
from gangplane.store.engine import Engine

from .conftest import POD, MakeStore, owner_ref, pod

JOB = ResourceType("batch", "v1", "Job", "jobs")
CHILD = Path(__file__).with_name("_cascade_child.py")


def job(name: str, namespace: str = "d", **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, **meta}, "spec": {}}


def owner_with_pods(store: ObjectStore, n: int, namespace: str = "d") -> dict[str, Any]:
    owner = store.create(JOB, job("owner", namespace))
    for i in range(n):
        store.create(POD, pod(f"p{i}", namespace, owners=[owner_ref(owner, block=True)]))
    return owner


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many dependents each ``_dependents_of`` call listed: their sum is the cascade's work."""
    sizes: list[int] = []
    original = Engine._dependents_of

    def counting(self: Engine, owner_uid: str) -> list[Any]:
        found = original(self, owner_uid)
        sizes.append(len(found))
        return found

    monkeypatch.setattr(Engine, "_dependents_of", counting)
    return sizes


@pytest.mark.parametrize("propagation", list(Propagation))
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "real"])
def test_deleting_an_owner_lists_its_dependents_a_bounded_number_of_times(
    make_store: MakeStore, listed: list[int], propagation: Propagation, dry_run: bool
) -> None:
    n = 400
    store = make_store()
    owner_with_pods(store, n)
    rv = store.list(POD).resource_version
    listed.clear()
    store.delete(JOB, "d", "owner", propagation=propagation, dry_run=dry_run)
    assert sum(listed) <= 4 * n  # it was n * n / 2 when each dependent's removal re-listed its siblings
    if dry_run:
        assert store.list(POD).resource_version == rv and len(store.list(POD).items) == n
    elif propagation is Propagation.ORPHAN:
        assert len(store.list(POD).items) == n
        assert not any("ownerReferences" in p["metadata"] for p in store.list(POD).items)
    else:
        assert store.list(POD).items == [] and store.list(JOB).items == []


@pytest.mark.parametrize("propagation", [Propagation.BACKGROUND, Propagation.FOREGROUND])
def test_a_deep_owner_chain_is_collected_without_recursion(
    make_store: MakeStore, propagation: Propagation
) -> None:
    store = make_store()
    parent = store.create(JOB, job("j0"))
    for i in range(1, 1500):
        parent = store.create(JOB, job(f"j{i}", ownerReferences=[owner_ref(parent, block=True)]))
    store.delete(JOB, "d", "j0", propagation=propagation, dry_run=True)
    assert len(store.list(JOB).items) == 1500
    store.delete(JOB, "d", "j0", propagation=propagation)
    assert store.list(JOB).items == []


def test_dry_run_with_an_ownership_cycle_terminates(make_store: MakeStore) -> None:
    store = make_store()
    a = store.create(JOB, job("a"))
    b = store.create(JOB, job("b", ownerReferences=[owner_ref(a)]))
    store.patch(
        JOB, "d", "a", {"metadata": {"ownerReferences": [owner_ref(b)]}}, "application/merge-patch+json"
    )
    store.delete(JOB, "d", "a", dry_run=True)
    assert len(store.list(JOB).items) == 2
    store.delete(JOB, "d", "a")
    assert store.list(JOB).items == []


def _remove_row(path: Path, plural: str, name: str) -> None:
    db = sqlite3.connect(path)
    db.execute("DELETE FROM objects WHERE plural = ? AND name = ?", (plural, name))
    db.commit()
    db.close()


def test_startup_sweep_collects_dependents_of_missing_owners(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = SqliteStore(path)
    owner = owner_with_pods(store, 50)
    other = store.create(JOB, job("other"))
    store.create(POD, pod("shared", "d", owners=[owner_ref(owner), owner_ref(other)]))
    chain = store.create(JOB, job("c0", ownerReferences=[owner_ref(owner)]))
    for i in range(1, 500):
        chain = store.create(JOB, job(f"c{i}", ownerReferences=[owner_ref(chain)]))
    store.close()
    _remove_row(path, "jobs", "owner")  # as if the process died right after removing the owner
    store = SqliteStore(path)
    try:
        assert [p["metadata"]["name"] for p in store.list(POD).items] == ["shared"]
        assert [r["name"] for r in store.get(POD, "d", "shared")["metadata"]["ownerReferences"]] == ["other"]
        assert [j["metadata"]["name"] for j in store.list(JOB).items] == ["other"]
    finally:
        store.close()


def test_startup_sweep_releases_a_foreground_owner_whose_dependents_are_gone(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = SqliteStore(path)
    owner = store.create(JOB, job("owner", finalizers=["example.com/keep"]))
    store.create(POD, pod("p", "d", owners=[owner_ref(owner, block=True)]))
    store.delete(JOB, "d", "owner", propagation=Propagation.FOREGROUND)
    store.close()
    _remove_row(path, "pods", "p")
    store = SqliteStore(path)
    try:
        assert store.get(JOB, "d", "owner")["metadata"]["finalizers"] == ["example.com/keep"]
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_during_a_cascade_leaves_no_orphans_after_restart(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = SqliteStore(path)
    owner_with_pods(store, 3000)
    store.close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen(
        [sys.executable, str(CHILD), str(path), "100"], stdout=subprocess.PIPE, text=True, env=env
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "mid-cascade"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    db = sqlite3.connect(path)
    (left,) = db.execute("SELECT COUNT(*) FROM objects WHERE plural = 'pods'").fetchone()
    db.close()
    assert 0 < left < 3000, "the kill must land in the middle of the cascade"
    store = SqliteStore(path)
    try:
        assert store.list(POD).items == [] and store.list(JOB).items == []
    finally:
        store.close()


def test_an_owner_keeps_its_dependents_as_they_come_and_go(store: ObjectStore) -> None:
    """The owner index holds one dependent alone and a set past one: either way a dependent deleted leaves
    the others to the cascade, and the last one leaves nothing behind."""
    owner = owner_with_pods(store, 3)
    uid = owner["metadata"]["uid"]
    store.delete(POD, "d", "p1")
    assert sorted(o["metadata"]["name"] for _, o in store._dependents_of(uid)) == ["p0", "p2"]
    store.delete(POD, "d", "p0")
    assert [o["metadata"]["name"] for _, o in store._dependents_of(uid)] == ["p2"]
    store.create(POD, pod("p3", "d", owners=[owner_ref(owner)]))
    store.delete(JOB, "d", "owner")
    assert store.list(POD).items == [] and uid not in store._dependents
