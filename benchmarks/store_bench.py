"""Store benchmark: SQLite creates/s, list latency at 10,000 objects, watch-event latency. Not a test.

Every create is its own committed transaction (WAL, synchronous=NORMAL) and is durable against a process crash
when it returns; nothing is batched. Targets: >= 3,000 creates/s; watch-event p99 < 20 ms.

Baseline (2 CPU cores, Python 3.11, SQLite WAL on local disk, 2026-12):
sqlite 5,100 creates/s; memory 13,000 creates/s; list of 10,000 objects 153 ms (50 ms with a label selector
matching 1,000); watch-event latency p50 0.2 ms, p99 0.3 ms.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from pathlib import Path

from gangplane.store import ListOptions, MemoryStore, ResourceType, SqliteStore
from gangplane.store.core import ObjectStore

POD = ResourceType("", "v1", "Pod", "pods")
N_OBJECTS = 10_000
N_WATCH_EVENTS = 2_000


def pod(i: int) -> dict[str, object]:
    labels = {"app": f"app-{i % 10}", "team": "ml"}
    spec = {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "1"]}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p{i}", "namespace": "bench", "labels": labels},
        "spec": spec,
    }


def bench_creates(store: ObjectStore) -> float:
    started = time.perf_counter()
    for i in range(N_OBJECTS):
        store.create(POD, pod(i))
    return N_OBJECTS / (time.perf_counter() - started)


def bench_list(store: ObjectStore, options: ListOptions, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        store.list(POD, options)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def bench_watch(store: ObjectStore) -> tuple[float, float]:
    """Latency from just before ``update`` is called to the watcher receiving the event."""
    sent: dict[int, float] = {}
    latencies: list[float] = []
    watch = store.watch(POD, resource_version=store.list(POD, ListOptions(limit=1)).resource_version)

    def read() -> None:
        for event in watch:
            latencies.append(time.perf_counter() - sent[int(event.object["metadata"]["labels"]["seq"])])
            if len(latencies) == N_WATCH_EVENTS:
                return

    reader = threading.Thread(target=read)
    reader.start()
    for seq in range(N_WATCH_EVENTS):
        obj = pod(seq % 100)
        obj["metadata"]["labels"]["seq"] = str(seq)  # type: ignore[index]
        sent[seq] = time.perf_counter()
        store.update(POD, obj)
        time.sleep(0.0005)
    reader.join(timeout=30)
    watch.close()
    ordered = sorted(latencies)
    return ordered[len(ordered) // 2] * 1000, ordered[int(len(ordered) * 0.99)] * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SqliteStore(Path(tmp) / "bench.db")
        rows = [("sqlite creates/s", bench_creates(sqlite), ">= 3000")]
        rows.append(("list 10k (ms)", bench_list(sqlite, ListOptions()), ""))
        rows.append(
            ("list 10k label-selected (ms)", bench_list(sqlite, ListOptions(label_selector="app=app-3")), "")
        )
        p50, p99 = bench_watch(sqlite)
        rows += [("watch p50 (ms)", p50, ""), ("watch p99 (ms)", p99, "< 20")]
        sqlite.close()
    memory = MemoryStore()
    rows.insert(1, ("memory creates/s", bench_creates(memory), ""))
    memory.close()
    print(f"{'metric':<30} {'value':>12} {'target':>10}")
    for name, value, target in rows:
        print(f"{name:<30} {value:>12.1f} {target:>10}")


if __name__ == "__main__":
    main()
