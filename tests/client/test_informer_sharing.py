"""Informers over an in-process store share its committed dicts (one copy of each object per process, however
many informers watch it), and the test suite's checking mode catches any in-place edit of what they share."""

from __future__ import annotations

import copy
import json
from functools import partial

import pytest

from gangplane.client.informer import Informer
from gangplane.client.readonly import CHECK_ENV, FrozenDict, SharedMutation, freeze, thaw
from gangplane.store import catalog
from gangplane.store.memory import MemoryStore
from waiting import wait_for

settled = partial(wait_for, timeout=10.0)  # informers catch up; a loaded machine may take a while


def _pod(name: str, **labels: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip


def _started(store: MemoryStore) -> Informer:
    informer = Informer(store, catalog.PODS)
    informer.start()
    assert informer.wait_synced(10)
    return informer


def test_informers_share_the_stores_objects_not_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CHECK_ENV, raising=False)
    store = MemoryStore()
    store.create(catalog.PODS, _pod("listed"))
    a, b = _started(store), _started(store)
    try:
        store.create(catalog.PODS, _pod("watched"))
        settled(lambda: a.get("default", "watched") is not None and b.get("default", "watched") is not None)
        for name in ("listed", "watched"):
            assert a.get("default", name) is b.get("default", name)  # one dict, from the list and the watch
        store.update(catalog.PODS, _pod("watched", tier="x"))
        settled(lambda: (a.get("default", "watched") or {})["metadata"]["labels"] == {"tier": "x"})
        settled(lambda: (b.get("default", "watched") or {})["metadata"]["labels"] == {"tier": "x"})
        assert a.get("default", "watched") is b.get("default", "watched")
    finally:
        a.stop()
        b.stop()
    assert store.get(catalog.PODS, "default", "watched") is not a.get("default", "watched")  # get copies


def test_in_checking_mode_an_edit_of_a_shared_object_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CHECK_ENV, "1")
    store = MemoryStore()
    store.create(catalog.PODS, _pod("p", app="a"))
    informer = _started(store)
    try:
        cached = informer.get("default", "p")
        assert cached is not None
        with pytest.raises(SharedMutation):
            cached["metadata"]["labels"]["app"] = "b"
        with pytest.raises(SharedMutation):
            cached["spec"]["containers"].append({})
        with pytest.raises(SharedMutation):
            cached.setdefault("status", {})
        edited = copy.deepcopy(cached)  # copy-on-write is how a consumer edits
        edited["metadata"]["labels"]["app"] = "b"
        assert informer.get("default", "p")["metadata"]["labels"] == {"app": "a"}  # type: ignore[index]
        assert store.get(catalog.PODS, "default", "p")["metadata"]["labels"] == {"app": "a"}
    finally:
        informer.stop()


def test_frozen_data_reads_as_plain_json() -> None:
    data = {"a": [1, {"b": None}], "c": "d"}
    frozen = freeze(data)
    assert isinstance(frozen, FrozenDict) and isinstance(frozen, dict) and frozen == data
    assert json.loads(json.dumps(frozen)) == data
    shallow = dict(frozen)
    shallow["c"] = "e"  # the top level of a copy is the caller's own
    with pytest.raises(SharedMutation):
        shallow["a"].append(2)  # nested parts are still shared
    plain = thaw(frozen)
    plain["a"][1]["b"] = 1
    assert type(plain["a"]) is list and frozen["a"][1] == {"b": None}
    assert copy.copy(frozen) == data and type(copy.copy(frozen)) is dict
