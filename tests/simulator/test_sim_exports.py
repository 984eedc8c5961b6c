"""The simulator's public surface, pinned."""

from __future__ import annotations

import gangplane.simulator as simulator

EXPECTED = [
    "Bounds", "ClusterSpec", "Comparison", "FailureModel", "JobRecord", "JobSpec", "NodeSpec", "Outcome",
    "QueueSpec", "Scenario", "Segment", "SimResult", "Simulation", "Summary", "TraceFormat", "Violation",
    "check", "generate", "load_scenario", "load_trace", "lower_bounds", "pack_gang", "run_policies", "simulate",
    "summarise", "uniform_cluster",
]  # fmt: skip


def test_all_is_pinned() -> None:
    assert simulator.__all__ == EXPECTED
    assert all(hasattr(simulator, name) for name in EXPECTED)


def test_importing_the_package_does_not_load_matplotlib() -> None:
    import subprocess
    import sys

    code = "import sys, gangplane.simulator; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
