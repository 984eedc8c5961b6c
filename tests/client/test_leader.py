"""Leader election over a Lease: one leader at a time, take-over after expiry, release on stop."""

from __future__ import annotations

from gangplane.client.leader import LeaderElector, LeaseConfig, next_lease
from gangplane.clock import ManualClock
from gangplane.store.catalog import LEASES
from gangplane.store.memory import MemoryStore


def elector(store: MemoryStore, clock: ManualClock, who: str, events: list[str]) -> LeaderElector:
    config = LeaseConfig("default", "gangplane-controller", who, lease_duration=15, renew_deadline=10)
    return LeaderElector(
        store,
        clock,
        config,
        on_started=lambda: events.append(f"{who} leads"),
        on_stopped=lambda: events.append(f"{who} stops"),
    )


def test_only_one_replica_leads_and_the_other_takes_over_after_expiry() -> None:
    store, clock, events = MemoryStore(), ManualClock(), []
    a, b = elector(store, clock, "a", events), elector(store, clock, "b", events)
    a.step()
    b.step()
    assert (a.leading, b.leading) == (True, False)
    clock.advance(10)
    a.step()  # renewed
    clock.advance(10)
    b.step()
    assert not b.leading  # a renewed 10 s ago; its lease lasts 15
    clock.advance(6)
    b.step()
    assert b.leading
    a.step()  # a cannot renew any more; 16 s since its last renewal exceeds the deadline
    assert events == ["a leads", "b leads", "a stops"]
    lease = store.get(LEASES, "default", "gangplane-controller")
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1


def test_a_released_lease_is_free_at_once() -> None:
    store, clock, events = MemoryStore(), ManualClock(), []
    a, b = elector(store, clock, "a", events), elector(store, clock, "b", events)
    a.step()
    a.stop()
    b.step()
    assert b.leading


def test_next_lease_refuses_a_live_foreign_lease() -> None:
    config = LeaseConfig("ns", "l", "me")
    other = {
        "spec": {
            "holderIdentity": "you",
            "renewTime": "2026-01-01T00:00:00.000000Z",
            "leaseDurationSeconds": 15,
        }
    }
    start = 1_767_225_600.0
    assert next_lease(other, config, start + 14) is None
    taken = next_lease(other, config, start + 16)
    assert taken is not None and taken["spec"]["holderIdentity"] == "me"
