"""The structures that make a Kueue cycle cost what changed (issue #21) give the answers of the plain ones:
the admitted index's candidates are exactly those the preemption policy allows, the kept quota view equals a
fresh copy of the tree at every cycle start, and a parked class keeps the sticky preemptor queued."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from kueue_builders import cohort, cq, wl

from gangplane.api.scheduling.kueue import PreemptionPolicy
from gangplane.schedulers.kueue.admitted import AdmittedIndex
from gangplane.schedulers.kueue.preemption import Preemptor, satisfies_policy
from gangplane.schedulers.kueue.queues import ClusterQueueQueue
from gangplane.schedulers.kueue.quota import KeptView, QuotaTree
from gangplane.schedulers.kueue.workloads import WorkloadState

POLICIES = list(PreemptionPolicy)
GPU = ("default", "gpu")


def _workload(name: str, queue: str, priority: int, queue_time: float) -> WorkloadState:
    return WorkloadState(wl(name, queue, {"gpu": 1}, priority=priority), queue_time=queue_time)


admitted_sets = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(-2, 2), st.integers(0, 3), st.booleans()),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(admitted_sets, st.sampled_from(POLICIES), st.integers(-3, 3), st.integers(0, 3))
def test_allowed_candidates_are_those_the_policy_allows(
    changes: list[tuple[str, int, int, bool]], policy: PreemptionPolicy, priority: int, queue_time: int
) -> None:
    index = AdmittedIndex()
    plain: dict[str, dict[str, WorkloadState]] = {"a": {}, "b": {}}
    for i, (queue, p, t, remove) in enumerate(changes):
        if remove and plain[queue]:
            key = sorted(plain[queue])[0]
            del plain[queue][key]
            index.remove(queue, key)
            continue
        workload = _workload(f"w{i}", queue, p, float(t))
        plain[queue][workload.key] = workload
        index.add(workload)
    preemptor = Preemptor("ns/in", "a", priority, float(queue_time))
    for queue in ("a", "b"):
        expected = {k for k, w in plain[queue].items() if satisfies_policy(policy, preemptor, w)}
        found = [w.key for w in index.allowed(queue, policy, priority, float(queue_time))]
        assert sorted(found) == sorted(expected)
        assert dict(index.get(queue, {})) == plain[queue]


def _tree() -> QuotaTree:
    """Two ClusterQueues lending into a cohort under a root with its own quota (contributions matter)."""
    queues = [
        cq("a", {"default": {"gpu": (4, 2, 1)}}, cohort="mid"),
        cq("b", {"default": {"gpu": (2, None, None)}}, cohort="mid"),
        cq("c", {"default": {"gpu": 3}}, cohort="root"),
    ]
    return QuotaTree(queues, [cohort("mid", parent="root"), cohort("root", {"default": {"gpu": 2}})])


def _usages(tree: QuotaTree) -> dict[str, dict[tuple[str, str], int]]:
    nodes = {**tree.cqs, **tree.cohorts}
    return {name: {fr: v for fr, v in node.usage.items() if v} for name, node in nodes.items()}


changes_in_cycles = st.lists(
    st.tuples(
        st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 4)), max_size=4),  # to the tree
        st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 4)), max_size=4),  # to the view
    ),
    max_size=8,
)


@settings(max_examples=100, deadline=None)
@given(changes_in_cycles)
def test_kept_view_equals_a_fresh_copy_at_every_cycle_start(cycles: list[tuple[list, list]]) -> None:
    tree, kept = _tree(), KeptView()
    held: list[tuple[str, int]] = []
    for to_tree, to_view in cycles:
        view = kept.begin(tree)
        assert _usages(view) == _usages(tree.clone())
        for queue, amount in to_view:  # a cycle's simulated admissions and removals
            view.add_usage(queue, {GPU: amount})
        for queue, amount in to_tree:  # admissions (and releases) that happen for real
            if held and amount % 2 == 0:
                gone = held.pop()
                tree.remove_usage(gone[0], {GPU: gone[1]})
            else:
                tree.add_usage(queue, {GPU: amount})
                held.append((queue, amount))
        kept.end()
    assert _usages(kept.begin(tree)) == _usages(tree.clone())


def test_a_parked_class_keeps_the_sticky_preemptor_queued() -> None:
    queue = ClusterQueueQueue("a")
    first, sticky, later = (_workload(n, "a", 0, float(t)) for n, t in (("w0", 0), ("w1", 1), ("w2", 2)))
    for version, workload in enumerate((sticky, later)):
        queue.push(workload, version)
    queue.sticky = sticky.key
    queue.park(first, 5)
    assert set(queue.active) == {sticky.key}
    assert set(queue.inadmissible) == {first.key, later.key}
    assert queue.pop() is sticky
    queue.sticky = None
    queue.unpark_all()
    assert [queue.pop(), queue.pop(), queue.pop()] == [first, later, None]
