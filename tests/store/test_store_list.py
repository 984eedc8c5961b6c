"""Conformance: list filtering by namespace, label and field selectors, and limit/continue pagination."""

from __future__ import annotations

import pytest

from gangplane.errors import Invalid
from gangplane.store import ListOptions, MemoryStore
from gangplane.store.core import ObjectStore

from .conftest import POD, pod


@pytest.fixture
def pods(store: ObjectStore) -> ObjectStore:
    rows = [
        ("a", "ns1", {"app": "web", "tier": "fe"}, "n1", "Running"),
        ("b", "ns1", {"app": "db"}, "", "Pending"),
        ("c", "ns2", {"app": "web", "canary": "true"}, "n2", "Running"),
        ("d", "ns2", {}, "n1", "Succeeded"),
    ]
    for name, ns, labels, node, phase in rows:
        spec = {"containers": [{"name": "c"}]} | ({"nodeName": node} if node else {})
        store.create(POD, pod(name, ns, labels=labels, spec=spec))
        store.update_status(POD, pod(name, ns, status={"phase": phase}))
    return store


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        pytest.param(ListOptions(), "abcd", id="all"),
        pytest.param(ListOptions(namespace="ns2"), "cd", id="namespace"),
        pytest.param(ListOptions(label_selector="app=web"), "ac", id="equals"),
        pytest.param(ListOptions(label_selector="app!=web"), "bd", id="not-equals-includes-missing"),
        pytest.param(ListOptions(label_selector="app in (db, web),!canary"), "ab", id="in-and-not-exists"),
        pytest.param(ListOptions(label_selector="app notin (web)"), "bd", id="notin"),
        pytest.param(ListOptions(label_selector="tier"), "a", id="exists"),
        pytest.param(ListOptions(field_selector="spec.nodeName=n1"), "ad", id="node"),
        pytest.param(ListOptions(field_selector="spec.nodeName="), "b", id="unscheduled"),
        pytest.param(ListOptions(field_selector="status.phase!=Running"), "bd", id="phase"),
        pytest.param(ListOptions(field_selector="metadata.namespace==ns1,metadata.name=b"), "b", id="meta"),
        pytest.param(
            ListOptions(namespace="ns1", label_selector="app=web", field_selector="status.phase=Running"),
            "a",
            id="combined",
        ),
    ],
)
def test_list_filters(pods: ObjectStore, options: ListOptions, expected: str) -> None:
    assert "".join(o["metadata"]["name"] for o in pods.list(POD, options).items) == expected


@pytest.mark.parametrize(
    "options",
    [
        pytest.param(ListOptions(label_selector="a in (x"), id="unclosed"),
        pytest.param(ListOptions(label_selector="a=b,"), id="trailing-comma"),
        pytest.param(ListOptions(field_selector="spec.other=x"), id="unsupported-field"),
        pytest.param(ListOptions(continue_token="garbage!"), id="bad-continue"),
        pytest.param(ListOptions(limit=-1), id="negative-limit"),
    ],
)
def test_list_rejects_bad_options(pods: ObjectStore, options: ListOptions) -> None:
    with pytest.raises(Invalid):
        pods.list(POD, options)


def test_pagination_walks_every_object_once(store: ObjectStore) -> None:
    for i in range(7):
        store.create(POD, pod(f"p{i}", "ns" + str(i % 2)))
    seen, token, pages = [], "", 0
    while True:
        page = store.list(POD, ListOptions(limit=3, continue_token=token))
        seen += [o["metadata"]["name"] for o in page.items]
        pages += 1
        if not page.continue_token:
            assert page.remaining is None
            break
        assert page.remaining == 7 - len(seen)
        token = page.continue_token
    assert pages == 3 and sorted(seen) == [f"p{i}" for i in range(7)] and len(seen) == 7


def test_pagination_skips_objects_deleted_between_pages(store: ObjectStore) -> None:
    for name in "abcd":
        store.create(POD, pod(name))
    first = store.list(POD, ListOptions(limit=2))
    store.delete(POD, "default", "c")
    rest = store.list(POD, ListOptions(limit=2, continue_token=first.continue_token))
    assert [o["metadata"]["name"] for o in rest.items] == ["d"] and not rest.continue_token


def test_a_borrowed_list_pages_the_stored_objects_themselves() -> None:
    """What the API server renders a list from: the same pages as ``list``, without a copy of each object
    (the engine's own; a store over HTTP has no stored objects to lend)."""
    store = MemoryStore()
    for i in range(5):
        store.create(POD, pod(f"p{i}"))
    stored = {o["metadata"]["name"]: o for o in store.list_shared(POD).items}
    first = store.list_borrowed(POD, ListOptions(limit=3))
    rest = store.list_borrowed(POD, ListOptions(limit=3, continue_token=first.continue_token))
    assert first.remaining == 2 and not rest.continue_token
    assert all(o is stored[o["metadata"]["name"]] for o in [*first.items, *rest.items])
    assert first.items + rest.items == store.list(POD).items
