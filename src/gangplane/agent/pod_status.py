"""The pod ``status`` a node reports, rendered from its ``PodRun`` (pure).

Shapes follow the kubelet's ``generateAPIPodStatus`` (``kubelet_pods.go``): phase, the ``Initialized`` /
``ContainersReady`` / ``Ready`` conditions (``PodScheduled`` and conditions other writers own are kept),
``initContainerStatuses`` / ``containerStatuses`` with ``state`` and ``lastState``, ``startTime``, the pod and
host IPs, and ``qosClass``. A running container is ready unless its readiness or startup probe says otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangplane.agent.names import LOCALHOST
from gangplane.agent.pod_state import (
    TERMINAL,
    ContainerRecord,
    Phase,
    PodRun,
    Spec,
    Termination,
    initialized,
    pod_phase,
    will_restart,
)
from gangplane.api.pod_defaults import qos_class
from gangplane.clock import rfc3339

OWNED_CONDITIONS = ("Initialized", "ContainersReady", "Ready")


def pod_status(pod: Mapping[str, Any], spec: Spec, run: PodRun, now: float) -> dict[str, Any]:
    """The full status to write; fields and conditions this node does not own are carried over."""
    old = dict(pod.get("status") or {})
    phase = pod_phase(spec, run)
    status: dict[str, Any] = {key: value for key, value in old.items() if key not in ("reason", "message")}
    status |= {
        "phase": str(phase),
        "conditions": conditions(old.get("conditions") or [], spec, run, phase, now),
        "hostIP": LOCALHOST,
        "hostIPs": [{"ip": LOCALHOST}],
        "podIP": LOCALHOST,
        "podIPs": [{"ip": LOCALHOST}],
        "startTime": old.get("startTime") or rfc3339(run.start_time),
        "containerStatuses": [_container(pod, spec, run, n) for n in spec.regular],
        "qosClass": qos_class(pod),
    }
    if spec.init:
        status["initContainerStatuses"] = [_container(pod, spec, run, n) for n in spec.init]
    if run.failure is not None:
        status["reason"], status["message"] = run.failure
    return status


# --- conditions -------------------------------------------------------------------------------------------


def conditions(
    old: list[dict[str, Any]], spec: Spec, run: PodRun, phase: Phase, at: float
) -> list[dict[str, Any]]:
    """Owned conditions recomputed (transition times kept while the status holds); others kept as they are."""
    now = rfc3339(at)
    kept = [c for c in old if c.get("type") not in OWNED_CONDITIONS]
    if not any(c.get("type") == "PodScheduled" for c in kept):
        kept.insert(0, _condition("PodScheduled", True, "", "", now))
    new = [_initialized(spec, run, now), *_ready(spec, run, phase, now)]
    previous = {c.get("type"): c for c in old}
    return [*kept, *(_keep_transition(c, previous.get(c["type"])) for c in new)]


def _condition(type_: str, ok: bool, reason: str, message: str, now: str) -> dict[str, Any]:
    condition: dict[str, Any] = {
        "type": type_,
        "status": "True" if ok else "False",
        "lastProbeTime": None,
        "lastTransitionTime": now,
    }
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _keep_transition(new: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    if old is not None and old.get("status") == new["status"] and old.get("lastTransitionTime"):
        return {**new, "lastTransitionTime": old["lastTransitionTime"]}
    return new


def _initialized(spec: Spec, run: PodRun, now: str) -> dict[str, Any]:
    if initialized(spec, run):
        return _condition("Initialized", True, "", "", now)
    pending = [n for n in spec.init if not _init_complete(spec, run.containers[n])]
    message = f"containers with incomplete status: [{' '.join(pending)}]"
    return _condition("Initialized", False, "ContainersNotInitialized", message, now)


def _init_complete(spec: Spec, record: ContainerRecord) -> bool:
    return record.running if record.name in spec.sidecars else record.succeeded


def _ready(spec: Spec, run: PodRun, phase: Phase, now: str) -> list[dict[str, Any]]:
    unready = [n for n in (*sorted(spec.sidecars), *spec.regular) if not _up(run.containers[n])]
    if not unready and phase not in TERMINAL:
        return [_condition(t, True, "", "", now) for t in ("ContainersReady", "Ready")]
    reason = "PodCompleted" if phase in TERMINAL else "ContainersNotReady"
    message = "" if phase in TERMINAL else f"containers with unready status: [{' '.join(unready)}]"
    return [_condition(t, False, reason, message, now) for t in ("ContainersReady", "Ready")]


# --- container statuses -----------------------------------------------------------------------------------


def _container(pod: Mapping[str, Any], spec: Spec, run: PodRun, name: str) -> dict[str, Any]:
    record = run.containers[name]
    state, last = _states(pod, spec, run, record)
    status: dict[str, Any] = {
        "name": name,
        "image": spec.images.get(name, ""),
        "imageID": "",
        "ready": _ready_container(spec, record),
        "started": record.running,
        "restartCount": record.restart_count,
        "state": state,
        "lastState": last,
    }
    if record.pid is not None:
        status["containerID"] = f"process://{record.pid}"
    return status


def _ready_container(spec: Spec, record: ContainerRecord) -> bool:
    if record.name in spec.init and record.name not in spec.sidecars:
        return record.succeeded
    return _up(record)


def _up(record: ContainerRecord) -> bool:
    """Running and, where probes decide it, ready."""
    return record.running and record.probe_ready


def _states(
    pod: Mapping[str, Any], spec: Spec, run: PodRun, record: ContainerRecord
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``state`` and ``lastState``; a container waiting out its back-off shows its exit as ``lastState``."""
    last = _terminated(record.last) if record.last else {}
    if record.running and record.started_at is not None:
        return {"running": {"startedAt": rfc3339(record.started_at)}}, last
    if record.terminated is not None and will_restart(spec, run, record):
        return {"waiting": _back_off(pod, record)}, _terminated(record.terminated)
    if record.terminated is not None:
        return _terminated(record.terminated), last
    return {"waiting": _waiting(spec, run, record)}, last


def _terminated(ended: Termination) -> dict[str, Any]:
    body: dict[str, Any] = {"exitCode": ended.exit_code, "reason": ended.reason}
    if ended.started_at is not None:
        body["startedAt"] = rfc3339(ended.started_at)
    body["finishedAt"] = rfc3339(ended.finished_at)
    if ended.message:
        body["message"] = ended.message
    if ended.signal is not None:
        body["signal"] = ended.signal
    return {"terminated": body}


def _back_off(pod: Mapping[str, Any], record: ContainerRecord) -> dict[str, str]:
    if record.backoff <= 0:
        return {"reason": "ContainerCreating"}
    meta = pod.get("metadata") or {}
    target = f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"
    message = f"back-off {go_duration(record.backoff)} restarting failed container={record.name} pod={target}"
    return {"reason": "CrashLoopBackOff", "message": message}


def _waiting(spec: Spec, run: PodRun, record: ContainerRecord) -> dict[str, str]:
    if record.waiting_reason:
        return {"reason": record.waiting_reason, "message": record.waiting_message}
    first_pending = next((n for n in spec.init if not _init_complete(spec, run.containers[n])), None)
    creating = record.name == first_pending or (record.name in spec.regular and initialized(spec, run))
    return {"reason": "ContainerCreating" if creating else "PodInitializing"}


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration`` string for whole seconds: ``10s``, ``1m20s``, ``5m0s``."""
    whole = int(seconds)
    minutes, rest = divmod(whole, 60)
    return f"{minutes}m{rest}s" if minutes else f"{rest}s"
