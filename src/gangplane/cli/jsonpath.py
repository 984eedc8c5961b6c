"""kubectl's JSONPath templates (``-o jsonpath=...``, ``-o custom-columns=...``); pure.

The subset kubectl users write: literal text around ``{...}`` actions; paths of ``.field``, ``['field']``,
``[n]``, ``[a:b]``, ``[*]``, ``.*``, ``..field`` (recursive descent) and ``[?(@.path==value)]`` filters
(``==``, ``!=``, ``<``, ``>``, ``<=``, ``>=``, or a bare path for "exists"); ``{range PATH}...{end}``; and
string literals such as ``{"\\n"}``. As with kubectl's default ``--allow-missing-template-keys``, a missing key
yields nothing instead of an error. Several results of one action are joined by spaces; maps and lists print
as JSON (kubectl: k8s.io/client-go/util/jsonpath).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_SEGMENT = re.compile(
    r"""\.\.(?P<deep>[\w-]+|\*)"""
    r"""|\.(?P<field>[\w-]+|\*)"""
    r"""|\[\s*'(?P<quoted>[^']*)'\s*\]|\[\s*"(?P<dquoted>[^"]*)"\s*\]"""
    r"""|\[\?\((?P<filter>[^)]*)\)\]"""
    r"""|\[(?P<index>[^\]]*)\]"""
)
_FILTER = re.compile(r"^\s*(?P<left>@[^\s=!<>]*)\s*(?:(?P<op>==|!=|<=|>=|<|>)\s*(?P<right>.+?))?\s*$")


class JsonPathError(ValueError):
    """A template kubectl would refuse to parse."""


def _segments(path: str) -> list[re.Match[str]]:
    text = path.strip()
    if text.startswith(("$", "@")):
        text = text[1:]
    found, pos = [], 0
    while pos < len(text):
        match = _SEGMENT.match(text, pos)
        if match is None:
            raise JsonPathError(f"unrecognized character in action: {text[pos:]!r}")
        found.append(match)
        pos = match.end()
    return found


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return list(value.values())
    return list(value) if isinstance(value, list) else []


def _descend(value: Any) -> Iterator[Any]:
    yield value
    for child in _children(value):
        yield from _descend(child)


def _index(value: Any, spec: str) -> list[Any]:
    if not isinstance(value, list):
        return []
    if spec.strip() == "*":
        return list(value)
    if ":" in spec:
        parts = [int(p) if p.strip() else None for p in spec.split(":")[:3]]
        return value[slice(*parts)]
    position = int(spec)
    return [value[position]] if -len(value) <= position < len(value) else []


def _literal(text: str) -> Any:
    text = text.strip()
    if text[:1] in "'\"" and text[-1:] == text[:1]:
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        return text


def _matches(item: Any, expression: str) -> bool:
    parsed = _FILTER.match(expression)
    if parsed is None:
        raise JsonPathError(f"unsupported filter: {expression!r}")
    found = evaluate(parsed["left"], item)
    if parsed["op"] is None:
        return bool(found)
    right = _literal(parsed["right"])
    ops = {"==": lambda a: a == right, "!=": lambda a: a != right}
    if parsed["op"] in ops:
        return any(ops[parsed["op"]](v) for v in found)
    try:
        return any(_compare(v, right, parsed["op"]) for v in found)
    except TypeError:
        return False


def _compare(left: Any, right: Any, op: str) -> bool:
    return bool({"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[op])


def _step(values: list[Any], segment: re.Match[str]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if segment["deep"] is not None:
            for node in _descend(value):
                out += _step([node], _SEGMENT.match("." + segment["deep"]))  # type: ignore[arg-type]
        elif segment["field"] == "*":
            out += _children(value)
        elif (key := segment["field"] or segment["quoted"] or segment["dquoted"]) is not None:
            if isinstance(value, dict) and key in value:
                out.append(value[key])
        elif segment["filter"] is not None:
            out += [item for item in _children(value) if _matches(item, segment["filter"])]
        else:
            out += _index(value, segment["index"])
    return out


def evaluate(path: str, data: Any) -> list[Any]:
    """Every value ``path`` selects in ``data`` (``[]`` when a key is missing)."""
    values = [data]
    for segment in _segments(path):
        values = _step(values, segment)
    return values


def show(value: Any) -> str:
    """A value as kubectl prints it: strings raw, maps and lists as JSON, booleans lower-case."""
    if isinstance(value, str):
        return value
    return json.dumps(value)


@dataclass(frozen=True, slots=True)
class _Node:
    kind: str  # "text", "path", "range"
    text: str
    body: tuple[_Node, ...] = ()


def _actions(template: str) -> Iterator[tuple[str, str]]:
    """("text", literal) and ("action", inside-braces) pieces, honouring quotes inside actions."""
    pos = 0
    for match in re.finditer(r"\{((?:\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^{}])*)\}", template):
        if match.start() > pos:
            yield "text", template[pos : match.start()]
        yield "action", match[1].strip()
        pos = match.end()
    if pos < len(template):
        yield "text", template[pos:]


def _parse(pieces: Iterator[tuple[str, str]], nested: bool = False) -> tuple[_Node, ...]:
    nodes: list[_Node] = []
    for kind, text in pieces:
        if kind == "text":
            nodes.append(_Node("text", text))
        elif text == "end":
            if not nested:
                raise JsonPathError("not in range, nothing to end")
            return tuple(nodes)
        elif text.startswith("range "):
            nodes.append(_Node("range", text[6:], _parse(pieces, nested=True)))
        elif text[:1] in "'\"":
            nodes.append(_Node("text", json.loads(text, strict=False) if text[0] == '"' else text[1:-1]))
        else:
            nodes.append(_Node("path", text))
    if nested:
        raise JsonPathError("unclosed range")
    return tuple(nodes)


def parse(template: str) -> tuple[_Node, ...]:
    """A template's actions; ``JsonPathError`` for ones kubectl would refuse."""
    nodes = _parse(_actions(template))
    _check(nodes)
    return nodes


def _check(nodes: tuple[_Node, ...]) -> None:
    for node in nodes:
        if node.kind in ("path", "range"):
            _segments(node.text)
        _check(node.body)


def _range_items(values: list[Any]) -> list[Any]:
    """``{range .items}`` walks the list itself, like ``{range .items[*]}``."""
    return values[0] if len(values) == 1 and isinstance(values[0], list) else values


def _render(nodes: tuple[_Node, ...], data: Any) -> str:
    parts = []
    for node in nodes:
        if node.kind == "text":
            parts.append(node.text)
        elif node.kind == "path":
            parts.append(" ".join(show(v) for v in evaluate(node.text, data)))
        else:
            parts += [_render(node.body, item) for item in _range_items(evaluate(node.text, data))]
    return "".join(parts)


def render(template: str, data: Any) -> str:
    """``template`` filled from ``data``, as ``kubectl get -o jsonpath=TEMPLATE`` prints it."""
    return _render(parse(template), data)


__all__ = ["JsonPathError", "evaluate", "parse", "render", "show"]
