"""Quota arithmetic in cohort trees, with the worked numbers of reference kueue.md §2 and a 3-level tree."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kueue_builders import cohort, cq

from gangplane.schedulers.kueue.quota import (
    QuotaTree,
    available,
    lowest_fitting_subtree_height,
    potential_available,
)

CPU = ("default", "cpu")


def _usage(tree: QuotaTree, **by_cq: int) -> None:
    for name, amount in by_cq.items():
        tree.add_usage(name, {CPU: amount})


def test_reference_worked_example() -> None:
    # Cohort C (no quota): A nominal 10 lendingLimit 4, B nominal 6 borrowingLimit 5; A uses 8, B uses 3.
    tree = QuotaTree(
        [
            cq("a", {"default": {"cpu": (10, None, 4)}}, cohort="c"),
            cq("b", {"default": {"cpu": (6, 5, None)}}, cohort="c"),
        ]
    )
    _usage(tree, a=8, b=3)
    c, a, b = tree.cohorts["c"], tree.cqs["a"], tree.cqs["b"]
    assert (a.local[CPU], b.local.get(CPU, 0), c.subtree[CPU]) == (6, 0, 10)
    assert c.usage[CPU] == 5
    assert available(c, CPU) == 5
    assert available(b, CPU) == 5
    assert available(a, CPU) == 5
    assert potential_available(b, CPU) == 10
    assert potential_available(a, CPU) == 6 + 10


def _three_levels() -> QuotaTree:
    return QuotaTree(
        [
            cq("a", {"default": {"cpu": (10, None, 4)}}, cohort="research"),
            cq("b", {"default": {"cpu": 6}}, cohort="research"),
            cq("c", {"default": {"cpu": 5}}, cohort="org"),
        ],
        [
            cohort("org", {"default": {"cpu": 4}}),
            cohort("research", {"default": {"cpu": (0, 3, None)}}, parent="org"),
        ],
    )


def test_three_level_tree_quota_and_available() -> None:
    tree = _three_levels()
    org, research = tree.cohorts["org"], tree.cohorts["research"]
    assert research.subtree[CPU] == 10  # 0 own + (10 - 6 kept by a) + 6
    assert org.subtree[CPU] == 19  # 4 own + 10 + 5
    _usage(tree, a=8, b=3, c=7)
    assert research.usage[CPU] == 5 and org.usage[CPU] == 12
    assert available(org, CPU) == 7
    assert available(research, CPU) == 7  # min(7, 10 - 5 + 3)
    assert [available(tree.cqs[n], CPU) for n in "abc"] == [7, 7, 7]
    assert potential_available(research, CPU) == 13  # capped by its borrowing limit: 10 + 3
    assert [potential_available(tree.cqs[n], CPU) for n in "abc"] == [19, 13, 19]


def test_cohort_borrowing_limit_binds() -> None:
    tree = _three_levels()
    _usage(tree, a=8, b=11, c=2)  # research uses 2 + 11 = 13 = subtree 10 + borrowing limit 3
    assert available(tree.cohorts["org"], CPU) == 4
    assert available(tree.cqs["b"], CPU) == 0
    assert available(tree.cqs["c"], CPU) == 4


def test_borrow_level_is_the_height_of_the_lowest_fitting_subtree() -> None:
    tree = _three_levels()
    _usage(tree, a=8, b=3, c=7)
    b = tree.cqs["b"]
    assert lowest_fitting_subtree_height(b, CPU, 2) == (0, True)
    assert lowest_fitting_subtree_height(b, CPU, 5) == (1, True)
    assert lowest_fitting_subtree_height(b, CPU, 7) == (2, False)


def test_quota_shrink_makes_available_negative() -> None:
    tree = QuotaTree([cq("solo", {"default": {"cpu": 4}})])
    _usage(tree, solo=6)
    assert available(tree.cqs["solo"], CPU) == -2


def test_clone_is_independent() -> None:
    tree = _three_levels()
    view = tree.clone()
    view.add_usage("a", {CPU: 9})
    assert tree.cohorts["org"].usage.get(CPU, 0) == 0
    assert view.cohorts["org"].usage[CPU] == 3


def test_cohort_cycle_disables_members() -> None:
    tree = QuotaTree(
        [cq("x", {"default": {"cpu": 1}}, cohort="p")], [cohort("p", parent="q"), cohort("q", parent="p")]
    )
    assert tree.inactive == {"x"}


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 12)), max_size=12))
def test_remove_usage_undoes_add_usage(changes: list[tuple[str, int]]) -> None:
    tree = _three_levels()
    for name, amount in changes:
        tree.add_usage(name, {CPU: amount})
    for name, amount in reversed(changes):
        tree.remove_usage(name, {CPU: amount})
    nodes = [*tree.cqs.values(), *tree.cohorts.values()]
    assert all(n.usage.get(CPU, 0) == 0 for n in nodes)
