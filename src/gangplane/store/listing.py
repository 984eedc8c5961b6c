"""List options as kube-apiserver reads them: continue tokens, limits and the rows of one page."""

from __future__ import annotations

import base64
import binascii
import json

from gangplane.errors import CauseType, FieldError, Invalid
from gangplane.store.base import Object
from gangplane.store.objects import Key

Rows = list[tuple[Key, Object]]


def bad_option(field: str, value: str, detail: str) -> Invalid:
    return Invalid("ListOptions", "", [FieldError(field, CauseType.INVALID, detail, value)])


def encode_continue(rv: int, key: Key) -> str:
    return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": list(key)}).encode()).decode()


def decode_continue(token: str) -> Key | None:
    if not token:
        return None
    try:
        start = json.loads(base64.urlsafe_b64decode(token.encode()))["start"]
        return (str(start[0]), str(start[1]))
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error) as exc:
        raise bad_option("continue", token, "invalid continue token") from exc


def page_of(rows: Rows, start: Key | None, limit: int) -> tuple[Rows, int]:
    """Up to ``limit`` of the key-ordered ``rows`` after ``start`` (0: all), and how many follow them."""
    rows = [kv for kv in rows if start is None or kv[0] > start]
    if limit and len(rows) > limit:
        return rows[:limit], len(rows) - limit
    return rows, 0


__all__ = ["Rows", "bad_option", "decode_continue", "encode_continue", "page_of"]
