"""Property: whatever arrives and finishes, admitted usage never exceeds what quotas allow."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from kueue_builders import cohort, cq, state, wl

from gangplane.api.scheduling.kueue import PreemptionPolicy as P
from gangplane.schedulers.kueue.cycle import run_cycle
from gangplane.schedulers.kueue.fairsharing import DEFAULT_STRATEGIES
from gangplane.schedulers.kueue.quota import QuotaTree

FR = ("default", "gpu")
QUEUES = ("a", "b", "c", "d")


def _setup(limits, fair):  # type: ignore[no-untyped-def]
    specs = [
        cq(name, {"default": {"gpu": limit}}, cohort="left" if name in "ab" else "right",
           within=P.LOWER_PRIORITY, reclaim=P.ANY)
        for name, limit in zip(QUEUES, limits, strict=True)
    ]  # fmt: skip
    cohorts = (cohort("left", {"default": {"gpu": (2, 3, None)}}, parent="root"), cohort("right", parent="root"),
               cohort("root"))  # fmt: skip
    return state(*specs, cohorts=cohorts, fair=fair)


def _check(s) -> None:  # type: ignore[no-untyped-def]
    fresh = QuotaTree(s.cluster_queues.values(), s.cohorts.values())
    for name, by_key in s.admitted.items():
        for w in by_key.values():
            fresh.add_usage(name, w.usage)
    for name, node in s.tree.cqs.items():
        assert node.usage.get(FR, 0) == fresh.cqs[name].usage.get(FR, 0)
    for node in [*s.tree.cqs.values(), *s.tree.cohorts.values()]:
        used, quota = node.usage.get(FR, 0), node.subtree.get(FR, 0)
        if node.parent is None:
            assert used <= quota
        limit = node.borrowing_limit(FR)
        if limit is not None:
            assert used <= quota + limit


quota = st.tuples(st.integers(0, 6), st.none() | st.integers(0, 4), st.none() | st.integers(0, 6))
event = st.tuples(
    st.sampled_from(("add", "finish")), st.sampled_from(QUEUES), st.integers(1, 8), st.integers(0, 3)
)


@settings(max_examples=60, deadline=None)
@given(st.lists(quota, min_size=4, max_size=4), st.lists(event, max_size=40), st.booleans())
def test_admitted_usage_respects_every_quota(limits, events, fair) -> None:  # type: ignore[no-untyped-def]
    s = _setup(limits, DEFAULT_STRATEGIES if fair else None)
    now = 0.0
    for i, (kind, queue, size, priority) in enumerate(events):
        now += 0.7
        if kind == "add":
            s.add_workload(wl(f"w{i}", queue, {"gpu": size}, priority=priority, created=now), now)
        elif s.admitted.get(queue):
            s.finish_workload(sorted(s.admitted[queue])[0], True, "", now)
        run_cycle(s, now)
        _check(s)
