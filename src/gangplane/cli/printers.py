"""Pure output formatting for ``get``: server-side Tables as kubectl prints them, ``-o name``, YAML and JSON.

Tables come from the server (``Accept: ...;as=Table``), so columns are whatever the server defines — the
embedded API server's or a real cluster's printer columns; this module only lays them out: upper-case
headers, columns three spaces apart, ``<none>`` for empty cells, ``priority > 0`` columns only with
``-o wide``, and a NAMESPACE column first across all namespaces.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gangplane.cli import jsonpath
from gangplane.cli.kinds import qualified_name
from gangplane.store.base import Object, ResourceType

_GAP = "   "


class Output(StrEnum):
    TABLE = ""
    WIDE = "wide"
    NAME = "name"
    YAML = "yaml"
    JSON = "json"
    JSONPATH = "jsonpath"
    CUSTOM_COLUMNS = "custom-columns"


_ALLOWED = "custom-columns,json,jsonpath,name,wide,yaml"


class OutputError(ValueError):
    """An ``-o`` value no printer matches, in kubectl's words."""


@dataclass(frozen=True, slots=True)
class OutputFormat:
    """``-o FORMAT[=TEMPLATE]``: what to print and, for jsonpath and custom-columns, how."""

    output: Output = Output.TABLE
    template: str = ""

    @property
    def tabular(self) -> bool:
        return self.output in (Output.TABLE, Output.WIDE)


def parse_output(text: str) -> OutputFormat:
    """``wide``, ``name``, ``yaml``, ``json``, ``jsonpath=TEMPLATE``, ``custom-columns=SPEC``."""
    name, sep, template = text.partition("=")
    try:
        output = Output(name)
    except ValueError:
        output = None
    if output is None or bool(sep) != (output in (Output.JSONPATH, Output.CUSTOM_COLUMNS)):
        raise OutputError(
            f'unable to match a printer suitable for the output format "{text}", '
            f"allowed formats are: {_ALLOWED}"
        )
    if output == Output.JSONPATH:
        jsonpath.parse(template)
    elif output == Output.CUSTOM_COLUMNS:
        custom_columns(template)
    return OutputFormat(output, template)


def custom_columns(spec: str) -> list[tuple[str, str]]:
    """``NAME:.metadata.name,PHASE:.status.phase`` -> [(header, jsonpath template)]."""
    columns = []
    for part in spec.split(","):
        header, sep, path = part.partition(":")
        if not sep or not header or not path:
            raise OutputError(f"unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>")
        template = path if path.startswith("{") else "{" + path + "}"
        jsonpath.parse(template)
        columns.append((header, template))
    return columns


def custom_column_rows(spec: str, objs: Iterable[Object], *, headers: bool = True) -> list[str]:
    """Objects as ``-o custom-columns`` prints them; several values in a cell are joined by commas."""
    columns = custom_columns(spec)
    rows = [[h for h, _ in columns]] if headers else []
    for obj in objs:
        rows.append([
            ",".join(jsonpath.show(v) for v in jsonpath.evaluate(t.strip("{}"), obj)) or "<none>"
            for _, t in columns
        ])  # fmt: skip
    return align(rows)


def with_labels(table: Object, columns: Sequence[str], show_labels: bool) -> Object:
    """``-L KEY`` columns (headed by the key's last segment, upper-case) and ``--show-labels``' LABELS column,
    after the server's columns, read from each row's object metadata."""
    if not columns and not show_labels:
        return table
    defs = [*(table.get("columnDefinitions") or [])]
    defs += [{"name": key.rsplit("/", 1)[-1], "type": "string", "format": _LABEL_FORMAT} for key in columns]
    defs += [{"name": "Labels", "type": "string"}] if show_labels else []
    rows = []
    for row in table.get("rows") or []:
        labels = (((row.get("object") or {}).get("metadata") or {}).get("labels")) or {}
        extra = [str(labels.get(key, "")) for key in columns]
        extra += [",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"] if show_labels else []
        rows.append({**row, "cells": [*(row.get("cells") or []), *extra]})
    return {**table, "columnDefinitions": defs, "rows": rows}


def with_kind(table: Object, rt: ResourceType) -> Object:
    """A table whose names read ``kind.group/name``, as kubectl prints several types at once."""
    rows = [
        {
            **row,
            "cells": [f"{qualified_name(rt)}/{cells[0]}", *cells[1:]] if (cells := row.get("cells")) else [],
        }
        for row in table.get("rows") or []
    ]
    return {**table, "rows": rows}


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "<none>"
    return str(value)


def _shown_columns(table: Object, wide: bool) -> list[int]:
    defs = table.get("columnDefinitions") or []
    return [i for i, d in enumerate(defs) if wide or not int(d.get("priority") or 0)]


_LABEL_FORMAT = "gangplane-label"  # a -L column: a missing label shows as nothing, as kubectl shows it


def _shown_cell(column: Object, value: Any) -> str:
    return str(value or "") if column.get("format") == _LABEL_FORMAT else _cell(value)


def table_rows(table: Object, *, wide: bool = False, with_namespace: bool = False) -> list[list[str]]:
    """Header row, then one row per object, as strings."""
    defs = table.get("columnDefinitions") or []
    shown = _shown_columns(table, wide)
    header = [str(defs[i].get("name", "")).upper() for i in shown]
    rows = [(["NAMESPACE"] if with_namespace else []) + header]
    for row in table.get("rows") or []:
        cells = row.get("cells") or []
        values = [
            str(cells[i] or "")
            if defs[i].get("format") == _LABEL_FORMAT
            else _cell(cells[i] if i < len(cells) else None)
            for i in shown
        ]
        if with_namespace:
            namespace = ((row.get("object") or {}).get("metadata") or {}).get("namespace")
            values.insert(0, _cell(namespace))
        rows.append(values)
    return rows


def widths(rows: Sequence[Sequence[str]]) -> list[int]:
    return [max(len(r[i]) for r in rows if i < len(r)) for i in range(max((len(r) for r in rows), default=0))]


def align(rows: Sequence[Sequence[str]], column_widths: Sequence[int] | None = None) -> list[str]:
    """Rows padded into columns; the last column is not padded (no trailing spaces)."""
    sizes = list(column_widths or widths(rows))
    lines = []
    for row in rows:
        padded = [c.ljust(sizes[i]) if i < len(sizes) else c for i, c in enumerate(row[:-1])]
        lines.append(_GAP.join([*padded, *row[-1:]]).rstrip())
    return lines


def format_table(
    table: Object, *, wide: bool = False, with_namespace: bool = False, headers: bool = True
) -> str:
    rows = table_rows(table, wide=wide, with_namespace=with_namespace)
    return "\n".join(align(rows if headers else rows[1:]))


def object_name(rt: ResourceType, obj: Object) -> str:
    """``-o name``: ``trainjob.trainer.kubeflow.org/mnist``."""
    return f"{qualified_name(rt)}/{(obj.get('metadata') or {}).get('name', '')}"


def without_managed_fields(obj: Object) -> Object:
    """kubectl hides ``metadata.managedFields`` unless asked for them."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def as_list(items: Iterable[Object]) -> Object:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(items)}


def dump(obj: Object, output: Output) -> str:
    """One document (object or ``List``) as YAML or JSON, managed fields hidden."""
    shown = without_managed_fields(obj)
    if obj.get("kind") == "List":
        shown = as_list(without_managed_fields(i) for i in obj.get("items") or [])
    if output == Output.JSON:
        return json.dumps(shown, indent=4) + "\n"
    import yaml  # here, not at the top: loading it costs every command start-up time

    return yaml.safe_dump(shown, sort_keys=False, default_flow_style=False)


__all__ = [
    "Output",
    "OutputError",
    "OutputFormat",
    "align",
    "as_list",
    "custom_column_rows",
    "custom_columns",
    "dump",
    "format_table",
    "object_name",
    "parse_output",
    "table_rows",
    "widths",
    "with_kind",
    "with_labels",
    "without_managed_fields",
]
