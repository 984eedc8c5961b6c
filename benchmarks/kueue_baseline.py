"""Kueue's baseline scheduling scenario, in virtual time over gangplane's pure Kueue core. Not a test.

Shape (kueue ``test/performance/scheduler/configs/baseline/generator.yaml``, performance-anchors.md §1.2):
5 cohorts x 6 ClusterQueues on one ResourceFlavor ``rf``, each ``nominalQuota: 20`` cpu, ``borrowingLimit: 100``,
``reclaimWithinCohort: Any``, ``withinClusterQueue: LowerPriority``, each with its own namespace and
LocalQueue; per ClusterQueue 350 small (1 cpu, 200 ms, priority 50, one per 100 ms), 100 medium (5 cpu,
500 ms, priority 100, one per 500 ms) and 50 large (20 cpu, 1 s, priority 200, one per 1.2 s) = 15,000
workloads, named as the generator names them. As in Kueue's runner, an admitted workload "runs" by
finishing ``runtime`` after admission (no pods); a preempted one runs again in full once readmitted.
Pass/fail limits are upstream's ``rangespec.yaml``: all done within 425 s, usage >= 50 %, mean time to
admission large <= 23 s, medium <= 90 s, small <= 260 s.

Differences from upstream's run, all from having no API server: time is virtual; each admission cycle costs
``--cycle-ms`` of it (default 0: an ideal scheduler bounded only by one head per ClusterQueue per cycle),
where upstream pays real API round trips (envtest) per admission and eviction; creation times are exact,
where the API server's have one-second precision (ties then go by UID); the generator's creating goroutines
are not modelled (every arrival happens exactly on time). Upstream (envtest) finishes in ~351 s; mean time
to admission: large ~16.5 s (6.7 s before SchedulingEquivalenceHashing), medium ~77 s, small ~215 s.

Usage: ``.venv/bin/python benchmarks/kueue_baseline.py [--cycle-ms N]``.
"""

from __future__ import annotations

import argparse
import heapq
import statistics
import time
from dataclasses import dataclass

from gangplane.api.scheduling.kueue import PreemptionPolicy
from gangplane.schedulers.kueue.cycle import run_cycle
from gangplane.schedulers.kueue.model import (
    ClusterQueueSpec,
    FlavorQuotas,
    FlavorSpec,
    PodSetRequest,
    Preemption,
    ResourceGroup,
    ResourceQuota,
    WorkloadRequest,
)
from gangplane.schedulers.kueue.podsready import WaitForPodsReady
from gangplane.schedulers.kueue.state import KueueConfig, KueueState

RESOURCE = "cpu"  # amounts in milli-cpu, as Kueue counts them
FLAVOR = "rf"  # the generator's default ResourceFlavor


@dataclass(frozen=True)
class WorkloadClass:
    name: str
    count: int
    units: int
    runtime: float
    priority: int
    interval: float


CLASSES = (
    WorkloadClass("small", 350, 1, 0.2, 50, 0.1),
    WorkloadClass("medium", 100, 5, 0.5, 100, 0.5),
    WorkloadClass("large", 50, 20, 1.0, 200, 1.2),
)


def _cluster_queue(name: str, cohort: str) -> ClusterQueueSpec:
    quota = {RESOURCE: ResourceQuota(20_000, borrowing_limit=100_000)}  # nominalQuota 20, borrowingLimit 100
    group = ResourceGroup((RESOURCE,), (FlavorQuotas(FLAVOR, quota),))
    preemption = Preemption(PreemptionPolicy.LOWER_PRIORITY, PreemptionPolicy.ANY)
    return ClusterQueueSpec(name, (group,), cohort, preemption=preemption)


def _arrivals(queues: list[str]) -> list[tuple[float, WorkloadRequest, WorkloadClass]]:
    """As the generator: each ClusterQueue has its own namespace and LocalQueue, both named after it;
    workload ``<class>-<set>-<i>-0`` of a set is created ``(i + 1) x creationIntervalMs`` after the start."""
    found = []
    for cq in queues:
        for set_index, cls in enumerate(CLASSES):
            for i in range(cls.count):
                created = (i + 1) * cls.interval
                name = f"{cls.name}-{set_index}-{i}-0"
                pod_set = PodSetRequest("main", 1, {RESOURCE: cls.units * 1000})
                request = WorkloadRequest(
                    f"{cq}/{name}", cq, cq, cq, (pod_set,), cls.priority, created, f"{cq}-{name}", cls.name
                )  # fmt: skip
                found.append((created, request, cls))
    return sorted(found, key=lambda a: (a[0], a[1].key))


@dataclass
class Run:
    virtual_seconds: float
    wall_seconds: float
    cpu_seconds: float
    cycles: int
    evictions: int
    wait_by_class: dict[str, float]
    usage_percent: float


def run(cycle_seconds: float) -> Run:
    state = KueueState(KueueConfig(WaitForPodsReady(enabled=False)))
    # the generator's names: cohort-<i>, and cq-<set>-<j>-<cohort> for its ClusterQueues
    queues = [f"cq-0-{q}-cohort-{c}" for c in range(5) for q in range(6)]
    state.configure([_cluster_queue(q, q.split("-", 3)[3]) for q in queues], [], [FlavorSpec(FLAVOR)], 0)
    arrivals = _arrivals(queues)
    runtime = {r.key: cls.runtime for _, r, cls in arrivals}
    units = {r.key: cls.units for _, r, cls in arrivals}
    events: list[tuple[float, int, str, str]] = []  # (time, seq, kind, key)
    seq = 0
    finish_generation: dict[str, int] = {}
    admitted_at: dict[str, float] = {}
    used_unit_seconds = 0.0
    now, cycles, evictions, next_arrival, done = 0.0, 0, 0, 0, 0
    started, cpu_started = time.perf_counter(), time.process_time()
    while done < len(arrivals):
        while next_arrival < len(arrivals) and arrivals[next_arrival][0] <= now:
            state.add_workload(arrivals[next_arrival][1], now)
            next_arrival += 1
        while events and events[0][0] <= now:
            _, _, _, key = heapq.heappop(events)
            if key.endswith(f"#{finish_generation.get(key.split('#')[0], -1)}"):
                wl_key = key.split("#")[0]
                state.finish_workload(wl_key, True, "", now)
                done += 1
        result = run_cycle(state, now)
        cycles += 1
        for w in result.admitted:
            admitted_at[w.key] = now
            generation = finish_generation.get(w.key, 0) + 1
            finish_generation[w.key] = generation
            used_unit_seconds += runtime[w.key] * units[w.key]
            seq += 1
            heapq.heappush(events, (now + runtime[w.key], seq, "finish", f"{w.key}#{generation}"))
        for eviction in result.evictions:
            evictions += 1
            unfinished = admitted_at[eviction.key] + runtime[eviction.key] - now
            used_unit_seconds -= unfinished * units[eviction.key]
            finish_generation[eviction.key] = finish_generation.get(eviction.key, 0) + 1
        if result.progressed:
            now += cycle_seconds
            continue
        upcoming = [t for t in (events[0][0] if events else None,
                                arrivals[next_arrival][0] if next_arrival < len(arrivals) else None,
                                state.next_wakeup()) if t is not None]  # fmt: skip
        now = max(now + cycle_seconds, min(upcoming)) if upcoming else now + cycle_seconds
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    waits: dict[str, list[float]] = {}
    for created, request, cls in arrivals:
        waits.setdefault(cls.name, []).append(admitted_at[request.key] - created)
    capacity = 20 * len(queues) * now
    return Run(now, wall, cpu, cycles, evictions, {k: statistics.fmean(v) for k, v in waits.items()},
               100 * used_unit_seconds / capacity)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycle-ms", type=float, default=0.0, help="virtual time one admission cycle costs")
    args = parser.parse_args()
    result = run(args.cycle_ms / 1000)
    print(f"virtual time to finish all 15,000: {result.virtual_seconds:.1f} s (Kueue ~351 s, limit 425 s)")
    print(f"wall time: {result.wall_seconds:.1f} s (CPU {result.cpu_seconds:.1f} s)")
    print(f"cycles: {result.cycles}; evictions: {result.evictions}")
    print(f"average usage: {result.usage_percent:.1f} % of nominal")
    for name, wait in result.wait_by_class.items():
        print(f"mean time to admission, {name}: {wait:.2f} s")


if __name__ == "__main__":
    main()
