"""Crash safety: every create acknowledged before a SIGKILL is present after reopening the file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gangplane.store import SqliteStore

from .conftest import POD, pod

WRITER = Path(__file__).with_name("_crash_writer.py")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    with subprocess.Popen(
        [sys.executable, str(WRITER), str(path)], stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        acknowledged = []
        for line in proc.stdout:
            acknowledged.append(line.strip())
            if len(acknowledged) == 300:
                os.kill(proc.pid, signal.SIGKILL)
                break
        acknowledged += [line.strip() for line in proc.stdout if line.strip()]
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL and len(acknowledged) >= 300

    store = SqliteStore(path)
    present = {o["metadata"]["name"]: int(o["metadata"]["resourceVersion"]) for o in store.list(POD).items}
    assert set(acknowledged) <= set(present)
    fresh = store.create(POD, pod("after-crash", "d"))
    assert int(fresh["metadata"]["resourceVersion"]) > max(present.values())
    store.close()
