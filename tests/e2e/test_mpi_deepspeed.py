"""DeepSpeed's upstream runtime, unchanged, runs a 2-node CPU job on `gangplane up`: mpirun in the launcher
reaches the `node` pod through gangplane's remote shell, DeepSpeed finds its ranks through mpi4py and trains
data-parallel over gloo (examples/deepspeed/distributed.yaml)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from runtimes_harness import RUNTIMES, Up

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "deepspeed" / "distributed.yaml"


def test_deepspeed_two_nodes_train_in_sync(gangplane_up: Up) -> None:
    if not shutil.which("mpirun"):
        pytest.skip("OpenMPI is not installed (docs/mpi.md: apt-get install openmpi-bin libopenmpi-dev)")
    assert RUNTIMES is not None
    gangplane_up.gp("apply", "-f", str(RUNTIMES / "deepspeed_distributed.yaml"))
    ran = gangplane_up.run_job(EXAMPLE)
    assert "trainjob/deepspeed-ddp Complete" in ran.stdout, ran.stdout + ran.stderr
    logs = gangplane_up.gp("logs", "trainjob/deepspeed-ddp").stdout
    lines = sorted(set(re.findall(r"deepspeed rank \d of \d: .*", logs)))
    assert lines == [
        "deepspeed rank 0 of 2: 10 steps, same weights on every rank: True",
        "deepspeed rank 1 of 2: 10 steps, same weights on every rank: True",
    ], logs
