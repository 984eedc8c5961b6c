"""SQLite durability: a reopened store keeps every object, and versions continue monotonic."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gangplane.store import ListOptions, SqliteStore
from gangplane.store.sqlite import JOURNAL_CACHE_KIB, SqliteJournal

from .conftest import JOB, NODE, POD, owner_ref, pod


def test_reopen_keeps_objects_types_and_versions(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first = SqliteStore(path)
    job = first.create(JOB, {"metadata": {"name": "j", "namespace": "d"}, "spec": {"x": 1}})
    first.create(POD, pod("p", "d", owners=[owner_ref(job)]))
    first.create(NODE, {"metadata": {"name": "n"}})
    first.update_status(JOB, {**job, "status": {"ok": True}})
    last = int(first.delete(NODE, "", "n")["metadata"]["resourceVersion"])
    before = {rt.plural: first.list(rt).items for rt in (JOB, POD, NODE)}
    first.close()

    second = SqliteStore(path)
    assert {rt.plural: second.list(rt).items for rt in (JOB, POD, NODE)} == before
    assert int(second.list(POD).resource_version) == last
    created = second.create(POD, pod("q", "d"))
    assert int(created["metadata"]["resourceVersion"]) == last + 1
    second.delete(JOB, "d", "j")
    assert second.list(POD, ListOptions(namespace="d")).items == [second.get(POD, "d", "q")]
    second.close()


def test_versions_after_reopen_exceed_deleted_objects(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first = SqliteStore(path)
    for i in range(3):
        first.create(POD, pod(f"p{i}"))
    last = int(first.delete_collection(POD).resource_version)
    first.close()
    second = SqliteStore(path)
    assert int(second.create(POD, pod("again"))["metadata"]["resourceVersion"]) > last
    second.close()


def test_store_file_with_the_earlier_without_rowid_table_keeps_working(tmp_path: Path) -> None:
    """Stores made before the objects table became a rowid table keep theirs: both take the same writes."""
    path = tmp_path / "s.db"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE objects (grp TEXT, plural TEXT, namespace TEXT, name TEXT, rv INTEGER,"
        " body TEXT, PRIMARY KEY (grp, plural, namespace, name)) WITHOUT ROWID"
    )
    old.close()
    first = SqliteStore(path)
    created = first.create(POD, pod("p", "d"))
    first.update_status(POD, {**created, "status": {"phase": "Running"}})
    first.close()
    second = SqliteStore(path)
    assert second.get(POD, "d", "p")["status"] == {"phase": "Running"}
    second.close()
    (table,) = (
        sqlite3.connect(path).execute("SELECT sql FROM sqlite_master WHERE name = 'objects'").fetchone()
    )
    assert table.endswith("WITHOUT ROWID")


def test_journal_page_cache_is_kept_small(tmp_path: Path) -> None:
    # The engine holds every object; SQLite's default 2,000 KiB page cache would only duplicate pages.
    journal = SqliteJournal(tmp_path / "s.db")
    assert journal._db.execute("PRAGMA cache_size").fetchone() == (-JOURNAL_CACHE_KIB,)
    assert JOURNAL_CACHE_KIB < 2000
    journal.close()
