"""The durable backend: every object in one SQLite file, with the engine's cache in front for reads.

Durability choice: WAL journal with ``synchronous=NORMAL`` by default. A write returns only after its
transaction has committed to the WAL file, i.e. after the bytes were handed to the operating system, so an
acknowledged write survives the process being killed (SIGKILL, OOM, crash). It does not survive an OS crash or
power loss between commit and the next checkpoint; pass ``synchronous="FULL"`` to fsync every commit for that
(several times slower). Group commit: ``put`` and ``remove`` only buffer; ``flush`` (the engine's ``sync``)
writes every buffered change in one transaction, so the writes that arrive while one transaction is being
written share the next (one change per transaction when writers come one at a time).

The version counter is ``max(objects.rv, meta.rv)``: creates and updates store it on the row, deletes record
it in ``meta`` in the same transaction as the row's removal, so versions continue monotonic after a reopen.
Only this file (and its ``-wal``/``-shm`` companions) is ever touched.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import sqlite3
import threading
from pathlib import Path

from gangplane.api import limits
from gangplane.clock import Clock
from gangplane.store import validation
from gangplane.store.base import Admission, Object, ResourceType
from gangplane.store.core import ObjectStore
from gangplane.store.history import DEFAULT_HISTORY_BYTES
from gangplane.store.objects import Key, TypeKey, key_of, type_key

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS types (grp TEXT, plural TEXT, version TEXT, kind TEXT, namespaced INTEGER,"
    " has_status INTEGER, PRIMARY KEY (grp, plural))",
    # a rowid table (the key in its own index): rows are appended, where a WITHOUT ROWID table kept the
    # ~1 KB bodies in key order and rewrote more pages per commit (10 µs less per create, 16 per node).
    # A store file made before keeps its WITHOUT ROWID table: both serve the same statements.
    "CREATE TABLE IF NOT EXISTS objects (grp TEXT, plural TEXT, namespace TEXT, name TEXT, rv INTEGER,"
    " body TEXT, PRIMARY KEY (grp, plural, namespace, name))",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER)",
    "CREATE TABLE IF NOT EXISTS quarantine (grp TEXT, plural TEXT, namespace TEXT, name TEXT, rv INTEGER,"
    " body TEXT, reason TEXT)",
)
_PUT = "INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?, ?)"
_DELETE = "DELETE FROM objects WHERE grp = ? AND plural = ? AND namespace = ? AND name = ?"
_SET_RV = "INSERT OR REPLACE INTO meta VALUES ('rv', ?)"
_PUT_TYPE = "INSERT OR REPLACE INTO types VALUES (?, ?, ?, ?, ?, ?)"
_LOAD = (
    "SELECT t.grp, t.version, t.kind, t.plural, t.namespaced, t.has_status, o.namespace, o.name, o.rv, o.body"
    " FROM objects o JOIN types t ON o.grp = t.grp AND o.plural = t.plural"
)
_QUARANTINE = "INSERT INTO quarantine VALUES (?, ?, ?, ?, ?, ?, ?)"
log = logging.getLogger(__name__)


def _private(path: Path) -> None:
    """The database is created 0600, and an existing one (with its WAL) tightened to 0600: SQLite gives the
    ``-wal`` and ``-shm`` files the database file's permissions, and they hold every value written."""
    if str(path) == ":memory:":
        return
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for companion in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            if companion.stat().st_mode & 0o077:
                os.chmod(companion, 0o600)


def _decode_row(rt: ResourceType, key: Key, body: str) -> tuple[Object, str | None]:
    try:
        obj = limits.loads(body)
    except ValueError as exc:
        return {}, f"the stored body is not strict JSON: {exc}"
    problem = validation.load_problem(rt, obj)
    if problem is None and key_of(obj) != key:
        problem = "the stored body's namespace/name differ from its row"
    return obj, problem


# SQLite's page cache (default 2,000 KiB, filled as the database grows): the journal is read once, at start,
# and the engine holds every object in memory, so a write needs only the B-tree pages on its path, which the
# OS keeps cached; a small cache saves ~1.7 MiB of the server's memory.
JOURNAL_CACHE_KIB = 256


class SqliteJournal:
    """One connection, used only under the engine's lock; statements are cached (prepared) by ``sqlite3``."""

    def __init__(self, path: str | Path, synchronous: str = "NORMAL") -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError("synchronous must be NORMAL or FULL")
        _private(Path(path))
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.execute(f"PRAGMA cache_size=-{JOURNAL_CACHE_KIB}")
        for statement in _SCHEMA:
            self._db.execute(statement)
        self._types: dict[TypeKey, ResourceType] = {}
        self._buffer: list[tuple[str, tuple[object, ...]]] = []  # statements of the next transaction
        self._buffer_lock = threading.Lock()

    def load(self) -> tuple[int, list[tuple[ResourceType, Object]]]:
        (rows_rv,) = self._db.execute("SELECT COALESCE(MAX(rv), 0) FROM objects").fetchone()
        meta_row = self._db.execute("SELECT value FROM meta WHERE key = 'rv'").fetchone()
        rv = max(rows_rv, meta_row[0] if meta_row else 0)
        stored: list[tuple[ResourceType, Object]] = []
        bad: list[tuple[tuple[str, str, str, str, int, str], str]] = []
        for grp, version, kind, plural, namespaced, has_status, ns, name, row_rv, body in self._db.execute(
            _LOAD
        ):
            rt = self._types.setdefault(
                (grp, plural), ResourceType(grp, version, kind, plural, bool(namespaced), bool(has_status))
            )
            obj, problem = _decode_row(rt, (ns, name), body)
            if problem is None:
                stored.append((rt, obj))
            else:
                bad.append(((grp, plural, ns, name, row_rv, body), problem))
        self._quarantine(rv, bad)
        return rv, stored

    def _quarantine(self, rv: int, bad: list[tuple[tuple[str, str, str, str, int, str], str]]) -> None:
        """Move rows nothing can serve out of ``objects`` (kept for inspection); the version counter is
        pinned first so it never goes back when the newest row is one of them."""
        if not bad:
            return
        self._db.execute("BEGIN")
        self._db.execute(_SET_RV, (rv,))
        for row, reason in bad:
            log.error("store: quarantined %s/%s %s/%s: %s", row[0] or "core", row[1], row[2], row[3], reason)
            self._db.execute(_QUARANTINE, (*row, reason))
            self._db.execute(_DELETE, row[:4])
        self._db.execute("COMMIT")

    def _buffered(self, *statements: tuple[str, tuple[object, ...]]) -> None:
        with self._buffer_lock:
            self._buffer.extend(statements)

    def _register(self, rt: ResourceType) -> None:
        if self._types.get(type_key(rt)) != rt:
            row = (rt.group, rt.plural, rt.version, rt.kind, int(rt.namespaced), int(rt.has_status))
            self._buffered((_PUT_TYPE, row))
            self._types[type_key(rt)] = rt

    def put(self, rt: ResourceType, obj: Object, rv: int, body: str) -> None:
        self._register(rt)
        namespace, name = key_of(obj)
        self._buffered((_PUT, (rt.group, rt.plural, namespace, name, rv, body)))

    def remove(self, rt: ResourceType, key: Key, rv: int) -> None:
        self._buffered((_DELETE, (rt.group, rt.plural, *key)), (_SET_RV, (rv,)))

    def flush(self) -> None:
        """Everything buffered, in one transaction; on failure none of it is kept (and the type rows it
        held are registered again by the next writes)."""
        with self._buffer_lock:
            statements, self._buffer = self._buffer, []
        if not statements:
            return
        self._db.execute("BEGIN")
        try:
            for sql, params in statements:
                self._db.execute(sql, params)
            self._db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            self._types.clear()
            log.exception("store: a transaction of %d statements failed and was rolled back", len(statements))
            raise

    def close(self) -> None:
        self._db.close()


class SqliteStore(ObjectStore):
    """A ``Store`` persisted in the SQLite file at ``path``; other options as ``MemoryStore``."""

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "NORMAL",
        clock: Clock | None = None,
        admission: Admission | None = None,
        history_size: int = 10_000,
        history_bytes: int = DEFAULT_HISTORY_BYTES,
        rng: random.Random | None = None,
        bookmark_interval: float = 1.0,
    ) -> None:
        super().__init__(
            SqliteJournal(path, synchronous),
            clock=clock,
            admission=admission,
            history_size=history_size,
            history_bytes=history_bytes,
            rng=rng,
            bookmark_interval=bookmark_interval,
        )
