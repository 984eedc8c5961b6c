"""Pid files name a process, not a number; state directories are private (issue #13)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gangplane.cluster import launch
from gangplane.server import lifecycle, statedir


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process whose pid a stale pid file could name."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process
    process.kill()
    process.wait()


def test_stop_never_signals_a_process_the_pid_file_did_not_start(
    tmp_path: Path, bystander: subprocess.Popen[bytes]
) -> None:
    paths = lifecycle.prepare(tmp_path / "home")
    real = statedir.ProcessRecord.of(bystander.pid, [])
    reused = statedir.ProcessRecord(bystander.pid, real.create_time - 100, real.cmdline, [])
    for text in (reused.dumps(), f"{bystander.pid}\n"):  # a reused pid; a bare pid of an older version
        paths.pid.write_text(text)
        assert not lifecycle.status(paths.root).running
        assert launch.stop(paths.root) is False
        assert bystander.poll() is None
    paths.pid.write_text(real.dumps())
    assert lifecycle.status(paths.root).running


def test_the_lock_is_exclusive_and_dies_with_its_holder(tmp_path: Path) -> None:
    root = lifecycle.prepare(tmp_path / "home").root
    code = (
        "import pathlib, sys, time; from gangplane.server import statedir;"
        " statedir.hold_lock(pathlib.Path(sys.argv[1])); print('held', flush=True); time.sleep(60)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    holder = subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, env=env)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        assert statedir.locked(root)
        with pytest.raises(statedir.StateDirBusy, match=f"pid {holder.pid}"):
            statedir.hold_lock(root)
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert not statedir.locked(root)
    os.close(statedir.hold_lock(root))


def test_prepare_tightens_an_old_wide_state_dir(tmp_path: Path) -> None:
    root = tmp_path / "home"
    (root / "logs").mkdir(parents=True)
    root.chmod(0o755)
    (root / "store.db").write_text("")
    (root / "store.db").chmod(0o644)
    (root / "logs" / "pod.log").write_text("secret")
    (root / "logs" / "pod.log").chmod(0o644)
    lifecycle.prepare(root)
    assert root.stat().st_mode & 0o777 == 0o700
    assert (root / "logs").stat().st_mode & 0o777 == 0o700
    assert (root / "store.db").stat().st_mode & 0o777 == 0o600
    assert (root / "logs" / "pod.log").stat().st_mode & 0o777 == 0o600
