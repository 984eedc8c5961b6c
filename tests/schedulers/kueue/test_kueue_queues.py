"""Queue order: grouping workloads into equivalence classes must not change the heap order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kueue_builders import wl

from gangplane.schedulers.kueue.queues import ClusterQueueQueue, QueueManager, heap_order
from gangplane.schedulers.kueue.workloads import WorkloadState

item = st.tuples(st.integers(1, 3), st.integers(0, 2), st.integers(0, 50))


def _states(items: list[tuple[int, int, int]]) -> list[WorkloadState]:
    return [
        WorkloadState(wl(f"w{i}", "cq", {"gpu": size}, priority=prio, created=t), queue_time=float(t))
        for i, (size, prio, t) in enumerate(items)
    ]


@given(st.lists(item, max_size=30), st.data())
def test_pop_order_equals_one_heap_over_all(items, data) -> None:  # type: ignore[no-untyped-def]
    queue = ClusterQueueQueue("cq")
    states = _states(items)
    for version, state in enumerate(states):
        queue.push(state, version)
    removed = set(data.draw(st.sets(st.sampled_from([s.key for s in states])) if states else st.just(set())))
    for key in removed:
        queue.remove(key)
    popped = []
    while (state := queue.pop()) is not None:
        popped.append(state.key)
    expected = [s.key for s in sorted(states, key=heap_order) if s.key not in removed]
    assert popped == expected


@given(st.lists(item, min_size=1, max_size=30))
def test_parked_class_returns_in_order_after_requeue(items) -> None:  # type: ignore[no-untyped-def]
    manager = QueueManager()
    states = _states(items)
    for state in states:
        manager.push(state, 0)
    head = manager.pop("cq")
    assert head is not None
    manager.requeue(head, inadmissible=True)
    queue = manager.queue("cq")
    parked = set(queue.inadmissible)
    assert head.key in parked
    assert all(queue.members[k][1].shape == head.shape for k in parked)
    manager.schedule_requeue(["cq"], 0)
    manager.flush(1)
    order = []
    while (state := manager.pop("cq")) is not None:
        order.append(state.key)
    assert order == [s.key for s in sorted(states, key=heap_order)]
