"""One `gangplane up` shared by the upstream-runtime tests (tests/e2e/test_runtimes_*.py), and one cache of
image environments shared by everything in the session.

The environment cache is ``$GANGPLANE_ENV_CACHE`` when the caller set it (keep it between runs to skip the
builds), else a directory of the session; the cluster runs with it, so each image's environment is built
once per session at most. ``HF_HUB_CACHE`` points at a session directory that tests may fill.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from crdschema import SHARED_DIR

RUNTIMES = SHARED_DIR / "upstream" / "runtimes" if SHARED_DIR else None
CLUSTER = """\
nodeGroups:
  - name: cpu
    count: 4
    namePrefix: node-
    capacity: {cpu: "4", memory: 8Gi}
"""
COMMAND_TIMEOUT = 600.0  # a first run builds the jax environment (about 550 MB) on a loaded machine


@dataclass
class Up:
    """A running `gangplane up`, driven through the CLI as a user would."""

    env: dict[str, str]
    root: Path
    hf_cache: Path

    def gp(
        self, *args: str, check: bool = True, timeout: float = COMMAND_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "gangplane", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert not check or done.returncode == 0, f"gangplane {' '.join(args)}:\n{done.stdout}{done.stderr}"
        return done

    def run_job(self, manifest: Path, timeout: float = 480.0) -> subprocess.CompletedProcess[str]:
        """`gangplane run` to the end; the TrainJob's final line and logs are in stdout."""
        return self.gp("run", "-f", str(manifest), "--no-live", "--timeout", str(timeout), check=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def env_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    given = os.environ.get("GANGPLANE_ENV_CACHE")
    if given:
        yield Path(given)
        return
    made = tmp_path_factory.mktemp("envs")
    yield made
    shutil.rmtree(made, ignore_errors=True)  # the jax environment alone is about 550 MB


@pytest.fixture(scope="session")
def gangplane_up(tmp_path_factory: pytest.TempPathFactory, env_cache: Path) -> Iterator[Up]:
    if RUNTIMES is None or not RUNTIMES.is_dir():
        pytest.skip("needs ../shared/upstream/runtimes")
    root = tmp_path_factory.mktemp("up")
    hf_cache = root / "hf-hub"
    hf_cache.mkdir()
    env = {
        **os.environ,
        "GANGPLANE_HOME": str(root / "home"),
        "GANGPLANE_ENV_CACHE": str(env_cache),
        "HF_HUB_CACHE": str(hf_cache),
    }
    (root / "cluster.yaml").write_text(CLUSTER)
    up = Up(env, root, hf_cache)
    up.gp("up", "--config", str(root / "cluster.yaml"), "--port", str(_free_port()), timeout=180)
    try:
        yield up
    finally:
        up.gp("down", check=False, timeout=180)
