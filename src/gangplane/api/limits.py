"""Size and shape limits of the embedded API server, as kube-apiserver and etcd set them.

- Request bodies over 3 MiB are refused with 413 (kube-apiserver ``MaxRequestBodyBytes``).
- A stored object over 1.5 MiB is refused with 413 (etcd's default ``--max-request-bytes``: upstream answers
  "etcdserver: request is too large").
- JSON nesting: upstream's decoder stops at 10,000 levels; Python's recursion limit sits far below that, so
  gangplane refuses bodies nested deeper than ``MAX_DEPTH`` with 400 before anything recurses over them.
- Numbers must be finite: JSON has no NaN or Infinity, and upstream's decoder refuses them (400).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

MAX_REQUEST_BYTES = 3 * 1024 * 1024
MAX_OBJECT_BYTES = 3 * 1024 * 1024 // 2
MAX_DEPTH = 100


def depth(value: Any) -> int:
    """How deeply ``value`` nests (a scalar is 0, ``{}`` is 1), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
        else:
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_DEPTH:
            return deepest
    return deepest


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# msgspec decodes a request body about 5x faster than ``json``. It accepts a subset of what ``json.loads``
# accepts, decoded to the same values (it refuses lone surrogates, UTF-16/32, numbers past float range or
# 4,300 digits); whatever it refuses is decoded by ``json`` as before, which gives the same values or errors.
_FAST = msgspec.json.Decoder()
# ``json.dumps`` with options builds a new encoder per call; this is the same encoder, built once
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def loads(raw: bytes | str) -> Any:
    """``json.loads`` that refuses NaN/Infinity and, by ``ValueError``, nesting Python cannot recurse into."""
    try:
        value = _FAST.decode(raw)
    except (msgspec.MsgspecError, ValueError, RecursionError):  # ValueError: a str it cannot take as UTF-8
        value = _loads_by_json(raw)
    openers = raw.count(b"{") + raw.count(b"[") if isinstance(raw, bytes) else raw.count("{") + raw.count("[")
    if openers > MAX_DEPTH and depth(value) > MAX_DEPTH:  # no deeper than it has containers: skip the walk
        raise ValueError(f"the JSON nests deeper than {MAX_DEPTH} levels")
    return value


def _loads_by_json(raw: bytes | str) -> Any:
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError(f"the JSON nests deeper than {MAX_DEPTH} levels") from None


def dumps(value: Any) -> str:
    """Compact JSON; ``ValueError`` for what JSON cannot hold (NaN, Infinity, non-JSON types, nesting past
    Python's recursion limit). Request bodies were already held to ``MAX_DEPTH`` by ``loads``."""
    try:
        return _ENCODER.encode(value)
    except RecursionError:
        raise ValueError("the object nests too deeply to be stored") from None
    except TypeError as exc:
        raise ValueError(f"the object holds a value JSON cannot represent: {exc}") from None
