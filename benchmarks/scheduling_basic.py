"""Scheduling throughput through the API, shaped like kube-scheduler's scheduler_perf *SchedulingBasic*.

    .venv/bin/python benchmarks/scheduling_basic.py [--nodes 5000] [--pods 10000] [--clients 8]
        [--gangs] [--idle 30]

The control plane is the real process ``gangplane up`` runs (``python -m gangplane.cluster``: HTTPS API
server, SQLite store, controllers and the embedded schedulers), started with a cluster config of no agent
nodes. Through its API this script registers ``--nodes`` ``Node`` objects with no agent behind them (``POST``
then ``PATCH status``, as scheduler_perf and kubemark do; scheduler_perf's node-default: 4 CPUs, 32 GiB, 110
pods), then ``--clients`` concurrent clients create ``--pods`` plain pods (its pod-default; ``--gangs``: gangs
of 8 with a Coscheduling PodGroup each, ``minMember`` 8) while a watch records when each pod first carries
``spec.nodeName``. Each client is an OS process with one keep-alive HTTPS connection (``http.client``, as
``api_throughput.py``), and the watch is a process of its own: 8 threads of this process sharing its GIL
were a core's worth of client work on a 2-core machine, and set the rate before the control plane did.
Pods/s is pods bound over the time from the first create to the last binding seen. Afterwards the server
process's CPU use is sampled over ``--idle`` seconds with nothing changing (target ≤ 2 % of a core).

Anchor: scheduler_perf SchedulingBasic/5000Nodes_10000Pods, CI threshold 680 pods/s (the 50,000-pod variant
810), performance-anchors.md §1.1. Target (issue #17): ≥ 2,000 pods/s for plain pods, ≥ 1,000 for gangs of 8.
Not a test: the numbers depend on the machine (this one: 2 shared cores; the server, its schedulers and
this script's clients compete for them).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import tempfile
import time
from functools import partial
from multiprocessing.connection import Connection as Pipe
from pathlib import Path

import http_bench  # benchmarks/ is the script's directory, so on sys.path
import httpx2
import psutil
from api_throughput import Connection, in_processes, pod
from api_throughput import register_nodes as register_share

from gangplane.cluster import launch

KUBE_ANCHOR = (680.0, 810.0)
TARGETS = {"plain": 2_000.0, "gangs": 1_000.0}
GANG = 8
NS = "/api/v1/namespaces/default"
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"


def _client(state: Path, url: str) -> httpx2.Client:
    client = http_bench._client(state, url)  # the same authenticated HTTPS client, with a long timeout
    client.timeout = httpx2.Timeout(120)
    return client


def register_nodes(state: Path, url: str, count: int, clients: int) -> float:
    """``count`` Nodes (scheduler_perf's node-default: 4 CPU, 32 GiB, 110 pods; Ready), each a POST then a
    PATCH of its status, from ``clients`` processes (``api_throughput.register_nodes`` each)."""
    started = time.monotonic()
    shares = [count // clients + (k < count % clients) for k in range(clients)]  # exactly ``count`` in all
    in_processes(lambda k: register_share(state, url, f"node-{k}", shares[k]), clients)
    return time.monotonic() - started


def _pod(name: str, group: str | None) -> bytes:
    doc = json.loads(pod(name))
    if group is not None:
        doc["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": group}
        doc["spec"]["schedulerName"] = "scheduler-plugins-scheduler"
    return json.dumps(doc).encode()


class BindWatch:
    """A watch on pods, in a process of its own, recording when each first carries ``spec.nodeName``
    (``time.monotonic``, the same clock in every process)."""

    def __init__(self, state: Path, url: str, expected: int) -> None:
        rv = (
            _client(state, url).get(f"{NS}/pods", params={"limit": "1"}).json()["metadata"]["resourceVersion"]
        )
        ctx = multiprocessing.get_context("fork")
        self._results, sender = ctx.Pipe(duplex=False)
        self._process = ctx.Process(target=_watch, args=(state, url, rv, expected, sender), daemon=True)
        self._process.start()
        self.bound: dict[str, float] = {}
        self.other_writes = 0  # pod updates that are not its binding (e.g. PodScheduled=False conditions)

    def wait(self, timeout: float) -> None:
        if self._results.poll(timeout):
            self.bound, self.other_writes = self._results.recv()
        self._process.kill()


def _watch(state: Path, url: str, rv: str, expected: int, results: Pipe) -> None:
    bound: dict[str, float] = {}
    other_writes = 0
    params = {"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "false"}
    with _client(state, url).stream("GET", f"{NS}/pods", params=params, timeout=None) as stream:
        for line in stream.iter_lines():
            event = json.loads(line)
            pod = event["object"]
            name, node_name = pod["metadata"]["name"], pod["spec"].get("nodeName")
            if node_name and name not in bound:
                bound[name] = time.monotonic()
                if len(bound) >= expected:
                    break
            elif event["type"] == "MODIFIED":
                other_writes += 1
    results.send((bound, other_writes))


def _create_share(state: Path, url: str, count: int, clients: int, gangs: bool, k: int) -> None:
    conn = Connection(state, url)
    if not gangs:
        for i in range(k, count, clients):
            conn.send("POST", f"{NS}/pods", _pod(f"pod-{i:06d}", None))
        return
    for g in range(k, count // GANG, clients):
        name = f"gang-{g:05d}"
        group = {"metadata": {"name": name}, "spec": {"minMember": GANG}}
        conn.send("POST", PODGROUPS, json.dumps(group).encode())
        for i in range(GANG):
            conn.send("POST", f"{NS}/pods", _pod(f"{name}-{i}", name))


def create_pods(state: Path, url: str, count: int, clients: int, gangs: bool) -> tuple[float, float]:
    """Create the pods (and PodGroups) from ``clients`` processes; returns when the first create started
    (``time.monotonic``) and the clients' CPU seconds."""
    before = _children_cpu()
    started = time.monotonic()
    in_processes(partial(_create_share, state, url, count, clients, gangs), clients)
    return started, _children_cpu() - before


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def server_cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def scheduler_writes(state: Path, url: str) -> str:
    """What the schedulers wrote besides bindings: Events (and the repeats counted on them)."""
    events = _client(state, url).get(f"{NS}/events").json()["items"]
    repeats = sum(int(e.get("count") or 1) for e in events)
    reasons: dict[str, int] = {}
    for e in events:
        reasons[e.get("reason", "")] = reasons.get(e.get("reason", ""), 0) + 1
    return f"{len(events)} Events ({repeats} with repeats; by reason {dict(sorted(reasons.items()))})"


def idle_cpu(pid: int, seconds: float) -> float:
    """The server process's CPU use over ``seconds``, as a fraction of one core."""
    process = psutil.Process(pid)
    before = process.cpu_times()
    time.sleep(seconds)
    after = process.cpu_times()
    return (after.user + after.system - before.user - before.system) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--gangs", action="store_true", help="gangs of 8 with Coscheduling PodGroups")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of idle CPU sampling after the run")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    kind = "gangs" if args.gangs else "plain"
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        config = state / "no-agents.yaml"
        config.write_text("nodeGroups: []\n")
        # the Nodes have no agent renewing a Lease: the node lifecycle would mark them Unknown 50 s after it
        # first saw them (as upstream does; scheduler_perf runs no kube-controller-manager) and taint them
        # all in the middle of the idle sample, so it is given a grace period longer than the run
        grace = ["--node-monitor-grace-period", "1h"]
        started = launch.start_background(
            state, port=http_bench._free_port(), extra_args=["--config", str(config), *grace]
        )
        assert started.url is not None and started.pid is not None
        try:
            cpu = server_cpu(started.pid)
            registration = register_nodes(state, started.url, args.nodes, args.clients)
            cpu = server_cpu(started.pid) - cpu
            print(
                f"{args.nodes} nodes registered (POST + PATCH status) in {registration:.1f}s "
                f"= {args.nodes / registration:.0f} nodes/s (target ≤ 5 s); server CPU "
                f"{cpu / max(args.nodes, 1) * 1e3:.2f} ms per node"
            )
            watch = BindWatch(state, started.url, args.pods // GANG * GANG if args.gangs else args.pods)
            cpu = server_cpu(started.pid)
            first, clients_cpu = create_pods(state, started.url, args.pods, args.clients, args.gangs)
            created = time.monotonic() - first
            watch.wait(args.timeout)
            cpu = server_cpu(started.pid) - cpu
            bound = len(watch.bound)
            last = max(watch.bound.values(), default=first)
            rate = bound / max(last - first, 1e-9)
            objects = args.pods + (args.pods // GANG if args.gangs else 0)
            print(
                f"{args.pods} {kind} pods created by {args.clients} clients in {created:.1f}s "
                f"= {objects / created:.0f} creates/s (PodGroups included)"
            )
            print(
                f"{bound} bound in {last - first:.1f}s = {rate:.0f} pods/s through the API "
                f"({rate / KUBE_ANCHOR[0]:.2f}× kube-scheduler's 680 pods/s floor; target {TARGETS[kind]:.0f})"
            )
            print(
                f"server CPU from the first create to the last binding: {cpu:.1f}s "
                f"({cpu / max(last - first, 1e-9) * 100:.0f}% of a core, {cpu / max(bound, 1) * 1e3:.2f} ms per "
                f"bound pod); pod writes besides bindings: {watch.other_writes}; "
                f"{scheduler_writes(state, started.url)}"
            )
            print(
                f"the {args.clients} client processes' CPU: {clients_cpu / max(objects, 1) * 1e3:.2f} ms per create"
            )
            if args.idle > 0:
                time.sleep(2.0)  # let the last status writes settle
                cpu = idle_cpu(started.pid, args.idle)
                print(
                    f"idle server CPU over {args.idle:.0f}s with {args.nodes} nodes and {bound} bound pods: "
                    f"{cpu * 100:.1f}% of a core (target ≤ 2 %)"
                )
        finally:
            launch.stop(state, timeout=60)


if __name__ == "__main__":
    main()
