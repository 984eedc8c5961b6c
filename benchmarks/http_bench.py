"""HTTP API benchmark: creates/s over HTTPS and watch-event latency seen by an HTTP watcher.

Baseline (stated target, issue #3): >= 500 HTTP creates/s and p99 watch delivery < 20 ms after the write, on
the 2-core CI machine. The server runs in a thread over the SQLite store (WAL); one keep-alive client creates
ConfigMaps sequentially, each create acknowledged only after its commit. Not a timed test: run it by hand,
``.venv/bin/python benchmarks/http_bench.py [N]``.
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

from gangplane.server.lifecycle import make_server
from gangplane.store.sqlite import SqliteStore

BASE = "/api/v1/namespaces/default/configmaps"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(state: Path) -> tuple[httpx2.Client, object, SqliteStore]:
    store = SqliteStore(state / "store.db")
    port = _free_port()
    server = make_server(state, store, port=port)
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    token = (state / "token").read_text().strip()
    client = httpx2.Client(
        base_url=f"https://127.0.0.1:{port}",
        verify=str(state / "tls.crt"),
        headers={"Authorization": f"Bearer {token}"},
    )
    return client, server, store


def _create(client: httpx2.Client, name: str) -> float:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}
    response = client.post(BASE, json=body)
    response.raise_for_status()
    return time.perf_counter()


def _watch_latencies(client: httpx2.Client, sent: dict[str, float], count: int, out: list[float]) -> None:
    with client.stream("GET", BASE, params={"watch": "1", "resourceVersion": "0"}, timeout=60) as stream:
        for line in stream.iter_lines():
            event = json.loads(line)
            name = event["object"]["metadata"]["name"]
            if name in sent:
                out.append(time.perf_counter() - sent[name])
            if len(out) >= count:
                return


def main(n: int = 1000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        client, server, store = _start(Path(tmp))
        start = time.perf_counter()
        for i in range(n):
            _create(client, f"bench-{i}")
        rate = n / (time.perf_counter() - start)
        sent: dict[str, float] = {}
        latencies: list[float] = []
        watcher = threading.Thread(target=_watch_latencies, args=(client, sent, 200, latencies))
        watcher.start()
        time.sleep(0.5)
        for i in range(200):
            sent[f"watched-{i}"] = time.perf_counter()
            _create(client, f"watched-{i}")
            time.sleep(0.005)
        watcher.join(30)
        q = statistics.quantiles(latencies, n=100)
        print(f"{'HTTP creates/s (SQLite, HTTPS)':36} {rate:10.0f}   target >= 500   ratio {rate / 500:.2f}")
        print(f"{'watch latency p50 (ms)':36} {q[49] * 1000:10.2f}")
        print(
            f"{'watch latency p99 (ms)':36} {q[98] * 1000:10.2f}   target < 20    ratio {20 / (q[98] * 1000):.2f}"
        )
        server.should_exit = True  # type: ignore[attr-defined]
        store.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
