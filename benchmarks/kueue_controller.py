"""Cost of the embedded Kueue controller's passes over a memory store. Not a test.

Setup: ``--workloads`` standalone Workloads (default 10,000; 1 cpu each, no owner) spread over 20 ClusterQueues of
``--quota`` cpu (default 100), so 2,000 are admitted and the rest wait, parked as inadmissible, as after any busy
period; waitForPodsReady off (these Workloads have no pods), or with ``--pods-ready`` on with its default 30-minute
timeout, which the benchmark never reaches: every admitted Workload then waits for its pods, with a deadline; plus
``max(--heads)`` spare ClusterQueues with free quota and no workload. The reconciler is marked as registered
(its changes come from informer events), and events are delivered by calling its handlers, as an informer
would.

Measured:
- **idle pass**: nothing changed since the last pass (target: <= 2 ms at 10,000 workloads);
- **cycle with K heads**: K new Workloads, one in each of K spare ClusterQueues, arrive as events; one pass reads
  them, runs the cycle (K heads, all admitted) and writes their status and the queues' status. The cost per
  head should stay flat as K grows (linear in heads considered, not in the 10,000 Workloads present).

**Through the API** (``--through-api``): a real control plane (``python -m gangplane.cluster``, what ``gangplane
up`` starts, default cluster config) in its own process; this process creates the same queues and ``--workloads``
Workloads over HTTPS (4 clients), waits until the ClusterQueues account for all of them, then reads the control
plane process's CPU time over ``--idle-seconds`` (default 30) of nothing happening. The same measure on a fresh
control plane with no Kueue objects at all is the baseline: the difference is what the idle embedded Kueue costs
with that many Workloads (heartbeats, informers and the other controllers run in both).

Usage: ``.venv/bin/python benchmarks/kueue_controller.py [--workloads N] [--quota CPU] [--pods-ready]
[--heads 10 40 160] [--repeat R]``, or ``... --through-api [--workloads N] [--idle-seconds S]``.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import psutil

from gangplane.client.kube import KubeStore
from gangplane.clock import ManualClock
from gangplane.cluster.launch import start_background, stop
from gangplane.schedulers.kueue.controller import CYCLE_KEY, KueueReconciler
from gangplane.schedulers.kueue.podsready import WaitForPodsReady
from gangplane.schedulers.kueue.state import KueueConfig
from gangplane.store import catalog
from gangplane.store.memory import MemoryStore

KUEUE = "kueue.x-k8s.io/v1beta2"
NS = "bench"
QUEUES = 20


def _cluster_queue(name: str, cpu: int) -> dict[str, Any]:
    group = {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [
        {"name": "cpu", "nominalQuota": cpu}]}]}  # fmt: skip
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"namespaceSelector": {}, "resourceGroups": [group]}}  # fmt: skip


def _local_queue(name: str) -> dict[str, Any]:
    return {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": name, "namespace": NS},
            "spec": {"clusterQueue": name}}  # fmt: skip


def _workload(name: str, queue: str) -> dict[str, Any]:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
    pod_set = {"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}
    return {"apiVersion": KUEUE, "kind": "Workload", "metadata": {"name": name, "namespace": NS},
            "spec": {"queueName": queue, "podSets": [pod_set]}}  # fmt: skip


def _settle(reconciler: KueueReconciler, clock: ManualClock) -> None:
    """Pass until only far wake-ups are left (a waitForPodsReady deadline is half an hour away)."""
    for _ in range(50):
        result = reconciler.reconcile(CYCLE_KEY)
        if result.requeue_after is None or result.requeue_after > 60:
            return
        clock.advance(result.requeue_after)


def build(workloads: int, spare: int, quota: int = 100, pods_ready: bool = False) -> tuple[
        MemoryStore, ManualClock, KueueReconciler]:  # fmt: skip
    clock = ManualClock(1_800_000_000)
    store = MemoryStore(clock=clock)
    store.create(catalog.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    store.create(catalog.RESOURCE_FLAVORS, {"apiVersion": KUEUE, "kind": "ResourceFlavor",
                                            "metadata": {"name": "default"}})  # fmt: skip
    for i in range(QUEUES):
        store.create(catalog.CLUSTER_QUEUES, _cluster_queue(f"cq-{i}", quota))
        store.create(catalog.LOCAL_QUEUES, _local_queue(f"cq-{i}"))
    for i in range(spare):
        store.create(catalog.CLUSTER_QUEUES, _cluster_queue(f"spare-{i}", 1))
        store.create(catalog.LOCAL_QUEUES, _local_queue(f"spare-{i}"))
    for i in range(workloads):
        store.create(catalog.WORKLOADS, _workload(f"wl-{i}", f"cq-{i % QUEUES}"))
    # Standalone Workloads have no pods: waitForPodsReady would evict them all after its timeout.
    reconciler = KueueReconciler(store, clock, config=KueueConfig(WaitForPodsReady(enabled=pods_ready)))
    reconciler.changes.watched = True  # as after register(): passes go by events
    _settle(reconciler, clock)
    return store, clock, reconciler


# ---------------------------------------------------------------- through the API


def _api(state: Path, url: str) -> KubeStore:
    token = (state / "token").read_text().strip()
    http = httpx2.Client(base_url=url, verify=str(state / "tls.crt"), timeout=60,
                         headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    return KubeStore(http)


def _create_all(state: Path, url: str, workloads: int, clients: int = 4) -> None:
    with _api(state, url) as api:
        api.create(catalog.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        api.create(catalog.RESOURCE_FLAVORS, {"apiVersion": KUEUE, "kind": "ResourceFlavor",
                                              "metadata": {"name": "default"}})  # fmt: skip
        for i in range(QUEUES):
            api.create(catalog.CLUSTER_QUEUES, _cluster_queue(f"cq-{i}", 100))
            api.create(catalog.LOCAL_QUEUES, _local_queue(f"cq-{i}"))

    def create(first: int) -> None:
        with _api(state, url) as api:
            for i in range(first, workloads, clients):
                api.create(catalog.WORKLOADS, _workload(f"wl-{i}", f"cq-{i % QUEUES}"))

    threads = [threading.Thread(target=create, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _accounted(state: Path, url: str) -> int:
    """Workloads the ClusterQueues' status counts (pending + admitted)."""
    with _api(state, url) as api:
        statuses = [cq.get("status") or {} for cq in api.list(catalog.CLUSTER_QUEUES).items]
    return sum((s.get("pendingWorkloads") or 0) + (s.get("admittedWorkloads") or 0) for s in statuses)


def _idle_cpu(pid: int, seconds: float) -> float:
    """The process's CPU seconds (user + system, threads included) per wall second over ``seconds``."""
    process = psutil.Process(pid)
    before = process.cpu_times()
    time.sleep(seconds)
    after = process.cpu_times()
    return (after.user - before.user + after.system - before.system) / seconds


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def api_idle(workloads: int, seconds: float) -> tuple[float, float]:
    """(idle CPU share of a control plane without Kueue objects, of one holding ``workloads`` Workloads)."""
    shares = []
    for count in (0, workloads):
        with tempfile.TemporaryDirectory() as tmp:
            state = Path(tmp)
            started = start_background(state, port=_free_port(), timeout=60)
            assert started.url is not None and started.pid is not None
            try:
                if count:
                    t0 = time.perf_counter()
                    _create_all(state, started.url, count)
                    while _accounted(state, started.url) < count:
                        time.sleep(1)
                    print(f"{count} Workloads created and accounted in {time.perf_counter() - t0:.0f} s")
                time.sleep(5)  # let the last status writes and informer resyncs settle
                shares.append(_idle_cpu(started.pid, seconds))
            finally:
                stop(state)
    return shares[0], shares[1]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--heads", type=int, nargs="+", default=[10, 40, 160])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--quota", type=int, default=100, help="cpu of each of the 20 ClusterQueues")
    parser.add_argument("--pods-ready", action="store_true", help="waitForPodsReady on (default timeout)")
    parser.add_argument("--through-api", action="store_true", help="idle CPU of a real control plane process")
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    args = parser.parse_args()
    if args.through_api:
        empty, full = api_idle(args.workloads, args.idle_seconds)
        print(f"control plane idle CPU over {args.idle_seconds:.0f} s: {empty:.1%} without Kueue objects, "
              f"{full:.1%} with {args.workloads} Workloads ({full - empty:+.1%} for the embedded Kueue)")  # fmt: skip
        return
    started = time.perf_counter()
    store, _, reconciler = build(args.workloads, max(args.heads), args.quota, args.pods_ready)
    admitted = sum(len(a) for a in reconciler.core.admitted.values())
    print(f"setup: {args.workloads} workloads ({admitted} admitted) in {time.perf_counter() - started:.1f} s")

    idle = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        reconciler.reconcile(CYCLE_KEY)
        idle.append(time.perf_counter() - t0)
    print(f"idle pass: median {_ms(statistics.median(idle))}, max {_ms(max(idle))} (target <= 2 ms)")

    for round_, heads in enumerate(args.heads):
        for i in range(heads):
            obj = store.create(catalog.WORKLOADS, _workload(f"new-{round_}-{i}", f"spare-{i}"))
            reconciler.changes.workload(obj)
        t0, cpu0 = time.perf_counter(), time.process_time()
        reconciler.reconcile(CYCLE_KEY)
        took, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        admitted_now = sum(1 for i in range(heads) if f"{NS}/new-{round_}-{i}" in reconciler.core.admitted.get(
            f"spare-{i}", {}))  # fmt: skip
        print(f"cycle with {heads:4d} heads: {_ms(took)} total ({_ms(cpu)} CPU), {_ms(took / heads)} per head "
              f"({admitted_now} admitted)")  # fmt: skip
        for i in range(heads):  # free the spare queues for the next round
            store.delete(catalog.WORKLOADS, NS, f"new-{round_}-{i}")
            reconciler.changes.mark(f"{NS}/new-{round_}-{i}")
        reconciler.reconcile(CYCLE_KEY)


if __name__ == "__main__":
    main()
