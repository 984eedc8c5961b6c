"""Selector parsing and matching, including a property: a parsed selector matches exactly what its meaning
says it should."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangplane.errors import Invalid
from gangplane.store.selectors import Op, parse_field_selector, parse_label_selector, split_terms


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        ("a=b", [Op.EQUALS]),
        ("a==b", [Op.EQUALS]),
        ("a!=b", [Op.NOT_EQUALS]),
        ("a in (x, y)", [Op.IN]),
        ("a notin (x),b", [Op.NOT_IN, Op.EXISTS]),
        ("!a, example.com/b", [Op.DOES_NOT_EXIST, Op.EXISTS]),
        ("", []),
    ],
)
def test_parse_label_selector_ops(text: str, ops: list[Op]) -> None:
    assert [r.op for r in parse_label_selector(text).requirements] == ops


@pytest.mark.parametrize("text", ["a in ()", "a=b=c", "=b", ",", "a in x", "-a=b", "a=" + "x" * 64, "a!b"])
def test_parse_label_selector_rejects(text: str) -> None:
    with pytest.raises(Invalid):
        parse_label_selector(text)


@pytest.mark.parametrize("text", ["metadata.uid=x", "spec.nodeName", "status.phase in (a)"])
def test_parse_field_selector_rejects(text: str) -> None:
    with pytest.raises(Invalid):
        parse_field_selector(text)


def test_split_terms_respects_parentheses() -> None:
    assert split_terms("a in (x,y),b") == ["a in (x,y)", "b"]


names = st.sampled_from(["app", "tier", "example.com/team", "x"])
values = st.sampled_from(["web", "db", "a-b", "v1.2"])
labels = st.dictionaries(names, values, max_size=4)


@st.composite
def requirements(draw: st.DrawFn) -> tuple[str, object]:
    key, op = draw(names), draw(st.sampled_from(["=", "!=", "in", "notin", "exists", "!"]))
    vals = draw(st.lists(values, min_size=1, max_size=3, unique=True))
    if op in ("=", "!="):
        return f"{key}{op}{vals[0]}", (lambda ls: (ls.get(key) == vals[0]) == (op == "="))
    if op == "in":
        return f"{key} in ({', '.join(vals)})", (lambda ls: ls.get(key) in vals)
    if op == "notin":
        return f"{key} notin ({','.join(vals)})", (lambda ls: ls.get(key) not in vals)
    if op == "exists":
        return key, (lambda ls: key in ls)
    return f"!{key}", (lambda ls: key not in ls)


@given(st.lists(requirements(), max_size=4), labels)
def test_selector_matches_the_conjunction_of_its_terms(
    reqs: list[tuple[str, object]], ls: dict[str, str]
) -> None:
    selector = parse_label_selector(",".join(text for text, _ in reqs))
    assert selector.matches(ls) == all(meaning(ls) for _, meaning in reqs)  # type: ignore[operator]
