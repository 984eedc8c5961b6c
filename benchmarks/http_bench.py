"""HTTP API benchmark: creates/s over HTTPS and watch-event latency seen by an HTTP watcher.

Baseline (stated target, issue #3): >= 500 HTTP creates/s and p99 watch delivery < 20 ms after the write, on
the 2-core CI machine. The server is the real control-plane process (``python -m gangplane.server``, SQLite
WAL, HTTPS) and the clients run in this separate process, as kubectl and controllers do: ``CLIENTS``
keep-alive connections create ConfigMaps, each create acknowledged only after its commit. Watch latency is
measured with one writer at a steady pace (not under saturation, where any server queues).

Measured (2 cores, Python 3.11, 2026-12): 746 creates/s with 4 clients (418 with one); watch p50 4.3 ms,
p99 7.9 ms. Not a timed test: ``.venv/bin/python benchmarks/http_bench.py [N]``.
"""

from __future__ import annotations

import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx2

from gangplane.cluster import launch

BASE = "/api/v1/namespaces/default/configmaps"
CLIENTS = 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _client(state: Path, url: str) -> httpx2.Client:
    token = (state / "token").read_text().strip()
    return httpx2.Client(
        base_url=url, verify=str(state / "tls.crt"), headers={"Authorization": f"Bearer {token}"}
    )


def _creates(state: Path, url: str, prefix: str, n: int) -> None:
    client = _client(state, url)
    for i in range(n):
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{prefix}-{i}"},
            "data": {"k": "v"},
        }
        client.post(BASE, json=body).raise_for_status()


def creates_per_second(state: Path, url: str, n: int, clients: int) -> float:
    threads = [
        threading.Thread(target=_creates, args=(state, url, f"c{clients}x{k}", n // clients))
        for k in range(clients)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return (n // clients * clients) / (time.perf_counter() - started)


def watch_latencies(state: Path, url: str, count: int = 300) -> list[float]:
    sent: dict[str, float] = {}
    latencies: list[float] = []

    current = _client(state, url).get(BASE, params={"limit": "1"}).json()["metadata"]["resourceVersion"]

    def watch() -> None:
        params = {"watch": "1", "resourceVersion": current}  # only new events, not a replay of the list
        with _client(state, url).stream("GET", BASE, params=params, timeout=60) as stream:
            for line in stream.iter_lines():
                name = json.loads(line)["object"]["metadata"]["name"]
                if name in sent:
                    latencies.append(time.perf_counter() - sent[name])
                if len(latencies) >= count:
                    return

    watcher = threading.Thread(target=watch)
    watcher.start()
    time.sleep(0.5)
    writer = _client(state, url)
    for i in range(count):
        sent[f"watched-{i}"] = time.perf_counter()
        writer.post(BASE, json={"metadata": {"name": f"watched-{i}"}}).raise_for_status()
        time.sleep(0.005)
    watcher.join(30)
    return latencies


def main(n: int = 2000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        started = launch.start_background(state, port=_free_port(), module="gangplane.server")
        assert started.url is not None
        try:
            one = creates_per_second(state, started.url, n // 2, 1)
            many = creates_per_second(state, started.url, n, CLIENTS)
            q = statistics.quantiles(watch_latencies(state, started.url), n=100)
        finally:
            launch.stop(state)
    print(f"{'HTTP creates/s, 1 client':36} {one:10.0f}")
    print(f"{f'HTTP creates/s, {CLIENTS} clients':36} {many:10.0f}   target >= 500   ratio {many / 500:.2f}")
    print(f"{'watch latency p50 (ms)':36} {q[49] * 1000:10.2f}")
    print(
        f"{'watch latency p99 (ms)':36} {q[98] * 1000:10.2f}   target < 20    ratio {20 / (q[98] * 1000):.2f}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
