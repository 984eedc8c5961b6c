"""The agent's prober: one thread that runs the due probes of every running container (``probes.py``) and
tells the agent when a verdict changes; the agent applies verdicts in its reconcile pass (``verdicts``).

Results are kept per container instance (pod uid, container name) and dropped when the instance ends, so
a restarted container starts probing afresh, as the kubelet's prober workers do.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gangplane.agent.probes import Probe, ProbeState, Verdicts, active, decide, due, record, run_probe
from gangplane.client.events import EventRecorder
from gangplane.client.informer import Key
from gangplane.clock import Clock

_log = logging.getLogger(__name__)
_NAMES = {"startupProbe": "Startup", "livenessProbe": "Liveness", "readinessProbe": "Readiness"}


@dataclass
class Target:
    """One running container instance with probes."""

    key: Key
    pod: Mapping[str, Any]
    container: Mapping[str, Any]
    probes: list[Probe]
    started_at: float
    env: Mapping[str, str]
    cwd: Path
    pid: int
    in_namespace: bool  # exec probes enter the container's mount namespace
    states: dict[str, ProbeState] = field(default_factory=dict)


def gates_readiness(probes: list[Probe]) -> bool:
    return any(p.kind in ("readinessProbe", "startupProbe") for p in probes)


def restart_message(name: str, kind: str) -> str:
    return f"Container {name} failed {_NAMES[kind].lower()} probe, will be restarted"


class Prober:
    def __init__(
        self, clock: Clock, events: EventRecorder, changed: Callable[[Key], None], interval: float = 0.25
    ) -> None:
        self._clock, self._events, self._changed, self._interval = clock, events, changed, interval
        self._targets: dict[tuple[str, str], Target] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="prober", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def watch(self, uid: str, name: str, target: Target) -> None:
        with self._lock:
            self._targets[(uid, name)] = target

    def forget(self, uid: str, name: str) -> None:
        with self._lock:
            self._targets.pop((uid, name), None)

    def verdicts(self, uid: str, name: str) -> Verdicts | None:
        """What the probes decide for this instance now; None when it has no probes."""
        with self._lock:
            target = self._targets.get((uid, name))
            return None if target is None else decide(target.probes, dict(target.states))

    def _loop(self) -> None:
        while not self._stopped.wait(self._interval):
            with self._lock:
                targets = list(self._targets.values())
            for target in targets:
                try:
                    self._probe(target)
                except Exception:  # a probe that breaks is a failed probe, never a dead prober
                    _log.exception("probing %s failed", target.key)

    def _probe(self, target: Target) -> None:
        changed = False
        for probe in active(target.probes, target.states):
            state = target.states.get(probe.kind, ProbeState())
            if not due(probe, state, target.started_at, self._clock.now()):
                continue
            ok, message = run_probe(probe, target.container, target.env, target.cwd, self._wrap(target))
            new = record(probe, state, ok, message, self._clock.now())
            if not ok:
                self._event(target, "Unhealthy", f"{_NAMES[probe.kind]} probe failed: {message}")
            with self._lock:
                target.states[probe.kind] = new
            changed |= new.verdict != state.verdict
        if changed:
            self._changed(target.key)

    def _wrap(self, target: Target) -> list[str]:
        if target.in_namespace and shutil.which("nsenter"):
            return ["nsenter", "--target", str(target.pid), "--mount", "--"]
        return []

    def _event(self, target: Target, reason: str, message: str) -> None:
        name = str(target.container.get("name"))
        pod = {**target.pod, "apiVersion": "v1", "kind": "Pod"}
        self._events.event(pod, "Warning", reason, message, f"spec.containers{{{name}}}")
