"""A real local Slurm for the tests that need one: scripts/slurm/start.sh once per session, stop.sh at the end.

The ``real_slurm`` fixture skips (with the reason in the pytest summary) only when Slurm is not installed, the
tests do not run as root, or the cluster does not come up. Ports are picked free so a developer's own cluster
(default 6817/17001..) is left alone.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_builders import LocalSlurm, wait_until

ROOT = Path(__file__).resolve().parents[3]
SCRIPTS = ROOT / "scripts" / "slurm"
NODES = 4


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_block(start: int, size: int) -> int:
    """The first base >= start with base..base+size-1 all free."""
    for base in range(start, start + 2000, size + 1):
        if all(_port_free(base + i) for i in range(size)):
            return base
    raise RuntimeError(f"no {size} free ports from {start}")


def _missing_prerequisite() -> str | None:
    if shutil.which("slurmctld") is None and not Path("/usr/sbin/slurmctld").exists():
        return "Slurm is not installed: run scripts/slurm/install.sh as root to run the real-Slurm tests"
    if os.geteuid() != 0:
        return "the real-Slurm tests start slurmctld/slurmd and need root"
    return None


@pytest.fixture(scope="session")
def real_slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSlurm]:
    missing = _missing_prerequisite()
    if missing is not None:
        pytest.skip(missing)
    state = tmp_path_factory.mktemp("slurm")
    env = {
        **os.environ,
        "GANGPLANE_SLURM_NODES": str(NODES),
        "GANGPLANE_SLURM_CTLD_PORT": str(_free_block(26817, 1)),
        "GANGPLANE_SLURM_SLURMD_PORT": str(_free_block(27000, NODES + 1)),
    }
    started = subprocess.run(
        [str(SCRIPTS / "start.sh"), str(state)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if started.returncode != 0:
        subprocess.run(
            [str(SCRIPTS / "stop.sh"), str(state)], env=env, capture_output=True, timeout=60, check=False
        )
        pytest.skip(f"local Slurm did not start: {(started.stderr or started.stdout)[-600:]}")
    try:
        yield LocalSlurm(state, str(state / "etc" / "slurm.conf"))
    finally:
        subprocess.run(
            [str(SCRIPTS / "stop.sh"), str(state)], env=env, capture_output=True, timeout=120, check=False
        )


@pytest.fixture
def slurm(real_slurm: LocalSlurm) -> Iterator[LocalSlurm]:
    """The session cluster, emptied of jobs after each test (so every test starts with idle nodes)."""
    yield real_slurm
    jobs = real_slurm.run("squeue", "-h", "-o", "%i").split()
    if jobs:
        real_slurm.run("scancel", *jobs)

    def idle() -> bool:
        counts = real_slurm.run("sinfo", "-h", "-t", "idle", "-o", "%D").split()
        return sum(int(c) for c in counts) == NODES

    wait_until(idle, 30, "all Slurm nodes idle")
