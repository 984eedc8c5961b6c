"""The Priority plugin's ``globalDefault`` class is cached between pod creates, and a PriorityClass write (or
a store reload) is seen by the next pod at once (``server/admission.py``, ``CachedPriorityClasses``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gangplane.server.admission import TrainerAdmission
from gangplane.server.resources import default_registry
from gangplane.store import MemoryStore
from gangplane.store.catalog import PODS, PRIORITY_CLASSES


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    admission = TrainerAdmission(default_registry())
    s = MemoryStore(admission=admission)
    admission.bind(s)
    yield s
    s.close()


def _pod(store: MemoryStore, name: str) -> dict[str, Any]:
    doc = {
        "metadata": {"name": name, "namespace": "d"},
        "spec": {"containers": [{"name": "c", "image": "x:1"}]},
    }
    return store.create(PODS, doc)["spec"]


def _default_class(value: int, name: str = "fallback") -> dict[str, Any]:
    return {"metadata": {"name": name}, "value": value, "globalDefault": True}


def test_a_new_default_class_is_used_by_the_next_pod(store: MemoryStore) -> None:
    assert _pod(store, "a")["priority"] == 0
    store.create(PRIORITY_CLASSES, _default_class(7))
    spec = _pod(store, "b")
    assert (spec["priority"], spec["priorityClassName"]) == (7, "fallback")
    store.delete(PRIORITY_CLASSES, "", "fallback")
    assert "priorityClassName" not in _pod(store, "c") and _pod(store, "d")["priority"] == 0


def test_a_changed_default_class_is_used_by_the_next_pod(store: MemoryStore) -> None:
    store.create(PRIORITY_CLASSES, _default_class(7))
    assert _pod(store, "a")["priority"] == 7
    store.create(PRIORITY_CLASSES, _default_class(3, "lower"))  # the lowest of several defaults wins
    assert _pod(store, "b")["priority"] == 3


def test_the_classes_are_listed_once_while_none_is_written(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed: list[str] = []
    real = store.list

    def counting(rt: Any, *args: Any, **kwargs: Any) -> Any:
        listed.append(rt.kind)
        return real(rt, *args, **kwargs)

    monkeypatch.setattr(store, "list", counting)
    for name in "abc":
        _pod(store, name)
    assert listed == ["PriorityClass"]
