"""Through-the-API throughput, measured like the anchor: creates/s from 8 concurrent HTTPS clients, and the
time to register 5,000 nodes with ``POST`` + ``PATCH status`` (issue #17, items 3 and 6).

The server is the real API-server process (``python -m gangplane.server``: SQLite WAL, HTTPS, admission),
started in the background as ``gangplane up`` starts it. Each client is its own OS process holding one
keep-alive HTTPS connection (``http.client``, the cheapest client Python has, so the clients leave the
server as much of the machine as they can); every request is acknowledged only after its commit.

Targets (issue #17, on the 2-core machine): >= 3,000 pod creates/s from 8 clients; 5,000 nodes registered
(POST + PATCH status each) in <= 5 s. kube-apiserver is not measured here; the anchor is SchedulingBasic's
create rate (performance-anchors.md §1.1), which assumes the API server is not the bottleneck.

Beside the rates it prints the server process's CPU time per request (user + system, from ``psutil``) and
its event-loop thread's (where all of a request's Python work runs), the client processes' (``RUSAGE_CHILDREN``),
the create rate these allow on 2 otherwise idle cores (their sum over both cores, and the loop thread on one),
and the load average: on a shared machine the rates follow the load, the CPU per request much less.

Not a timed test: ``.venv/bin/python benchmarks/api_throughput.py [pods] [nodes]``.
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import os
import resource
import socket
import ssl
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from gangplane.cluster import launch

CLIENTS = 8
CORES = 2  # the machine the targets are set for: server and clients share its two cores
PODS = "/api/v1/namespaces/default/pods"
NODES = "/api/v1/nodes"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Connection:
    """One keep-alive HTTPS connection with the control plane's token; raises on any non-2xx answer."""

    def __init__(self, state: Path, url: str) -> None:
        parts = urlsplit(url)
        context = ssl.create_default_context(cafile=str(state / "tls.crt"))
        self._conn = http.client.HTTPSConnection(parts.hostname or "", parts.port, context=context)
        token = (state / "token").read_text().strip()
        self._headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def send(self, method: str, path: str, body: bytes, content_type: str = "application/json") -> bytes:
        headers = {**self._headers, "Content-Type": content_type}
        try:
            self._conn.request(method, path, body, headers)
            response = self._conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self._conn.close()  # the server closed a connection left idle (keep-alive timeout): reconnect once
            self._conn.request(method, path, body, headers)
            response = self._conn.getresponse()
        data = response.read()
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: {response.status} {data[:300]!r}")
        return data


def pod(name: str) -> bytes:
    """A SchedulingBasic pod (scheduler_perf's pod-default.yaml: one container, small requests)."""
    container = {"name": "pause", "image": "registry.k8s.io/pause:3.10", "resources": _requests()}
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}
    return json.dumps(doc).encode()


def _requests() -> dict[str, dict[str, str]]:
    return {"requests": {"cpu": "100m", "memory": "500Mi"}, "limits": {"cpu": "100m", "memory": "500Mi"}}


def node(name: str) -> tuple[bytes, bytes]:
    """scheduler_perf's node-default.yaml, registered as a kubelet does: the object, then its status."""
    capacity = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    doc = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
    }
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "kubelet is posting ready status",
    }
    status = {"status": {"capacity": capacity, "allocatable": capacity, "conditions": [ready]}}
    return json.dumps(doc).encode(), json.dumps(status).encode()


def _create_pods(state: Path, url: str, prefix: str, n: int) -> None:
    conn = Connection(state, url)
    for i in range(n):
        conn.send("POST", PODS, pod(f"{prefix}-{i}"))


def register_nodes(state: Path, url: str, prefix: str, n: int) -> None:
    conn = Connection(state, url)
    for i in range(n):
        name = f"{prefix}-{i}"
        doc, status = node(name)
        conn.send("POST", NODES, doc)
        conn.send("PATCH", f"{NODES}/{name}/status", status, "application/merge-patch+json")


def in_parallel(target: Callable[..., object], state: Path, url: str, prefix: str, total: int) -> float:
    """Seconds for ``CLIENTS`` processes to do ``total`` items between them (started before the clock)."""
    each = total // CLIENTS
    started = time.perf_counter()
    in_processes(lambda k: target(state, url, f"{prefix}{k}", each), CLIENTS)
    return time.perf_counter() - started


def in_processes(work: Callable[[int], object], clients: int) -> None:
    """``work(k)`` in ``clients`` forked OS processes (k = 0 .. clients - 1); raises if one fails. Processes,
    not threads: threads of one Python process share one core and its GIL, so the clients, not the server,
    would set the rate."""
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=work, args=(k,)) for k in range(clients)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            raise RuntimeError(f"a client failed (exit {proc.exitcode})")


def _cpu_seconds(server: psutil.Process) -> float:
    """The server process's CPU time so far (user + system): what a request costs it, which a loaded
    shared machine changes far less than the wall-clock rate."""
    times = server.cpu_times()
    return float(times.user + times.system)


def _loop_cpu_seconds(server: psutil.Process) -> float:
    """CPU time so far of the server's main thread, the event loop: every request's work runs there, so one
    over its CPU per create bounds the rate however idle the other core is."""
    main = next(t for t in server.threads() if t.id == server.pid)
    return float(main.user_time + main.system_time)


def _clients_cpu_seconds() -> float:
    """CPU time of the client processes that have exited and been joined so far (user + system)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def measure(state: Path, url: str, pid: int, pods: int, nodes: int) -> dict[str, float]:
    server = psutil.Process(pid)
    _create_pods(state, url, "warm", 200)  # first requests pay for imports and caches
    cpu, clients, loop = _cpu_seconds(server), _clients_cpu_seconds(), _loop_cpu_seconds(server)
    pod_seconds = in_parallel(_create_pods, state, url, "p", pods)
    pod_cpu, cpu = _cpu_seconds(server) - cpu, _cpu_seconds(server)
    pod_loop = _loop_cpu_seconds(server) - loop
    pod_clients, clients = _clients_cpu_seconds() - clients, _clients_cpu_seconds()
    node_seconds = in_parallel(register_nodes, state, url, "node-", nodes)
    node_cpu = _cpu_seconds(server) - cpu
    created, registered = pods // CLIENTS * CLIENTS, nodes // CLIENTS * CLIENTS
    return {
        "creates_per_s": created / pod_seconds,
        "create_cpu_ms": 1000 * pod_cpu / created,
        "create_loop_ms": 1000 * pod_loop / created,
        "create_clients_ms": 1000 * pod_clients / created,
        "nodes_s": node_seconds,
        "node_cpu_ms": 1000 * node_cpu / registered,
        "node_clients_ms": 1000 * (_clients_cpu_seconds() - clients) / registered,
    }


def main(pods: int = 10_000, nodes: int = 5_000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        started = launch.start_background(state, port=free_port(), module="gangplane.server")
        assert started.url is not None and started.pid is not None
        try:
            result = measure(state, started.url, started.pid, pods, nodes)
        finally:
            launch.stop(state)
    rate, seconds = result["creates_per_s"], result["nodes_s"]
    load = os.getloadavg()[0]
    print(
        f"{f'pod creates/s, {CLIENTS} HTTPS clients':40} {rate:10.0f}   target >= 3000   ratio {rate / 3000:.2f}"
    )
    print(
        f"{f'{nodes} nodes POST + PATCH status (s)':40} {seconds:10.2f}   target <= 5     ratio {5 / seconds:.2f}"
    )
    print(f"{'server CPU per create (ms)':40} {result['create_cpu_ms']:10.3f}")
    print(f"{'  of it the event loop thread (ms)':40} {result['create_loop_ms']:10.3f}")
    print(f"{'server CPU per node, POST + PATCH (ms)':40} {result['node_cpu_ms']:10.3f}")
    print(f"{'clients CPU per create (ms)':40} {result['create_clients_ms']:10.3f}")
    print(f"{'clients CPU per node (ms)':40} {result['node_clients_ms']:10.3f}")
    per_create = (result["create_cpu_ms"] + result["create_clients_ms"]) / 1000
    bound = min(CORES / per_create, 1000 / result["create_loop_ms"])
    print(
        f"{f'creates/s {CORES} idle cores could give':40} {bound:10.0f}   (server + clients CPU, the loop's)"
    )
    print(f"{'load average (1 min) at the end':40} {load:10.2f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
