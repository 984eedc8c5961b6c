"""Equal subtrees of stored objects are held once (store/sharing.py), never twice within one object."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangplane.store.objects import copy_objects
from gangplane.store.sharing import SubtreeTable

from .conftest import pod

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


def _typed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


def _containers(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in _containers(v))]
    if isinstance(value, list):
        return [value, *(c for v in value for c in _containers(v))]
    return []


@given(st.lists(st.dictionaries(st.text(max_size=4), json_values, max_size=5), max_size=6))
def test_shared_objects_equal_the_originals_with_their_types(objs: list[dict[str, Any]]) -> None:
    table = SubtreeTable(capacity=8)  # small: generations turn over within the example
    for obj in objs:
        shared = table.share(obj)
        assert shared == obj and list(shared) == list(obj)
        assert _typed(shared) == _typed(obj)  # 1, 1.0 and True stay what they were
        parts = _containers(shared)
        assert len({id(p) for p in parts}) == len(parts)  # no instance twice within one object


def test_equal_parts_of_different_objects_are_one_instance() -> None:
    table = SubtreeTable()
    first, second = table.share(pod("a")), table.share(pod("b"))
    assert first["spec"] is second["spec"]
    assert first["metadata"] is not second["metadata"] and second["metadata"]["name"] == "b"


def test_two_equal_parts_of_one_object_stay_separate() -> None:
    container = {"name": "c", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}
    obj = pod("a", spec={"containers": [container, copy.deepcopy(container)]})
    shared = SubtreeTable().share(obj)
    one, two = shared["spec"]["containers"]
    assert one is not two and one["resources"] is not two["resources"]
    copied = copy.deepcopy(shared)
    copied["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "2"
    assert copied["spec"]["containers"][1]["resources"]["limits"]["cpu"] == "1"


def test_a_new_version_keeps_what_it_shares_with_the_previous() -> None:
    table = SubtreeTable(capacity=2)
    old = table.share(pod("a", labels={"x": "1"}))
    for i in range(5):  # turn the generations over: the old version's parts leave the table
        table.share(pod(f"other{i}", labels={"y": str(i)}, spec={"containers": [{"name": str(i)}]}))
    new = {**old, "metadata": {**old["metadata"], "resourceVersion": "9"}, "status": {"phase": "Running"}}
    shared = table.share(new, old)
    assert shared["spec"] is old["spec"] and shared["metadata"]["labels"] is old["metadata"]["labels"]
    assert shared == new


def test_list_copies_do_not_tie_objects_together() -> None:
    table = SubtreeTable()
    copies = copy_objects([table.share(pod("a")), table.share(pod("b"))])
    copies[0]["spec"]["containers"][0]["image"] = "changed"
    assert copies[1]["spec"]["containers"][0]["image"] == "busybox"


def test_a_part_the_previous_version_holds_at_any_depth_is_kept_without_a_copy() -> None:
    """A binding changes ``spec.nodeName`` and the conditions: the containers stay the stored instances."""
    table = SubtreeTable()
    before = table.share(pod("a"))
    after = table.share({**before, "spec": {**before["spec"], "nodeName": "n1"}}, before)
    assert after == {**before, "spec": {**before["spec"], "nodeName": "n1"}}
    assert after["spec"]["containers"] is before["spec"]["containers"]
    assert after["spec"] is not before["spec"]
    parts = _containers(after)
    assert len({id(p) for p in parts}) == len(parts)


def test_a_kept_part_also_placed_elsewhere_in_the_object_is_used_once() -> None:
    table = SubtreeTable()
    before = table.share(pod("a"))
    containers = before["spec"]["containers"]
    after = table.share({**before, "spec": {**before["spec"], "initContainers": containers}}, before)
    assert after["spec"]["initContainers"] == containers
    parts = _containers(after)
    assert len({id(p) for p in parts}) == len(parts)  # no instance twice within one object


@given(
    st.dictionaries(st.text(max_size=4), json_values, max_size=5),
    st.lists(st.booleans(), max_size=5),
    json_values,
)
def test_a_version_built_from_the_previous_one_is_equal_and_holds_no_instance_twice(
    obj: dict[str, Any], copied: list[bool], extra: Any
) -> None:
    """Parts taken from the previous version as they are, parts copied, one moved under a new field."""
    table = SubtreeTable(capacity=8)
    previous = table.share(obj)
    new = {
        k: copy.deepcopy(v) if i < len(copied) and copied[i] else v
        for i, (k, v) in enumerate(previous.items())
    }
    new["moved"] = {"extra": extra, "again": next(iter(previous.values()), None)}
    shared = table.share(new, previous)
    assert shared == new and _typed(shared) == _typed(new)
    parts = _containers(shared)
    assert len({id(p) for p in parts}) == len(parts)


def test_a_hash_collision_never_shares_unequal_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table keeps only the hash of a part's key; a collision (forced here) leaves each part its own."""
    monkeypatch.setattr("gangplane.store.sharing.hash", lambda key: 0, raising=False)
    table = SubtreeTable()
    first = table.share({"a": {"x": "1"}, "b": [1]})
    second = table.share({"a": {"x": "2"}, "b": [True], "c": {"y": "1"}})
    assert second == {"a": {"x": "2"}, "b": [True], "c": {"y": "1"}}
    assert type(second["b"][0]) is bool and second["a"] is not first["a"]
    assert list(table.share({"k": 1, "j": 2})) == ["k", "j"] and list(table.share({"j": 2, "k": 1})) == [
        "j",
        "k",
    ]


def test_parts_only_the_table_still_holds_are_let_go() -> None:
    """A replaced object's own parts leave the table once nothing else holds them (a sweep every quarter of a
    generation's new entries), while a part a stored object still holds stays shared."""
    table = SubtreeTable(capacity=40)  # a sweep every 10 new entries; no generation turns over below
    kept = table.share(pod("kept", labels={"app": "x"}))
    gone = table.share(pod("gone", spec={"containers": [{"name": "old", "image": "only-here"}]}))
    del gone  # its spec, containers list and container: 3 entries no object holds any more
    before = len(table)
    others = [table.share({"metadata": {"name": f"o{i}"}, "data": {"k": [str(i)]}}) for i in range(12)]
    assert len(table) == before + 2 * len(others) - 3
    again = table.share(pod("again", labels={"app": "x"}))
    assert again["metadata"]["labels"] is kept["metadata"]["labels"]  # what is still held stays shared
    assert all(o["data"] == {"k": [str(i)]} for i, o in enumerate(others))
