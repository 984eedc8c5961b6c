"""The upstream OpenMPI runtimes, unchanged, run 2-node CPU jobs on `gangplane up`: mpirun in the launcher
reaches the `node` pod through gangplane's remote shell. DeepSpeed finds its ranks through mpi4py and trains
data-parallel over gloo (examples/deepspeed/distributed.yaml); MLX's MPI backend sums across the two ranks
(examples/mlx/distributed.yaml)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from runtimes_harness import RUNTIMES, Up

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
JOBS = {
    "deepspeed_distributed.yaml": EXAMPLES / "deepspeed" / "distributed.yaml",
    "mlx_distributed.yaml": EXAMPLES / "mlx" / "distributed.yaml",
}


@pytest.fixture(scope="module")
def submitted(gangplane_up: Up) -> Up:
    """Both jobs at once, so their environments build side by side; each test follows its own job."""
    if not shutil.which("mpirun"):
        pytest.skip("OpenMPI is not installed (docs/mpi.md: apt-get install openmpi-bin libopenmpi-dev)")
    assert RUNTIMES is not None
    for runtime, job in JOBS.items():
        gangplane_up.gp("apply", "-f", str(RUNTIMES / runtime))
        gangplane_up.gp("apply", "-f", str(job))
    return gangplane_up


def _rank_lines(up: Up, example: str, job: str, pattern: str) -> list[str]:
    ran = up.run_job(EXAMPLES / example / "distributed.yaml")
    assert f"trainjob/{job} Complete" in ran.stdout, ran.stdout + ran.stderr
    return sorted(set(re.findall(pattern, up.gp("logs", f"trainjob/{job}").stdout)))


def test_deepspeed_two_nodes_train_in_sync(submitted: Up) -> None:
    assert _rank_lines(submitted, "deepspeed", "deepspeed-ddp", r"deepspeed rank \d of \d: .*") == [
        "deepspeed rank 0 of 2: 10 steps, same weights on every rank: True",
        "deepspeed rank 1 of 2: 10 steps, same weights on every rank: True",
    ]


def test_mlx_two_ranks_sum_over_mpi(submitted: Up) -> None:
    assert _rank_lines(submitted, "mlx", "mlx-allsum", r"mlx rank \d of \d: .*") == [
        "mlx rank 0 of 2: all_sum [3.0]",
        "mlx rank 1 of 2: all_sum [3.0]",
    ]
