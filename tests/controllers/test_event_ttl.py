"""Events expire after the TTL (kube-apiserver's --event-ttl), counted from their last write; with an
injected clock."""

from __future__ import annotations

import time
from typing import Any

import pytest

from gangplane.client.events import EventRecorder
from gangplane.clock import ManualClock, rfc3339
from gangplane.controllers.event_ttl import EventExpiry, expired, last_written, parse_duration
from gangplane.store.catalog import CONFIGMAPS, EVENTS
from gangplane.store.memory import MemoryStore


def _recording() -> tuple[ManualClock, MemoryStore, dict[str, Any], EventRecorder]:
    """A store on a manual clock, an object and a kubelet's recorder of Events about it."""
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    owner = store.create(CONFIGMAPS, {"metadata": {"name": "cm", "namespace": "default"}})
    return clock, store, owner, EventRecorder(store, clock, "kubelet")


def test_an_event_goes_one_ttl_after_its_last_update_and_others_stay() -> None:
    clock, store, owner, recorder = _recording()
    recorder.event(owner, "Normal", "Started", "first")
    clock.advance(1800)
    recorder.event(owner, "Normal", "Pulled", "second")
    expiry = EventExpiry(store, clock, ttl=3600)
    clock.advance(1801)  # "first" is 3601 s old, "second" 1801 s
    assert expiry.sweep() == 1
    assert [e["message"] for e in store.list(EVENTS).items] == ["second"]
    recorder.event(owner, "Normal", "Pulled", "second")  # a repeat bumps the count and the last timestamp
    clock.advance(3000)
    assert expiry.sweep() == 0 and store.list(EVENTS).items[0]["count"] == 2
    clock.advance(601)
    assert expiry.sweep() == 1 and store.list(EVENTS).items == []


def test_a_sweep_pages_through_every_event(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gangplane.controllers.event_ttl.PAGE", 2)
    clock, store, owner, recorder = _recording()
    for i in range(5):
        recorder.event(owner, "Normal", f"Old{i}", "old")
    clock.advance(1800)
    for i in range(4):
        recorder.event(owner, "Normal", f"New{i}", "new")
    clock.advance(1801)
    assert EventExpiry(store, clock, ttl=3600).sweep() == 5
    assert sorted(e["reason"] for e in store.list(EVENTS).items) == [f"New{i}" for i in range(4)]


def test_the_latest_recorded_time_counts() -> None:
    def event(**fields: Any) -> dict[str, Any]:
        return {
            "metadata": {"name": "e", "namespace": "n", "uid": "u", "creationTimestamp": rfc3339(100)},
            **fields,
        }

    assert last_written(event()) == 100
    assert last_written(event(lastTimestamp=rfc3339(500), eventTime="2026-01-01T00:00:00.000000Z")) == max(
        500, 1_767_225_600
    )
    assert last_written(event(series={"lastObservedTime": rfc3339(900)}, lastTimestamp=None)) == 900
    assert expired([event(lastTimestamp=rfc3339(500))], now=4101, ttl=3600) == [("n", "e", {"uid": "u"})]
    assert expired([event(lastTimestamp=rfc3339(500))], now=4100, ttl=3600) == []


@pytest.mark.parametrize(("text", "seconds"), [("1h", 3600), ("30m", 1800), ("1h0m0s", 3600), ("90", 90),
                                               ("1m30s", 90), ("0.5h", 1800)])  # fmt: skip
def test_durations_read_as_kube_apiserver_flags(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "-5", "1d", "h", "soon"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def test_the_sweep_runs_on_its_own_until_stopped() -> None:
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    owner = store.create(CONFIGMAPS, {"metadata": {"name": "cm", "namespace": "default"}})
    EventRecorder(store, clock, "kubelet").event(owner, "Normal", "Started", "old")
    clock.advance(10)
    expiry = EventExpiry(store, clock, ttl=5, period=0.05)
    expiry.start()
    try:
        for _ in range(100):
            if not store.list(EVENTS).items:
                break
            time.sleep(0.05)
    finally:
        expiry.stop()
    assert store.list(EVENTS).items == []


def test_an_event_repeated_after_the_sweep_read_it_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep reads a page, then deletes what it found expired: an Event bumped in between (a repeat: new
    count and last timestamp) is no longer expired and must stay, as its etcd lease is renewed upstream."""
    clock, store, owner, recorder = _recording()
    recorder.event(owner, "Normal", "Pulled", "again")
    clock.advance(3601)
    expiry = EventExpiry(store, clock, ttl=3600)
    pages = expiry._pages

    def bumped_after_read() -> Any:
        for page in pages():
            recorder.event(owner, "Normal", "Pulled", "again")  # lands between the list and the delete
            yield page

    monkeypatch.setattr(expiry, "_pages", bumped_after_read)
    assert expiry.sweep() == 0
    assert [e["count"] for e in store.list(EVENTS).items] == [2]
