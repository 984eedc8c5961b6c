"""The watch history's bounds (store/history.py): per type as kube-apiserver's watch cache, a floor of recent
changes per type, freshness beyond it, and global count and byte caps that take from the largest type; and
what a past version costs (store/objects.py ``sharing_unchanged``)."""

from __future__ import annotations

import pytest

from gangplane.errors import Gone
from gangplane.store import catalog
from gangplane.store.base import EventType
from gangplane.store.history import Change, History
from gangplane.store.memory import MemoryStore
from gangplane.store.objects import TypeKey

PODS: TypeKey = ("", "pods")
EVENTS: TypeKey = ("", "events")


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _change(rv: int, tk: TypeKey, size: int = 10) -> Change:
    return Change(rv, tk, EventType.ADDED, {"metadata": {"name": str(rv)}}, None, size)


def test_a_burst_of_one_type_does_not_evict_another_types_recent_past() -> None:
    history = History(1000, floor=0, min_per_type=5)
    history.append(_change(1, PODS))
    for rv in range(2, 1200):
        history.append(_change(rv, EVENTS))
    assert len(history) == 1000
    assert [c.rv for c in history.since(0, PODS)] == [1]  # the pod's change survived 1,198 events
    with pytest.raises(Gone):
        history.since(1, EVENTS)
    assert history.since(1198, EVENTS)[0].rv == 1199


def test_changes_older_than_the_fresh_window_go_beyond_the_per_type_floor() -> None:
    clock = _Clock()
    history = History(10_000, floor=0, min_per_type=3, fresh_seconds=75.0, now=clock)
    for rv in range(1, 11):
        history.append(_change(rv, PODS))
    assert history.count(PODS) == 10  # all fresh
    clock.t = 76.0
    history.append(_change(11, PODS))
    assert [c.rv for c in history.since(8, PODS)] == [9, 10, 11]
    with pytest.raises(Gone):
        history.since(7, PODS)


def test_a_quiet_type_ages_out_on_another_types_write() -> None:
    clock = _Clock()
    history = History(10_000, floor=0, min_per_type=2, fresh_seconds=75.0, now=clock)
    for rv in range(1, 6):
        history.append(_change(rv, EVENTS))
    clock.t = 100.0
    history.append(_change(6, PODS))
    assert history.count(EVENTS) == 2
    assert len(history) == 3


def test_bytes_are_bounded_by_taking_from_the_largest_type() -> None:
    history = History(10_000, floor=0, max_bytes=1000, min_per_type=1)
    history.append(_change(1, PODS, size=100))
    for rv in range(2, 50):
        history.append(_change(rv, EVENTS, size=100))
    assert history.bytes <= 1000
    assert history.count(PODS) == 1


def test_a_type_never_written_resumes_from_the_initial_floor() -> None:
    history = History(10, floor=40)
    assert history.since(40, PODS) == []
    with pytest.raises(Gone):
        history.since(39, PODS)


def test_consecutive_versions_share_what_a_write_left_alone() -> None:
    """A past version in the history costs only what changed: a status update shares the stored spec."""
    store = MemoryStore()
    pod = {"metadata": {"name": "p", "namespace": "default", "labels": {"a": "b"}},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip
    created = store.create(catalog.PODS, pod)
    before = store.list_shared(catalog.PODS).items[0]
    store.update_status(catalog.PODS, {**created, "status": {"phase": "Running"}})
    after = store.list_shared(catalog.PODS).items[0]
    assert after["status"] == {"phase": "Running"} and "status" not in before
    assert after["spec"] is before["spec"]
    assert after["metadata"]["labels"] is before["metadata"]["labels"]
    assert after["metadata"] is not before["metadata"]  # its resourceVersion differs


def test_event_changes_are_kept_encoded_and_resume_as_written() -> None:
    """Events' past versions are held as the store holds Events (compact.py); a resuming watch decodes them."""
    history = History(100, floor=0)
    event = {"metadata": {"name": "e", "namespace": "default"}, "reason": "Started", "count": 1}
    bumped = {**event, "count": 2}
    pod = {"metadata": {"name": "p"}}
    history.append(Change(1, EVENTS, EventType.ADDED, event, None, 10))
    history.append(Change(2, EVENTS, EventType.MODIFIED, bumped, event, 20))
    history.append(Change(3, PODS, EventType.ADDED, pod, None, 10))
    kept = list(history._logs[EVENTS].changes)
    assert all(isinstance(change.object, bytes) for change in kept)
    first, second = history.since(0, EVENTS)
    assert (first.rv, first.type, first.object, first.old) == (1, EventType.ADDED, event, None)
    assert (second.rv, second.type, second.object, second.old) == (2, EventType.MODIFIED, bumped, event)
    assert list(second.object) == list(bumped) and history.bytes == 40
    assert history.since(0, PODS)[0].object is pod  # other types keep the stored dict itself
