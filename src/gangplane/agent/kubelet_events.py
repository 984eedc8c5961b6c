"""The kubelet's events about a pod's containers (``pkg/kubelet/events``): reasons, messages, and which
restarts to report as ``BackOff`` (pure apart from the recorder they are written through)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangplane.agent import pod_state as ps
from gangplane.client.events import EventRecorder


def container_event(
    events: EventRecorder, pod: Mapping[str, Any], name: str, type_: str, reason: str, message: str
) -> None:
    """An event on the pod with the container as ``fieldPath`` (``spec.containers{main}``)."""
    spec = pod.get("spec") or {}
    inits = {str(c.get("name")) for c in spec.get("initContainers") or []}
    where = f"spec.initContainers{{{name}}}" if name in inits else f"spec.containers{{{name}}}"
    events.event({**pod, "apiVersion": "v1", "kind": "Pod"}, type_, reason, message, where)


def backoffs_to_report(
    spec: ps.Spec, run: ps.PodRun, reported: Mapping[str, int], now: float
) -> list[tuple[str, int]]:
    """(container, restart count) of each container now waiting out a back-off not yet reported."""
    out = []
    for name, record in run.containers.items():
        at = ps.restart_at(spec, run, record)
        if at is None or at <= now or record.backoff <= 0 or reported.get(name) == record.restart_count:
            continue
        out.append((name, record.restart_count))
    return out


def backoff_message(pod: Mapping[str, Any], name: str) -> str:
    meta = pod.get("metadata") or {}
    target = f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"
    return f"Back-off restarting failed container {name} in pod {target}"
