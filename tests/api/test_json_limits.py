"""``limits.loads`` decodes with msgspec where it can and with ``json`` where msgspec refuses: every input
gives what ``json.loads`` (NaN/Infinity refused, nesting capped) gave before, value for value or error for
error."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangplane.api import limits


def _by_json(raw: bytes | str) -> Any:
    """The earlier ``limits.loads``: ``json.loads`` alone."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        value = json.loads(raw, parse_constant=refuse)
    except RecursionError:
        raise ValueError("too deep") from None
    if limits.depth(value) > limits.MAX_DEPTH:
        raise ValueError("too deep")
    return value


def _outcome(decode: Any, raw: bytes | str) -> tuple[str, str]:
    try:
        return "value", repr(decode(raw))  # repr: 1 and 1.0, -0.0 and 0.0, int and bool stay apart
    except ValueError:
        return "error", ""


EDGES = [
    b'{"a":1,"a":2}',
    b'"\xed\xa0\x80"',  # a lone surrogate in UTF-8: json decodes it, msgspec refuses
    b'"\\ud800"',
    b'["\\ud83d\\ude00", "\\u00e9", "\xc3\xa9"]',
    '{"a": "é"}'.encode("utf-16"),
    b"\xef\xbb\xbf{}",
    b"NaN",
    b"[-Infinity]",
    b"1e400",
    b"-1e400",
    b"1e-400",
    b"-0.0",
    b"-0",
    b"9" * 4300,
    b"9" * 4301,
    b"123456789012345678901234567890",
    b'"a\x01b"',
    b"{}x",
    b"[1,]",
    b"01",
    b"\x00",
    b"[" * 101 + b"]" * 101,
    b"[" * 100 + b"]" * 100,
    b"[" * 5000 + b"]" * 5000,
    b" {} ",
    b"",
]


@pytest.mark.parametrize("raw", EDGES)
def test_edge_inputs_decode_as_json_decodes_them(raw: bytes) -> None:
    assert _outcome(limits.loads, raw) == _outcome(_by_json, raw)
    text = raw.decode("utf-8", "surrogatepass") if raw[:2] not in (b"\xff\xfe", b"\xef\xbb") else None
    if text is not None:
        assert _outcome(limits.loads, text) == _outcome(_by_json, text)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_any_json_document_decodes_to_the_same_value(value: Any) -> None:
    for ascii_only in (True, False):
        raw = json.dumps(value, ensure_ascii=ascii_only)
        encoded = raw.encode("utf-8", "surrogatepass")
        assert _outcome(limits.loads, encoded) == _outcome(_by_json, encoded)
        assert _outcome(limits.loads, raw) == _outcome(_by_json, raw)
