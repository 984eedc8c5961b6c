"""Container probes as the kubelet's prober runs them (``pkg/kubelet/prober``): what a probe is, when it is
due, how results add up to a verdict (pure), and running one probe against a local process (I/O).

- ``startupProbe`` runs first; until it succeeds neither liveness nor readiness runs, and its failure past
  ``failureThreshold`` restarts the container;
- ``livenessProbe`` failing ``failureThreshold`` times in a row restarts the container (event ``Unhealthy``,
  then ``Killing``: "Container main failed liveness probe, will be restarted");
- ``readinessProbe`` decides the container's ``ready`` (and so the pod's ``Ready``): not ready until it
  succeeds ``successThreshold`` times, unready after ``failureThreshold`` failures.

Defaults follow ``SetDefaults_Probe``: period 10 s, timeout 1 s, success 1, failure 3, initial delay 0.
``exec`` runs in the container's environment and working directory; ``httpGet`` (2xx/3xx succeed) and
``tcpSocket`` go to 127.0.0.1 (``host`` is ignored: every pod is local); named ports resolve through the
container's ``ports``. ``grpc`` probes are not supported and count as failures.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gangplane.agent.names import LOCALHOST

KINDS = ("startupProbe", "livenessProbe", "readinessProbe")


@dataclass(frozen=True, slots=True)
class Probe:
    kind: str  # startupProbe | livenessProbe | readinessProbe
    handler: Mapping[str, Any]
    initial_delay: float = 0.0
    period: float = 10.0
    timeout: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3


def probes_of(container: Mapping[str, Any]) -> list[Probe]:
    out = []
    for kind in KINDS:
        given = container.get(kind)
        if not isinstance(given, dict):
            continue
        handler = {k: v for k, v in given.items() if k in ("exec", "httpGet", "tcpSocket", "grpc")}
        out.append(Probe(
            kind, handler,
            initial_delay=float(given.get("initialDelaySeconds") or 0),
            period=float(given.get("periodSeconds") or 10),
            timeout=float(given.get("timeoutSeconds") or 1),
            success_threshold=int(given.get("successThreshold") or 1),
            failure_threshold=int(given.get("failureThreshold") or 3),
        ))  # fmt: skip
    return out


@dataclass(frozen=True, slots=True)
class ProbeState:
    """Consecutive results and the verdict; ``verdict`` None until the thresholds decide."""

    successes: int = 0
    failures: int = 0
    verdict: bool | None = None
    last_run: float | None = None
    message: str = ""


def due(probe: Probe, state: ProbeState, started_at: float, now: float) -> bool:
    if now < started_at + probe.initial_delay:
        return False
    return state.last_run is None or now - state.last_run >= probe.period


def record(probe: Probe, state: ProbeState, ok: bool, message: str, now: float) -> ProbeState:
    """One result: the verdict flips after ``successThreshold`` successes or ``failureThreshold`` failures
    in a row (the prober's ``resultRun`` counting)."""
    successes, failures = (state.successes + 1, 0) if ok else (0, state.failures + 1)
    verdict = state.verdict
    if ok and successes >= probe.success_threshold:
        verdict = True
    elif not ok and failures >= probe.failure_threshold:
        verdict = False
    return ProbeState(successes, failures, verdict, now, message)


@dataclass(frozen=True, slots=True)
class Verdicts:
    """What the probes of one running container decide now."""

    ready: bool
    restart: str = ""  # non-empty: the kind whose failure restarts the container


def decide(probes: Sequence[Probe], states: Mapping[str, ProbeState]) -> Verdicts:
    kinds = {p.kind: states.get(p.kind, ProbeState()) for p in probes}
    startup = kinds.get("startupProbe")
    if startup is not None and startup.verdict is not True:
        return Verdicts(False, "startupProbe" if startup.verdict is False else "")
    liveness = kinds.get("livenessProbe")
    if liveness is not None and liveness.verdict is False:
        return Verdicts(False, "livenessProbe")
    readiness = kinds.get("readinessProbe")
    return Verdicts(readiness is None or readiness.verdict is True)


def active(probes: Sequence[Probe], states: Mapping[str, ProbeState]) -> list[Probe]:
    """The probes that run now: only the startup probe until it has succeeded."""
    startup = next((p for p in probes if p.kind == "startupProbe"), None)
    if startup is not None and states.get("startupProbe", ProbeState()).verdict is not True:
        return [startup]
    return [p for p in probes if p.kind != "startupProbe"]


# --- running one probe (I/O) ------------------------------------------------------------------------------


def _port(value: Any, container: Mapping[str, Any]) -> int:
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return int(value)
    for port in container.get("ports") or []:
        if port.get("name") == value:
            return int(port["containerPort"])
    raise ValueError(f"port {value!r} not found in the container's ports")


def run_probe(
    probe: Probe,
    container: Mapping[str, Any],
    env: Mapping[str, str],
    cwd: Path,
    prefix: Sequence[str] = (),
) -> tuple[bool, str]:
    """Run the probe once: (succeeded, message for the ``Unhealthy`` event). ``prefix`` wraps an exec
    probe's command (``nsenter`` into the container's mount namespace)."""
    handler = probe.handler
    try:
        if "exec" in handler:
            command = [*prefix, *(str(w) for w in handler["exec"].get("command") or [])]
            return _exec(command, env, cwd, probe.timeout)
        if "httpGet" in handler:
            return _http(handler["httpGet"], container, probe.timeout)
        if "tcpSocket" in handler:
            port = _port(handler["tcpSocket"].get("port"), container)
            with socket.create_connection((LOCALHOST, port), timeout=probe.timeout):
                return True, ""
    except (OSError, ValueError, subprocess.SubprocessError) as err:
        return False, str(err)
    return False, f"unsupported probe handler {sorted(handler)}"


def _exec(command: list[str], env: Mapping[str, str], cwd: Path, timeout: float) -> tuple[bool, str]:
    try:
        done = subprocess.run(command, env=dict(env), cwd=cwd if cwd.is_dir() else None, capture_output=True,
                              timeout=timeout, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return False, f"command timed out after {timeout:g}s"
    output = (done.stdout + done.stderr).decode(errors="replace").strip()
    return done.returncode == 0, output


def _http(get: Mapping[str, Any], container: Mapping[str, Any], timeout: float) -> tuple[bool, str]:
    scheme = str(get.get("scheme") or "HTTP").lower()
    url = f"{scheme}://{LOCALHOST}:{_port(get.get('port'), container)}{get.get('path') or '/'}"
    request = urllib.request.Request(
        url, headers={h["name"]: h["value"] for h in get.get("httpHeaders") or []}
    )
    try:
        with contextlib.closing(urllib.request.urlopen(request, timeout=timeout)) as response:
            code = int(response.status)
    except urllib.error.HTTPError as err:
        code = err.code
    if 200 <= code < 400:
        return True, ""
    return False, f"HTTP probe failed with statuscode: {code}"


__all__ = [
    "KINDS",
    "Probe",
    "ProbeState",
    "Verdicts",
    "active",
    "decide",
    "due",
    "probes_of",
    "record",
    "run_probe",
]
