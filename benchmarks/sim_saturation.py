"""Saturation: strict FIFO versus backfill with an always-full queue of Philly-sized gangs.

The experiment of performance-anchors.md §3 ("own estimate"): resample (num_gpus, duration) pairs from
philly_pollux.csv (gangs <= 64 GPUs, duration >= 60 s), submit them all at t = 0 so the queue never runs
dry, let the policy see a window of the first 50 waiting jobs, and measure the time-averaged GPU utilisation
until 80 % of the jobs have started. Anchor: 8 x 8 GPUs -> FIFO 0.64-0.67, greedy backfill 0.91-0.93;
16 x 4 -> 0.69-0.75 vs 0.93-0.95. gangplane's backfill is EASY (the head keeps a reservation), not greedy.

    .venv/bin/python benchmarks/sim_saturation.py [--jobs 40000] [--seeds 3] [--window 50]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.engine import simulate
from gangplane.simulator.jobs import JobSpec, pack_gang
from gangplane.simulator.metrics import busy_series, mean_busy
from gangplane.simulator.policies import EasyBackfill, PolicyOptions, StrictFifo
from gangplane.simulator.traces import load_philly

REPO = Path(__file__).resolve().parents[1]
SHAPES = ((8, 8), (16, 4))  # (nodes, GPUs per node): 64 GPUs either way


def find_trace() -> Path | None:
    env = os.environ.get("GANGPLANE_SHARED")
    for base in ([Path(env)] if env else []) + [REPO / "shared", REPO.parent / "shared"]:
        if (base / "traces" / "philly_pollux.csv").is_file():
            return base / "traces" / "philly_pollux.csv"
    return None


def philly_pool(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(GPUs, duration) of every Philly job with a gang of at most 64 GPUs lasting at least 60 s."""
    jobs = load_philly(path, gpus_per_node=64)
    pairs = np.array([(j.gpus, j.duration) for j in jobs if j.gpus <= 64 and j.duration >= 60])
    return pairs[:, 0].astype(np.int64), pairs[:, 1]


def resample(pool: tuple[np.ndarray, np.ndarray], count: int, seed: int, gpus_per_node: int) -> list[JobSpec]:
    picks = np.random.default_rng(seed).integers(0, len(pool[0]), count)
    return [
        JobSpec(i, 0.0, *pack_gang(int(pool[0][p]), gpus_per_node), float(pool[1][p]))
        for i, p in enumerate(picks.tolist())
    ]


def saturated_utilisation(
    jobs: list[JobSpec], policy_name: str, nodes: int, per_node: int, window: int
) -> float:
    cluster = uniform_cluster(nodes, per_node)
    options = PolicyOptions(backfill_window=window)
    policy = StrictFifo(cluster, options) if policy_name == "fifo" else EasyBackfill(cluster, options)
    result = simulate(jobs, policy, cluster)
    starts = np.sort([r.start for r in result.records if r.start is not None])
    until = float(starts[int(0.8 * len(jobs)) - 1])
    times, busy = busy_series(result.records)
    return mean_busy(times, busy, 0.0, until) / cluster.total_gpus


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--window", type=int, default=50)
    args = parser.parse_args()
    trace = find_trace()
    if trace is None:
        print("skipped: philly_pollux.csv not found (set GANGPLANE_SHARED to the folder holding traces/)")
        return 0
    pool = philly_pool(trace)
    print(
        f"pool: {len(pool[0])} Philly jobs (gang <= 64, duration >= 60 s); {args.jobs} jobs per run, "
        f"window {args.window}"
    )
    print(f"{'cluster':>8} {'seed':>4} {'fifo':>7} {'backfill':>9} {'wall s':>7}")
    for nodes, per_node in SHAPES:
        for seed in range(args.seeds):
            jobs = resample(pool, args.jobs, seed, per_node)
            began = time.perf_counter()
            fifo = saturated_utilisation(jobs, "fifo", nodes, per_node, args.window)
            backfill = saturated_utilisation(jobs, "backfill", nodes, per_node, args.window)
            wall = time.perf_counter() - began
            print(
                f"{nodes:>3} x {per_node:<2} {seed:>4} {fifo:>7.3f} {backfill:>9.3f} {wall:>7.1f}", flush=True
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
