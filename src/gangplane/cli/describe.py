"""Pure ``describe`` text: metadata, spec and status as indented fields, conditions and events as tables,
and for a TrainJob its phase, why it waits, the gang and each node (pod).

Field names are shown as kubectl shows unstructured objects: ``runtimeRef`` becomes ``Runtime Ref``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from gangplane.cli.jobstatus import TrainJobSummary, conditions
from gangplane.cli.printers import align
from gangplane.clock import parse_rfc3339
from gangplane.server.tables import human_duration
from gangplane.store.base import Object, ResourceType

_INDENT = "  "
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def title(key: str) -> str:
    """``runtimeRef`` -> ``Runtime Ref``; keys that are not identifiers (label keys) stay as they are."""
    if not key.isalnum():
        return key
    words = _CAMEL.sub(" ", key).split(" ")
    return " ".join(w[:1].upper() + w[1:] for w in words)


def _scalar(value: Any) -> str:
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def field_lines(value: Any, depth: int = 0) -> list[str]:
    """A nested value as kubectl describe prints unstructured fields."""
    pad = _INDENT * depth
    lines: list[str] = []
    if isinstance(value, dict):
        width = max((len(title(str(k))) for k in value), default=0) + 1
        for key, item in value.items():
            label = f"{title(str(key))}:"
            if isinstance(item, dict | list) and item:
                lines.append(f"{pad}{label}")
                lines += field_lines(item, depth + 1)
            else:
                shown = _scalar(item) if item not in ({}, []) else "<none>"
                lines.append(f"{pad}{label.ljust(width)}  {shown}")
    elif isinstance(value, list):
        for item in value:
            nested = field_lines(item, depth + 1)
            if nested:  # the first line of each item carries the dash, the rest align after it
                nested[0] = f"{pad}- {nested[0].lstrip()}"
            lines += nested
    else:
        lines.append(f"{pad}{_scalar(value)}")
    return lines


def _pairs(mapping: Any) -> list[str]:
    return [f"{k}={v}" for k, v in (mapping or {}).items()] or ["<none>"]


def ago(timestamp: Any, now: float) -> str:
    return (
        human_duration(now - parse_rfc3339(timestamp))
        if isinstance(timestamp, str) and timestamp
        else "<unknown>"
    )


def _header(rt: ResourceType, obj: Object, now: float) -> list[str]:
    meta = obj.get("metadata") or {}
    labels, annotations = _pairs(meta.get("labels")), _pairs(meta.get("annotations"))
    lines = [f"Name:         {meta.get('name', '')}"]
    if rt.namespaced:
        lines.append(f"Namespace:    {meta.get('namespace', '')}")
    lines.append(f"Labels:       {labels[0]}")
    lines += [f"              {label}" for label in labels[1:]]
    lines.append(f"Annotations:  {annotations[0]}")
    lines += [f"              {a}" for a in annotations[1:]]
    lines += [f"API Version:  {rt.api_version}", f"Kind:         {rt.kind}"]
    created = meta.get("creationTimestamp")
    lines.append(f"Created:      {created} ({ago(created, now)} ago)")
    if meta.get("deletionTimestamp"):
        lines.append(f"Deleting:     since {meta['deletionTimestamp']}")
    return lines


def _section(name: str, body: Any) -> list[str]:
    if not body:
        return []
    return [f"{name}:", *field_lines(body, 1)]


def condition_lines(obj: Object, now: float) -> list[str]:
    found = conditions(obj)
    if not found:
        return []
    rows = [["Type", "Status", "Reason", "Age", "Message"]]
    rows += [
        [str(c.get("type", "")), str(c.get("status", "")), str(c.get("reason") or ""),
         ago(c.get("lastTransitionTime"), now), str(c.get("message") or "")]
        for c in found
    ]  # fmt: skip
    return ["Conditions:", *(_INDENT + line for line in align(rows))]


def event_lines(events: Sequence[Object], now: float) -> list[str]:
    if not events:
        return ["Events:       <none>"]
    rows = [["Type", "Reason", "Age", "From", "Message"]]
    for e in sorted(events, key=_event_time):
        source = (e.get("source") or {}).get("component") or e.get("reportingComponent") or ""
        when = e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp")
        rows.append([str(e.get("type", "")), str(e.get("reason", "")), ago(when, now), str(source),
                     str(e.get("message", ""))])  # fmt: skip
    return ["Events:", *(_INDENT + line for line in align(rows))]


def _event_time(event: Object) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or "")


def trainjob_lines(summary: TrainJobSummary) -> list[str]:
    lines = [f"Phase:        {summary.phase}"]
    lines += [f"Why:          {summary.reasons[0]}"] if summary.reasons else []
    lines += [f"              {r}" for r in summary.reasons[1:]]
    lines.append(f"{'Gang:' if summary.gang else 'Pods:':14}{summary.gang_line()}")
    if not summary.nodes:
        return [*lines, "Nodes:        <none>"]
    rows = [["Pod", "Phase", "Node", "Reason", "Message"]]
    said = " ".join(summary.reasons)  # a message the Why lines carry is not repeated for every pod
    rows += [[n.pod, n.phase, n.node or "<none>", n.reason, "" if n.message in said else n.message]
             for n in summary.nodes]  # fmt: skip
    return [*lines, "Nodes:", *(_INDENT + line for line in align(rows))]


def describe(
    rt: ResourceType,
    obj: Object,
    events: Sequence[Object],
    now: float,
    summary: TrainJobSummary | None = None,
) -> str:
    """The whole ``describe`` text for one object."""
    lines = _header(rt, obj, now)
    if summary is not None:
        lines += trainjob_lines(summary)
    lines += _section("Spec", obj.get("spec"))
    status = {k: v for k, v in (obj.get("status") or {}).items() if k != "conditions"}
    lines += _section("Status", status)
    lines += condition_lines(obj, now)
    rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "spec", "status")}
    for key, value in rest.items():
        lines += (
            _section(title(key), value) if isinstance(value, dict | list) else [f"{title(key)}:  {value}"]
        )
    lines += event_lines(events, now)
    return "\n".join(lines) + "\n"


__all__ = ["ago", "condition_lines", "describe", "event_lines", "field_lines", "title", "trainjob_lines"]
