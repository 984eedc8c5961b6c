"""The upstream JAX and XGBoost runtimes, unchanged, each running a 2-node job on `gangplane up`: their
images map to local environments built on first use (CPU jax, xgboost-cpu), JAX forms its distributed
runtime from the JAX plugin's variables and all-gathers across processes, XGBoost's workers join the
collective tracker on worker 0 from the XGBoost plugin's variables, all-reduce and train."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from runtimes_harness import RUNTIMES, Up

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


JOBS = {
    "jax_distributed.yaml": EXAMPLES / "jax" / "distributed.yaml",
    "xgboost_distributed.yaml": EXAMPLES / "xgboost" / "distributed.yaml",
}


@pytest.fixture(scope="module")
def submitted(gangplane_up: Up) -> Up:
    """Both jobs submitted at once, so their environments build (and the jobs run) side by side; each test
    then follows its own job to the end."""
    assert RUNTIMES is not None
    for runtime, job in JOBS.items():
        gangplane_up.gp("apply", "-f", str(RUNTIMES / runtime))
        gangplane_up.gp("apply", "-f", str(job))
    return gangplane_up


def test_jax_two_processes_allgather(submitted: Up) -> None:
    gangplane_up = submitted
    ran = gangplane_up.run_job(EXAMPLES / "jax" / "distributed.yaml")
    assert "trainjob/jax-allgather Complete" in ran.stdout, ran.stdout + ran.stderr
    lines = sorted(
        set(re.findall(r"jax process \d of \d: .*", gangplane_up.gp("logs", "trainjob/jax-allgather").stdout))
    )
    assert lines == [
        "jax process 0 of 2: 2 devices, gathered [0, 1]",
        "jax process 1 of 2: 2 devices, gathered [0, 1]",
    ]


def test_xgboost_two_workers_share_a_tracker(submitted: Up) -> None:
    gangplane_up = submitted
    ran = gangplane_up.run_job(EXAMPLES / "xgboost" / "distributed.yaml")
    assert "trainjob/xgboost-collective Complete" in ran.stdout, ran.stdout + ran.stderr
    logs = gangplane_up.gp("logs", "trainjob/xgboost-collective").stdout
    lines = sorted(set(re.findall(r"xgboost worker \d of \d: .*", logs)))
    assert lines == [
        "xgboost worker 0 of 2: allreduce [3.0], 10 rounds",
        "xgboost worker 1 of 2: allreduce [3.0], 10 rounds",
    ]
