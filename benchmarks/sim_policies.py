"""Every simulator policy on the whole Philly trace: wall time, CPU time, peak RSS and how far it got.

Target (issue #21): each of the six policies replays all 82,247 jobs on 64 x 8 GPUs in <= 120 s on a 2-core
machine with <= 1 GiB peak RSS. Each policy runs in its own process (so RSS is its own) and is stopped at
``--budget`` seconds of wall time (a timer in its process); a stopped run reports the jobs it settled by then
(counted in steps of 1,024), which is how far it got, not a rate to extrapolate (cost per job grows with the
queue).

    .venv/bin/python benchmarks/sim_policies.py [--budget 120] [--policy kai ...] [--vc ee9e8c]
        [--research] [--jobs N]

``--research`` adds conservative backfill, LAS, SRTF and DRF; ``--jobs N`` replays only the first N jobs
(e.g. half the trace, to check that cost grows linearly).

Baseline: the targets above. Not a test; it may run for budget x policies.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sim_philly import find_trace  # benchmarks/ is the script's directory, so on the path

from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.engine import simulate
from gangplane.simulator.policies import PolicyOptions, default_registry
from gangplane.simulator.policies.base import policy_preemption
from gangplane.simulator.traces import load_philly

POLICIES = ("fifo", "backfill", "coscheduling", "volcano", "kai", "kueue")
RESEARCH = ("conservative", "las", "srtf", "drf")
WALL_TARGET_S = 120.0
RSS_TARGET_MIB = 1024.0


class OutOfBudget(BaseException):
    """Raised from the budget timer to stop a replay. Not an ``Exception``: the scheduler loop's pass turns
    any ``Exception`` of a cycle into a pending reason and carries on, which would swallow the stop."""


@dataclass(frozen=True)
class Run:
    policy: str
    jobs: int
    settled: int
    wall: float
    cpu: float
    rss_mib: float
    finished: bool


def replay(
    trace: Path, policy: str, budget: float, vc: str | None, first: int | None, queue: multiprocessing.Queue
) -> None:
    jobs = load_philly(trace, gpus_per_node=8, vc=vc)[:first]
    cluster = uniform_cluster(64 if vc is None else 16, 8).with_queues(sorted({j.queue for j in jobs}))
    began, began_cpu = time.perf_counter(), time.process_time()
    settled = [0]

    def progress(done: int) -> None:
        settled[0] = done

    def stop(*_: object) -> None:
        raise OutOfBudget

    signal.signal(signal.SIGALRM, stop)  # this process is the replay's own (forked), so the alarm is ours
    signal.setitimer(signal.ITIMER_REAL, budget)
    try:
        instance = default_registry()[policy](cluster, PolicyOptions())
        model = policy_preemption(
            instance, PolicyOptions()
        )  # las and srtf checkpoint, as the CLI replays them
        simulate(jobs, instance, cluster, progress=progress, preemption=model)
        finished = True
    except OutOfBudget:
        finished = False
    signal.setitimer(signal.ITIMER_REAL, 0)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    wall, cpu = time.perf_counter() - began, time.process_time() - began_cpu
    queue.put(Run(policy, len(jobs), settled[0], wall, cpu, rss, finished))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--policy", action="append", help=f"policy (repeatable; default {', '.join(POLICIES)})"
    )
    parser.add_argument("--budget", type=float, default=WALL_TARGET_S, help="wall seconds per policy")
    parser.add_argument("--vc", help="one Philly virtual cluster on 16 x 8 GPUs instead of the whole trace")
    parser.add_argument("--research", action="store_true", help=f"also {', '.join(RESEARCH)}")
    parser.add_argument("--jobs", type=int, help="replay only the first N jobs")
    args = parser.parse_args()
    trace = find_trace()
    if trace is None:
        print("skipped: philly_pollux.csv not found (set GANGPLANE_SHARED to the folder holding traces/)")
        return 0
    context = multiprocessing.get_context("fork")
    print(f"{'policy':<14}{'settled':>16}{'wall s':>9}{'CPU s':>8}{'RSS MiB':>9}  within target")
    for policy in args.policy or POLICIES + (RESEARCH if args.research else ()):
        queue: multiprocessing.Queue = context.Queue()
        child = context.Process(target=replay, args=(trace, policy, args.budget, args.vc, args.jobs, queue))
        child.start()
        run: Run = queue.get()
        child.join()
        share = f"{run.settled:,}/{run.jobs:,}" if not run.finished else f"all {run.jobs:,}"
        ok = run.finished and run.wall <= WALL_TARGET_S and run.rss_mib <= RSS_TARGET_MIB
        print(
            f"{run.policy:<14}{share:>16}{run.wall:>9.1f}{run.cpu:>8.1f}{run.rss_mib:>9,.0f}  "
            f"{'yes' if ok else 'no'}",
            flush=True,
        )
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall depends on load; CPU does not)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
