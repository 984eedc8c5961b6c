"""Probes: the prober's result counting and verdicts (cases after ``pkg/kubelet/prober/worker_test.go``
``TestSuccessThreshold``/``TestFailureThreshold``; the startup gating from the pod-lifecycle docs), and real probes
on the agent: an exec readiness probe gates Ready, a failing liveness probe restarts the container."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

from agent.conftest import pod, python, wait_for
from gangplane.agent import AgentPool
from gangplane.agent import probes as pr
from gangplane.store.base import ListOptions
from gangplane.store.catalog import EVENTS, PODS
from gangplane.store.memory import MemoryStore

PoolFactory = Callable[..., AgentPool]


def run(probe: pr.Probe, results: list[bool]) -> list[bool | None]:
    state, verdicts = pr.ProbeState(), []
    for i, ok in enumerate(results):
        state = pr.record(probe, state, ok, "", float(i))
        verdicts.append(state.verdict)
    return verdicts


def test_success_threshold() -> None:
    probe = pr.Probe("readinessProbe", {}, success_threshold=3, failure_threshold=1)
    assert run(probe, [True, True, True, False, True]) == [None, None, True, False, False]


def test_failure_threshold() -> None:
    probe = pr.Probe("livenessProbe", {}, success_threshold=1, failure_threshold=3)
    assert run(probe, [False, False, True, False, False, False]) == [None, None, True, True, True, False]


def test_startup_probe_gates_liveness_and_readiness() -> None:
    given = {"startupProbe": {"exec": {"command": ["true"]}}, "livenessProbe": {"tcpSocket": {"port": 1}},
             "readinessProbe": {"httpGet": {"port": 2}}}  # fmt: skip
    probes = pr.probes_of(given)
    assert [p.kind for p in pr.active(probes, {})] == ["startupProbe"]
    assert pr.decide(probes, {}) == pr.Verdicts(ready=False)
    failed = pr.ProbeState(verdict=False)
    assert pr.decide(probes, {"startupProbe": failed}).restart == "startupProbe"
    started = {"startupProbe": pr.ProbeState(verdict=True)}
    assert [p.kind for p in pr.active(probes, started)] == ["livenessProbe", "readinessProbe"]
    assert pr.decide(probes, {**started, "readinessProbe": pr.ProbeState(verdict=True)}) == pr.Verdicts(True)
    assert pr.decide(probes, {**started, "livenessProbe": failed}).restart == "livenessProbe"


def test_defaults_and_initial_delay() -> None:
    (probe,) = pr.probes_of({"livenessProbe": {"exec": {"command": ["true"]}, "initialDelaySeconds": 5}})
    assert (probe.period, probe.timeout, probe.success_threshold, probe.failure_threshold) == (10, 1, 1, 3)
    assert not pr.due(probe, pr.ProbeState(), started_at=100, now=104)
    assert pr.due(probe, pr.ProbeState(), started_at=100, now=105)
    assert not pr.due(probe, pr.ProbeState(last_run=105), started_at=100, now=110)


def test_tcp_and_http_probes_against_local_ports(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        ok, _ = pr.run_probe(pr.Probe("readinessProbe", {"tcpSocket": {"port": "web"}}),
                             {"ports": [{"name": "web", "containerPort": port}]}, {}, tmp_path)  # fmt: skip
        assert ok
    closed, message = pr.run_probe(
        pr.Probe("livenessProbe", {"httpGet": {"port": port, "path": "/h"}}), {}, {}, tmp_path
    )
    assert not closed and message


def ready(store: MemoryStore, name: str) -> bool | None:
    status = store.get(PODS, "default", name).get("status") or {}
    cond = next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), None)
    return None if cond is None else cond["status"] == "True"


def test_exec_readiness_probe_gates_ready(store: MemoryStore, make_pool: PoolFactory, tmp_path: Path) -> None:
    make_pool()
    flag = tmp_path / "ready-flag"
    code = f"import pathlib, time; time.sleep(1); pathlib.Path({str(flag)!r}).touch(); time.sleep(60)"
    probe = {"exec": {"command": ["test", "-f", str(flag)]}, "periodSeconds": 1}
    store.create(PODS, pod("gated", python("main", code, readinessProbe=probe)))
    wait_for(
        lambda: store.get(PODS, "default", "gated").get("status", {}).get("phase") == "Running",
        what="running",
    )
    assert ready(store, "gated") is False
    wait_for(lambda: ready(store, "gated"), timeout=15, what="ready after the probe passes")


def test_failing_liveness_probe_restarts_the_container(store: MemoryStore, make_pool: PoolFactory) -> None:
    make_pool()
    probe = {"tcpSocket": {"port": 1}, "periodSeconds": 1, "failureThreshold": 1}
    store.create(PODS, pod("sick", python("main", "import time; time.sleep(60)", livenessProbe=probe)))

    def restarted() -> bool:
        statuses = (store.get(PODS, "default", "sick").get("status") or {}).get("containerStatuses") or []
        return bool(statuses) and statuses[0]["restartCount"] >= 1

    wait_for(restarted, timeout=20, what="a liveness restart")
    events = {e["reason"]: e for e in store.list(EVENTS, ListOptions(namespace="default")).items}
    assert events["Unhealthy"]["message"].startswith("Liveness probe failed: ")
    assert any(e["message"] == "Container main failed liveness probe, will be restarted"
               for e in store.list(EVENTS, ListOptions(namespace="default")).items)  # fmt: skip
