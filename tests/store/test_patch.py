"""Patch documents: RFC 7386 merge, RFC 6902 JSON and strategic merge patches; pure and via the store."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangplane.errors import Conflict, Invalid
from gangplane.store.core import ObjectStore
from gangplane.store.patch import json_patch, merge_patch, strategic_merge_patch

from .conftest import POD, pod

# RFC 7386 appendix A, in full.
RFC7386 = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC7386)
def test_merge_patch_rfc7386_examples(target: Any, patch: Any, expected: Any) -> None:
    assert merge_patch(target, patch) == expected


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=10,
)
no_null_docs = st.recursive(
    st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=10,
)


@given(json_values, no_null_docs)
def test_merge_patch_is_idempotent(target: Any, patch: Any) -> None:
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once


@given(no_null_docs)
def test_merge_patch_without_nulls_onto_nothing_is_the_patch(doc: Any) -> None:
    assert merge_patch({}, doc) == doc


def test_merge_patch_does_not_mutate_inputs() -> None:
    target, patch = {"a": {"b": [1]}}, {"a": {"c": 2}}
    merge_patch(target, patch)
    assert target == {"a": {"b": [1]}} and patch == {"a": {"c": 2}}


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ([{"op": "add", "path": "/a/-", "value": 3}], {"a": [1, 2, 3], "b": {"c": 1}}),
        ([{"op": "add", "path": "/a/0", "value": 0}], {"a": [0, 1, 2], "b": {"c": 1}}),
        ([{"op": "remove", "path": "/a/1"}], {"a": [1], "b": {"c": 1}}),
        ([{"op": "replace", "path": "/b/c", "value": 9}], {"a": [1, 2], "b": {"c": 9}}),
        ([{"op": "move", "from": "/b/c", "path": "/d"}], {"a": [1, 2], "b": {}, "d": 1}),
        ([{"op": "copy", "from": "/a", "path": "/b/a"}], {"a": [1, 2], "b": {"c": 1, "a": [1, 2]}}),
        ([{"op": "test", "path": "/b/c", "value": 1}], {"a": [1, 2], "b": {"c": 1}}),
        ([{"op": "add", "path": "/b/x~1y", "value": 1}], {"a": [1, 2], "b": {"c": 1, "x/y": 1}}),
    ],
)
def test_json_patch_operations(ops: list[dict[str, Any]], expected: Any) -> None:
    assert json_patch({"a": [1, 2], "b": {"c": 1}}, ops) == expected


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "test", "path": "/b/c", "value": 2}],
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/missing", "value": 1}],
        [{"op": "add", "path": "/a/5", "value": 1}],
        [{"op": "add", "path": "/x/y", "value": 1}],
        [{"op": "frobnicate", "path": "/a"}],
        [{"op": "add", "path": "/a"}],
        {"op": "add"},
    ],
)
def test_json_patch_rejects_and_applies_nothing(ops: Any) -> None:
    doc = {"a": [1, 2], "b": {"c": 1}}
    with pytest.raises(Invalid):
        json_patch(doc, ops)
    assert doc == {"a": [1, 2], "b": {"c": 1}}


LIVE = {
    "spec": {
        "containers": [
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
            {"name": "b", "image": "b:1", "ports": [{"containerPort": 80, "name": "http"}]},
        ],
        "tolerations": [{"key": "k1"}],
        "volumes": [{"name": "v1", "emptyDir": {}}],
    }
}


@pytest.mark.parametrize(
    ("patch", "check"),
    [
        pytest.param(
            {"spec": {"containers": [{"name": "b", "image": "b:2"}]}},
            lambda o: (
                [c["image"] for c in o["spec"]["containers"]] == ["a:1", "b:2"]
                and o["spec"]["containers"][1]["ports"] == [{"containerPort": 80, "name": "http"}]
            ),
            id="merge-container-by-name",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "c", "image": "c:1"}]}},
            lambda o: [c["name"] for c in o["spec"]["containers"]] == ["a", "b", "c"],
            id="append-new-container",
        ),
        pytest.param(
            {
                "spec": {
                    "containers": [
                        {"name": "a", "env": [{"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}]}
                    ]
                }
            },
            lambda o: (
                o["spec"]["containers"][0]["env"]
                == [{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}]
            ),
            id="env-by-name",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}},
            lambda o: [c["name"] for c in o["spec"]["containers"]] == ["b"],
            id="delete-item",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "z", "image": "z"}, {"$patch": "replace"}]}},
            lambda o: o["spec"]["containers"] == [{"name": "z", "image": "z"}],
            id="replace-list",
        ),
        pytest.param(
            {"spec": {"tolerations": [{"key": "k2"}]}},
            lambda o: o["spec"]["tolerations"] == [{"key": "k2"}],
            id="tolerations-atomic",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "b", "ports": [{"containerPort": 81}]}]}},
            lambda o: [p["containerPort"] for p in o["spec"]["containers"][1]["ports"]] == [80, 81],
            id="ports-by-containerPort",
        ),
        pytest.param(
            {"spec": {"volumes": [{"name": "v1", "emptyDir": None, "hostPath": {"path": "/x"}}]}},
            lambda o: o["spec"]["volumes"] == [{"name": "v1", "hostPath": {"path": "/x"}}],
            id="volume-null-field",
        ),
        pytest.param(
            {"spec": {"$patch": "replace", "containers": []}},
            lambda o: o["spec"] == {"containers": []},
            id="replace-map",
        ),
        pytest.param(
            {"$setElementOrder/spec": [], "spec": {"volumes": None}},
            lambda o: "volumes" not in o["spec"] and len(o["spec"]["containers"]) == 2,
            id="null-deletes-and-directives-ignored",
        ),
    ],
)
def test_strategic_merge_patch(patch: dict[str, Any], check: Any) -> None:
    assert check(strategic_merge_patch(LIVE, patch))


def test_strategic_list_item_without_key_is_invalid() -> None:
    with pytest.raises(Invalid):
        strategic_merge_patch(LIVE, {"spec": {"containers": [{"image": "x"}]}})


def test_store_patch_types(store: ObjectStore) -> None:
    store.create(POD, pod("a", labels={"x": "1", "y": "2"}))
    after = store.patch(
        POD, "default", "a", {"metadata": {"labels": {"x": None, "z": "3"}}}, "application/merge-patch+json"
    )
    assert after["metadata"]["labels"] == {"y": "2", "z": "3"}
    after = store.patch(
        POD, "default", "a", '[{"op": "add", "path": "/spec/nodeName", "value": "n1"}]', "json"
    )
    assert after["spec"]["nodeName"] == "n1" and after["metadata"]["generation"] == 2
    patch = {"spec": {"containers": [{"name": "side", "image": "s"}]}}
    after = store.patch(POD, "default", "a", patch, "application/strategic-merge-patch+json")
    assert [c["name"] for c in after["spec"]["containers"]] == ["main", "side"]


def test_store_patch_status_subresource(store: ObjectStore) -> None:
    store.create(POD, pod("a"))
    after = store.patch(
        POD,
        "default",
        "a",
        {"status": {"phase": "Running"}, "spec": {"nodeName": "x"}},
        "merge",
        subresource="status",
    )
    assert after["status"] == {"phase": "Running"} and "nodeName" not in after["spec"]
    after = store.patch(POD, "default", "a", {"status": {"phase": "Failed"}}, "merge")
    assert after["status"] == {"phase": "Running"}


def test_store_patch_resource_version_is_a_precondition(store: ObjectStore) -> None:
    created = store.create(POD, pod("a"))
    rv = created["metadata"]["resourceVersion"]
    store.patch(POD, "default", "a", {"metadata": {"labels": {"a": "1"}, "resourceVersion": rv}}, "merge")
    with pytest.raises(Conflict):
        store.patch(POD, "default", "a", {"metadata": {"labels": {"b": "1"}, "resourceVersion": rv}}, "merge")


@pytest.mark.parametrize(
    ("patch", "patch_type"),
    [
        ({"metadata": {"name": "renamed"}}, "merge"),
        ("{not json", "merge"),
        ({}, "application/x-unknown"),
    ],
)
def test_store_patch_rejects(store: ObjectStore, patch: Any, patch_type: str) -> None:
    store.create(POD, pod("a"))
    with pytest.raises(Invalid):
        store.patch(POD, "default", "a", patch, patch_type)
