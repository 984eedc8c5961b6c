"""The whole control plane, measured through the API (issue #17, item 6): what ``gangplane up`` costs idle
with a big cluster, how fast short-lived pods start, and how memory grows with finished TrainJobs.

Each measurement starts its own control plane (``python -m gangplane.cluster``, as ``gangplane up`` does) in a
fresh state directory and drives it over HTTPS from this process:

- ``idle``: 5,000 ``Node`` objects with no agent behind them (as scheduler_perf and kubemark have) and
  10,000 pods bound to them (``spec.nodeName`` set), then the control plane's CPU over 30 s in which nothing
  changes. Target: <= 2 % of one core.
- ``running``: 1,000 pods running ``sh -c 'sleep 0.2'`` (``restartPolicy: Never``) created as fast as 8
  clients can, on 4 agent nodes with room for all; a watch records when each pod is first seen ``Running``
  (or already ``Succeeded``). Reported: pods/s from the first create to the last pod started (target: >= 200
  pods/s), the control plane's CPU per pod in that time, and the store writes per pod until all have ended
  (the growth of the one resourceVersion, heartbeats included).
- ``memory``: the control plane's RSS idle, and after 1,000 TrainJobs (one node each, a command that exits
  at once) have all finished. Target: <= 1.5x idle.
- ``down``: 800 running pods (``sh -c 'sleep 600; :'``, two processes each) on 4 agent nodes, then
  ``gangplane down``: how long it takes and how many pod processes are left (found by the state directory's
  marker in ``/proc``). Target: 0 left.
- ``agents``: the node agents alone, in process over a memory store (no API server): 1,000 pods created
  already bound to 4 agents; the CPU per pod of every thread but the benchmark's own until all have ended.

Not a timed test: ``.venv/bin/python benchmarks/api_cluster.py idle|running|agents|memory|down [count]
[--agents process|inline]`` (where ``gangplane up`` runs the node agents; CPU counts the agents' process too).
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
from api_throughput import CLIENTS, PODS, Connection, free_port, in_parallel, register_nodes

from gangplane.agent import AgentPool, ClusterConfig, NodeGroup, proctable
from gangplane.agent.daemon import MODULE as AGENT_MODULE
from gangplane.agent.leftovers import CLUSTER_ENV, cluster_id
from gangplane.clock import WallClock
from gangplane.cluster import launch
from gangplane.store.catalog import NAMESPACES
from gangplane.store.catalog import PODS as POD_TYPE
from gangplane.store.memory import MemoryStore

AGENTS = """\
nodeGroups:
  - name: agent
    count: {count}
    namePrefix: agent-
    capacity: {{cpu: "1000", memory: 1000Gi, pods: "1000"}}
"""
RUNTIME = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "bench"},
    "spec": {
        "mlPolicy": {"numNodes": 1},
        "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"metadata": {"labels": {
            "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}}, "spec": {"template": {"spec": {
                "containers": [{"name": "node", "image": "busybox"}]}}}}}]}},
    },
}  # fmt: skip
WHERE: str | None = None  # `--agents process|inline`: where the node agents run (default: gangplane up's)


class ControlPlane:
    """``gangplane up`` over a temporary state directory with ``agents`` agent nodes."""

    def __init__(self, agents: int) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.state = Path(self._tmp.name)
        config = self.state / "cluster.yaml"
        config.write_text(AGENTS.format(count=agents))
        extra = ["--config", str(config), *(["--agents", WHERE] if WHERE else [])]
        started = launch.start_background(self.state, port=free_port(), extra_args=extra)
        assert started.url is not None and started.pid is not None
        self.url, self.process = started.url, psutil.Process(started.pid)

    def processes(self) -> list[psutil.Process]:
        """The control plane's own processes: the server and the node agents' process when they run apart
        (never the pods)."""
        return [self.process, *(p for p in self.process.children() if _runs(p, AGENT_MODULE))]

    def connection(self) -> Connection:
        return Connection(self.state, self.url)

    def close(self) -> None:
        launch.stop(self.state)
        self._tmp.cleanup()


def _runs(process: psutil.Process, module: str) -> bool:
    try:
        return module in process.cmdline()
    except psutil.Error:  # a pod that just ended (a zombie until reaped)
        return False


def _bound_pods(state: Path, url: str, prefix: str, n: int) -> None:
    conn = Connection(state, url)
    for i in range(n):
        container = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "10m"}}}
        spec = {"nodeName": f"node-{i % 5000}", "containers": [container]}
        conn.send("POST", PODS, json.dumps({"metadata": {"name": f"{prefix}-{i}"}, "spec": spec}).encode())


def idle(nodes: int = 5000, pods: int = 10_000, seconds: float = 30.0) -> None:
    plane = ControlPlane(agents=1)
    try:
        in_parallel(register_nodes, plane.state, plane.url, "node-", nodes)
        in_parallel(_bound_pods, plane.state, plane.url, "bound", pods)
        time.sleep(10)  # let controllers and the scheduler see everything once
        before = _cpu_seconds(plane.processes())
        time.sleep(seconds)
        busy = (_cpu_seconds(plane.processes()) - before) / seconds
        rss = plane.process.memory_info().rss / 2**20
    finally:
        plane.close()
    print(
        f"{'idle CPU, % of a core':40} {busy * 100:10.1f}   target <= 2      ratio {2 / max(busy * 100, 1e-9):.2f}"
    )
    print(f"{'RSS with them (MiB)':40} {rss:10.0f}   ({nodes} nodes, {pods} bound pods, {seconds:.0f} s)")


def _watch(conn: Connection, path: str) -> Iterator[dict[str, object]]:
    """The events of a watch on ``path`` (http.client undoes the chunked encoding)."""
    rv = json.loads(conn.send("GET", path, b""))["metadata"]["resourceVersion"]
    conn._conn.request("GET", f"{path}?watch=1&resourceVersion={rv}", headers=conn._headers)
    response = conn._conn.getresponse()
    while line := response.readline():
        yield json.loads(line)


def _short_pods(state: Path, url: str, prefix: str, n: int) -> None:
    conn = Connection(state, url)
    for i in range(n):
        container = {"name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 0.2"]}
        # Never: a short-lived pod ends Succeeded (as a Job's pods do) instead of restarting in a back-off loop
        spec = {"containers": [container], "restartPolicy": "Never", "terminationGracePeriodSeconds": 1}
        conn.send("POST", PODS, json.dumps({"metadata": {"name": f"{prefix}-{i}"}, "spec": spec}).encode())


def running(count: int = 1000) -> None:
    plane = ControlPlane(agents=4)
    started: dict[str, float] = {}
    finished: set[str] = set()
    total = count // CLIENTS * CLIENTS
    try:
        watcher = threading.Thread(
            target=_record_starts, args=(plane.connection(), total, started, finished), daemon=True
        )
        watcher.start()
        time.sleep(1)
        rv, began, cpu = _resource_version(plane), time.perf_counter(), _cpu_seconds(plane.processes())
        in_parallel(_short_pods, plane.state, plane.url, "short", total)
        created = time.perf_counter()
        while len(started) < total and watcher.is_alive() and time.perf_counter() - created < 600:
            time.sleep(0.01)
        used = _cpu_seconds(plane.processes()) - cpu
        watcher.join(120)  # every pod Succeeded (or Failed): its last writes are made
        time.sleep(1)  # the agents' writes after the last status (before graceful deletion: the finalizer)
        writes = _resource_version(plane) - rv
    finally:
        plane.close()
    last = max(started.values())
    rate = len(started) / (last - began)
    print(f"{'create -> Running, pods/s':40} {rate:10.1f}   target >= 200    ratio {rate / 200:.2f}")
    print(f"{'pods started / finished / created':40} {len(started):10d} / {len(finished)} / {total}")
    # Which bound the rate: the creates themselves (the last pod Running right after the last create) or the start
    print(f"{'creates took (s) / last Running after (s)':40} {created - began:10.1f} / {last - created:.1f}")
    # The control plane's own CPU (not the pods'): steadier than the rate on a shared machine.
    print(f"{'control-plane CPU per pod started (ms)':40} {used * 1000 / max(len(started), 1):10.1f}")
    print(f"{'control-plane CPU, % of a core':40} {used * 100 / (last - began):10.0f}")
    # Every store write bumps the one resourceVersion: pods, bindings, statuses, Events, Leases (heartbeats)
    print(f"{'store writes per pod, create to finished':40} {writes / total:10.2f}")


def agents_alone(count: int = 1000) -> None:
    """The node agents without the API server: 4 agents in this process over an in-process memory store,
    ``count`` short-lived pods created already bound to them; the CPU per pod of this process's other
    threads (the agents', the store's) until every pod has ended. The creates and the list every 0.2 s are
    left out: a list clones every pod, so counting them made a slower run look costlier per pod."""
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore()
        store.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
        group = NodeGroup(name="agent", count=4, capacity={"cpu": "1000", "pods": "1000"})
        pool = AgentPool(store, WallClock(), ClusterConfig(node_groups=[group]), Path(tmp) / "logs")
        pool.start()
        try:
            began, cpu, own = time.perf_counter(), time.process_time(), time.thread_time()
            for i in range(count):
                container = {"name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 0.2"]}
                spec = {"nodeName": f"agent-{i % 4}", "restartPolicy": "Never", "containers": [container]}
                store.create(POD_TYPE, {"metadata": {"name": f"p{i}", "namespace": "default"}, "spec": spec})
            while any(
                (p.get("status") or {}).get("phase") != "Succeeded" for p in store.list(POD_TYPE).items
            ):
                time.sleep(0.2)
            # this thread's creates and lists (a list clones every pod) are the benchmark's, not the agents'
            used = time.process_time() - cpu - (time.thread_time() - own)
            took = time.perf_counter() - began
        finally:
            pool.stop()
            store.close()
    print(
        f"{'agents alone: CPU per pod (ms)':40} {used * 1000 / count:10.2f}   ({count} pods ended in {took:.1f} s)"
    )


def _resource_version(plane: ControlPlane) -> int:
    """The store's resourceVersion now (a list's, which is the newest committed)."""
    listed = json.loads(plane.connection().send("GET", f"{PODS}?limit=1", b""))
    return int(listed["metadata"]["resourceVersion"])


def _cpu_seconds(processes: list[psutil.Process]) -> float:
    times = [p.cpu_times() for p in processes]  # without children_*: the pods are not the control plane
    return float(sum(t.user + t.system for t in times))


def _record_starts(conn: Connection, count: int, started: dict[str, float], finished: set[str]) -> None:
    """When each pod was first seen Running (or already ended); returns once ``count`` pods have ended."""
    for event in _watch(conn, PODS):
        obj = event["object"]
        assert isinstance(obj, dict)
        name, phase = obj["metadata"]["name"], (obj.get("status") or {}).get("phase")
        if phase in ("Running", "Succeeded", "Failed") and name not in started:
            started[name] = time.perf_counter()
        if phase in ("Succeeded", "Failed"):
            finished.add(name)
            if len(finished) >= count:
                return


def _trainjobs(state: Path, url: str, prefix: str, n: int) -> None:
    conn = Connection(state, url)
    path = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"
    for i in range(n):
        spec = {"runtimeRef": {"name": "bench"}, "trainer": {"command": ["true"]}}
        doc = {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": f"{prefix}-{i}"},
        }
        conn.send("POST", path, json.dumps({**doc, "spec": spec}).encode())


def memory(count: int = 1000) -> None:
    plane = ControlPlane(agents=4)
    try:
        conn = plane.connection()
        conn.send(
            "POST",
            "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes",
            json.dumps(RUNTIME).encode(),
        )
        time.sleep(5)
        idle_rss = plane.process.memory_info().rss
        total = count // CLIENTS * CLIENTS
        began, cpu = time.perf_counter(), _cpu_seconds(plane.processes())
        in_parallel(_trainjobs, plane.state, plane.url, "tj", total)
        finished = _wait_finished(conn, total, timeout=1800)
        took, used = time.perf_counter() - began, _cpu_seconds(plane.processes()) - cpu
        time.sleep(5)
        after_rss = plane.process.memory_info().rss
    finally:
        plane.close()
    ratio = after_rss / idle_rss
    print(f"{'RSS idle (MiB)':40} {idle_rss / 2**20:10.0f}")
    label = f"RSS after {finished} finished TrainJobs (MiB)"
    print(f"{label:40} {after_rss / 2**20:10.0f}   ratio {ratio:.2f} (target <= 1.5)")
    print(f"{'TrainJobs finished per second':40} {finished / took:10.1f}")
    # CPU, not wall time, compares runs on a shared machine: the control plane's own (not the pods').
    print(f"{'control-plane CPU per TrainJob (ms)':40} {used * 1000 / max(finished, 1):10.1f}")


def _wait_finished(conn: Connection, total: int, timeout: float) -> int:
    path = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"
    deadline, done = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        items = json.loads(conn.send("GET", path, b""))["items"]
        done = sum(1 for tj in items if _finished(tj))
        if done >= total:
            break
        time.sleep(2)
    return done


def _finished(trainjob: dict[str, object]) -> bool:
    conditions = (trainjob.get("status") or {}).get("conditions") or []  # type: ignore[union-attr]
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in conditions)


def _sleepers(state: Path, url: str, prefix: str, n: int) -> None:
    conn = Connection(state, url)
    for i in range(n):
        spec = {"containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 600; :"]}]}
        conn.send("POST", PODS, json.dumps({"metadata": {"name": f"{prefix}-{i}"}, "spec": spec}).encode())


def down(count: int = 800) -> None:
    plane = ControlPlane(agents=4)
    total = count // CLIENTS * CLIENTS

    def processes() -> list[int]:
        value = cluster_id(plane.state)
        return proctable.carrying(CLUSTER_ENV, [value]).get(value, [])

    try:
        in_parallel(_sleepers, plane.state, plane.url, "sleeper", total)
        deadline = time.monotonic() + 600
        while len(processes()) < 2 * total and time.monotonic() < deadline:
            time.sleep(1)
        running = len(processes())
        began = time.perf_counter()
        launch.stop(plane.state)
        took = time.perf_counter() - began
        left = len(processes())
        log = (plane.state / "server.log").read_text()
    finally:
        plane.close()
    print(f"{'pod processes running before down':40} {running:10d}   ({total} pods)")
    print(f"{'gangplane down took (s)':40} {took:10.1f}")
    print(f"{'pod processes left after down':40} {left:10d}   target 0")
    print(f"{'agents reported':40} {[line for line in log.splitlines() if 'stopped' in line][-1:]}")


if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--agents" in argv:
        at = argv.index("--agents")
        WHERE, argv = argv[at + 1], argv[:at] + argv[at + 2 :]
    which = argv[0] if argv else "idle"
    args = [int(a) for a in argv[1:]]
    {"idle": idle, "running": running, "agents": agents_alone, "memory": memory, "down": down}[which](*args)
