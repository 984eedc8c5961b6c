"""The event recorder's correlation, as client-go's ``tools/record`` does it (``events_cache_test.go``
``TestEventCorrelator``: identical events are counted on one Event; more than 10 similar ones in 10 minutes
are combined; ``EventSourceObjectSpamFilter``: 25 events from one source about one object, then one per five
minutes)."""

from __future__ import annotations

from gangplane.client.events import (
    COMBINED_PREFIX,
    MAX_CACHED,
    MAX_SIMILAR,
    SPAM_BURST,
    EventCorrelator,
    EventRecorder,
)
from gangplane.clock import ManualClock, rfc3339
from gangplane.store import catalog
from gangplane.store.base import ListOptions
from gangplane.store.memory import MemoryStore

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u1"}}


def events(store: MemoryStore) -> list[dict]:  # type: ignore[type-arg]
    return store.list(catalog.EVENTS, ListOptions(namespace="default")).items


def test_identical_events_are_counted_on_one_event() -> None:
    store, clock = MemoryStore(), ManualClock()
    recorder = EventRecorder(store, clock, "kubelet", host="node-1")
    recorder.event(POD, "Warning", "BackOff", "Back-off restarting failed container c in pod p_default(u1)")
    first = clock.now()
    clock.advance(30)
    recorder.event(POD, "Warning", "BackOff", "Back-off restarting failed container c in pod p_default(u1)")
    recorder.event(POD, "Normal", "Started", "Started container c", field_path="spec.containers{c}")
    by_reason = {e["reason"]: e for e in events(store)}
    backoff = by_reason["BackOff"]
    assert backoff["count"] == 2
    assert (backoff["firstTimestamp"], backoff["lastTimestamp"]) == (rfc3339(first), rfc3339(clock.now()))
    assert backoff["source"] == {"component": "kubelet", "host": "node-1"}
    assert by_reason["Started"]["involvedObject"]["fieldPath"] == "spec.containers{c}"


def test_a_deleted_event_is_created_again_with_count_one() -> None:
    store, clock = MemoryStore(), ManualClock()
    recorder = EventRecorder(store, clock, "kubelet")
    recorder.event(POD, "Normal", "Killing", "Stopping container c")
    [event] = events(store)
    store.delete(catalog.EVENTS, "default", event["metadata"]["name"])
    clock.advance(1)
    recorder.event(POD, "Normal", "Killing", "Stopping container c")
    [again] = events(store)
    assert again["count"] == 1 and again["metadata"]["name"] != event["metadata"]["name"]


def test_more_than_ten_similar_events_in_ten_minutes_are_combined() -> None:
    correlator = EventCorrelator()
    key = ("kubelet", "", "Pod", "default", "p", "u1", "", "Warning", "Failed")
    seen = [correlator.correlate(key, f"Error: {i}", f"e{i}", 100.0 + i) for i in range(MAX_SIMILAR + 2)]
    assert all(d.create for d in seen[:MAX_SIMILAR]) and seen[MAX_SIMILAR].create
    assert seen[MAX_SIMILAR].message == COMBINED_PREFIX + f"Error: {MAX_SIMILAR}"
    assert not seen[MAX_SIMILAR + 1].create and seen[MAX_SIMILAR + 1].name == seen[MAX_SIMILAR].name
    assert seen[MAX_SIMILAR + 1].count == 2
    later = correlator.correlate(key, "Error: new", "late", 100.0 + 601)
    assert later.message == "Error: new"  # a new window starts after 10 minutes


def test_a_source_records_25_events_about_an_object_then_one_per_five_minutes() -> None:
    store, clock = MemoryStore(), ManualClock()
    kubelet, other = (
        EventRecorder(store, clock, "kubelet", host="node-1"),
        EventRecorder(store, clock, "kubelet"),
    )
    for i in range(SPAM_BURST + 5):
        kubelet.event(POD, "Normal", f"Reason{i}", "m")  # distinct reasons: each would be an Event of its own
    assert len(events(store)) == SPAM_BURST
    other.event(POD, "Normal", "Reason0", "m")  # another source (no host) has its own budget
    kubelet.event(
        {**POD, "metadata": {**POD["metadata"], "name": "q", "uid": "u2"}}, "Normal", "Reason0", "m"
    )
    assert len(events(store)) == SPAM_BURST + 2
    clock.advance(299)
    kubelet.event(POD, "Normal", "Late", "m")
    clock.advance(1)
    kubelet.event(POD, "Normal", "OnTime", "m")
    assert {e["reason"] for e in events(store)} & {"Late", "OnTime"} == {"OnTime"}


def test_a_filtered_event_still_counts() -> None:
    correlator, now = EventCorrelator(), 100.0
    spam = ("kubelet", "", "Pod", "default", "p", "u1", "v1")
    key = ("kubelet", "", "Pod", "default", "p", "u1", "", "Warning", "BackOff")
    seen = [correlator.correlate(key, "Back-off", "e", now, spam_key=spam) for _ in range(SPAM_BURST + 1)]
    assert [d.skip for d in seen] == [False] * SPAM_BURST + [True]
    after = correlator.correlate(key, "Back-off", "e", now + 300, spam_key=spam)
    assert not after.skip and not after.create and after.count == SPAM_BURST + 2


def test_the_correlator_forgets_the_least_recently_used_key_past_its_bound() -> None:
    """client-go's caches are LRUs of ``maxLruCacheEntries``: a key counted again is recent, so the key left
    alone longest is the one forgotten (its next event creates a new Event)."""
    correlator = EventCorrelator()
    first = correlator.correlate(("k", "0"), "m", "e0", 0.0)
    for i in range(1, MAX_CACHED):
        correlator.correlate(("k", str(i)), "m", f"e{i}", 0.0)
    assert not correlator.correlate(("k", "0"), "m", "again", 1.0).create  # counted, now the most recent
    correlator.correlate(("k", "new"), "m", "e-new", 2.0)  # one past the bound: ("k", "1") is forgotten
    assert correlator.correlate(("k", "0"), "m", "again", 3.0).name == first.name
    assert correlator.correlate(("k", "1"), "m", "e1-again", 3.0).create
