"""Flavor assignment: order, eligibility, fungibility, messages, and the node selector it yields."""

from __future__ import annotations

import dataclasses

import pytest
from kueue_builders import cq, wl

from gangplane.api.core import Taint, Toleration
from gangplane.api.scheduling.kueue import FlavorFungibilityPolicy as F
from gangplane.schedulers.kueue.flavors import assign_flavors, node_selector, tolerations
from gangplane.schedulers.kueue.model import (
    AssignmentMode,
    FlavorMode,
    FlavorSpec,
    Fungibility,
    PendingReason,
    PodSetRequest,
)
from gangplane.schedulers.kueue.quota import QuotaTree

GPU = "nvidia.com/gpu"
FLAVORS = {
    "a100": FlavorSpec("a100", {"gpu-type": "a100"}, tolerations=(Toleration(key="gpu", operator="Exists"),)),
    "h100": FlavorSpec("h100", {"gpu-type": "h100"}),
}


def _no_preemption(fr, amount):  # type: ignore[no-untyped-def]
    return FlavorMode.NO_CANDIDATES, 0


def _assign(spec, request, *, usage=None, flavors=FLAVORS, oracle=_no_preemption, extra=()):  # type: ignore[no-untyped-def]
    tree = QuotaTree([spec, *extra])
    for name, u in (usage or {}).items():
        tree.add_usage(name, u)
    return assign_flavors(request, spec, tree, flavors, oracle)


TWO = cq("team", {"a100": {GPU: 8, "cpu": 64_000}, "h100": {GPU: 8, "cpu": 64_000}})  # cpu in milli-units


def test_first_flavor_that_fits_gives_node_selector_and_tolerations() -> None:
    result = _assign(TWO, wl("j", "team", {GPU: 2, "cpu": 4000}, count=2))
    assert result.mode == AssignmentMode.FIT
    pod_set = result.pod_sets[0]
    assert pod_set.flavors == {GPU: "a100", "cpu": "a100"}
    assert result.usage == {("a100", GPU): 4, ("a100", "cpu"): 8000}
    assert node_selector(pod_set, FLAVORS) == {"gpu-type": "a100"}
    assert tolerations(pod_set, FLAVORS) == [Toleration(key="gpu", operator="Exists")]


def test_node_selector_skips_flavors_whose_labels_disagree() -> None:
    result = _assign(TWO, wl("j", "team", {GPU: 1}, node_selector={"gpu-type": "h100", "zone": "x"}))
    assert result.pod_sets[0].flavors == {GPU: "h100"}


def test_untolerated_taint_skips_flavor() -> None:
    tainted = {
        **FLAVORS,
        "a100": FlavorSpec("a100", {}, (Taint(key="dedicated", value="x", effect="NoSchedule"),)),
    }
    result = _assign(TWO, wl("j", "team", {GPU: 1}), flavors=tainted)
    assert result.pod_sets[0].flavors == {GPU: "h100"}


def test_full_first_flavor_moves_to_the_next() -> None:
    result = _assign(TWO, wl("j", "team", {GPU: 4}), usage={"team": {("a100", GPU): 6}})
    assert result.pod_sets[0].flavors == {GPU: "h100"}
    assert result.mode == AssignmentMode.FIT


def test_no_fit_message_says_how_much_is_missing() -> None:
    spec = cq("team", {"a100": {GPU: 8}})
    result = _assign(spec, wl("j", "team", {GPU: 8}), usage={"team": {("a100", GPU): 4}})
    assert (
        result.mode == AssignmentMode.PREEMPT
    )  # candidates were searched (none): the cycle reserves the quota
    assert result.pod_sets[0].mode == FlavorMode.NO_CANDIDATES
    assert result.message() == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor a100, "
        "4 more needed"
    )


def test_messages_give_amounts_as_quantities_not_millicores() -> None:
    """Upstream formats amounts with its resourceFormatter: cpu 8000m reads "8", 1500m reads "1500m"."""
    spec = cq("team", {"a100": {"cpu": 16_000, "memory": 2**34}})
    used = {"team": {("a100", "cpu"): 8000, ("a100", "memory"): 2**33}}
    result = _assign(spec, wl("j", "team", {"cpu": 16_000, "memory": 2**33 + 2**32}), usage=used)
    assert "insufficient unused quota for cpu in flavor a100, 8 more needed" in result.message()
    assert "insufficient unused quota for memory in flavor a100, 4Gi more needed" in result.message()
    over = _assign(spec, wl("j", "team", {"cpu": 1500}, count=11))
    assert "current podset request (16500m) > maximum capacity (16)" in over.message()


def test_exceeds_max_quota() -> None:
    spec = cq("team", {"a100": {GPU: 8}})
    result = _assign(spec, wl("j", "team", {GPU: 3}, count=3))
    assert result.mode == AssignmentMode.NO_FIT
    assert result.reason == PendingReason.EXCEEDS_MAX_QUOTA
    assert "current podset request (9) > maximum capacity (8)" in result.message()


def test_uncovered_resource_does_not_fit() -> None:
    result = _assign(cq("team", {"a100": {GPU: 8}}), wl("j", "team", {GPU: 1, "memory": 10}))
    assert result.mode == AssignmentMode.NO_FIT
    assert "resource memory unavailable in ClusterQueue" in result.message()


def test_pods_resource_counts_pods() -> None:
    result = _assign(cq("team", {"a100": {GPU: 8, "pods": 4}}), wl("j", "team", {GPU: 1}, count=3))
    assert result.usage[("a100", "pods")] == 3


def test_earlier_pod_sets_are_assumed_usage() -> None:
    request = wl("j", "team", {GPU: 6})
    request = dataclasses.replace(
        request, pod_sets=(*request.pod_sets, PodSetRequest("workers", 1, {GPU: 6}))
    )
    result = _assign(TWO, request)
    assert [p.flavors[GPU] for p in result.pod_sets] == ["a100", "h100"]


@pytest.mark.parametrize(
    ("when_can_borrow", "expected"),
    [(F.MAY_STOP_SEARCH, "a100"), (F.TRY_NEXT_FLAVOR, "h100")],
)
def test_when_can_borrow(when_can_borrow: F, expected: str) -> None:
    spec = dataclasses.replace(
        cq("team", {"a100": {GPU: 2}, "h100": {GPU: 8}}, cohort="pool"),
        fungibility=Fungibility(when_can_borrow=when_can_borrow),
    )
    lender = cq("lender", {"a100": {GPU: 8}, "h100": {GPU: 0}}, cohort="pool")
    result = _assign(spec, wl("j", "team", {GPU: 4}), extra=[lender])
    assert result.pod_sets[0].flavors == {GPU: expected}
    assert result.pod_sets[0].borrow == (1 if expected == "a100" else 0)


@pytest.mark.parametrize(
    ("when_can_preempt", "expected_flavor", "expected_mode"),
    [(F.TRY_NEXT_FLAVOR, "h100", AssignmentMode.FIT), (F.MAY_STOP_SEARCH, "a100", AssignmentMode.PREEMPT)],
)
def test_when_can_preempt(when_can_preempt: F, expected_flavor: str, expected_mode: AssignmentMode) -> None:
    spec = dataclasses.replace(TWO, fungibility=Fungibility(when_can_preempt=when_can_preempt))
    result = _assign(
        spec,
        wl("j", "team", {GPU: 4}),
        usage={"team": {("a100", GPU): 8}},
        oracle=lambda fr, v: (FlavorMode.PREEMPT, 0),
    )
    assert result.pod_sets[0].flavors[GPU] == expected_flavor
    assert result.mode == expected_mode


def test_a_workloads_required_node_affinity_reaches_flavor_assignment() -> None:
    """convert reads the pod template's required node-affinity terms into the pod set flavor assignment
    matches (``test_kueue_upstream_assign_flavors`` covers the matching)."""
    from gangplane.api.scheduling import kueue_workload as kw
    from gangplane.schedulers.core.objects import Requirement
    from gangplane.schedulers.kueue.convert import workload_request

    term = {"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["a100"]}]}
    affinity = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    body = {"metadata": {"name": "w", "namespace": "ns"}, "spec": {"podSets": [{"name": "main", "count": 1,
            "template": {"spec": {"affinity": affinity, "containers": [{"name": "c"}]}}}]}}  # fmt: skip
    request = workload_request(kw.Workload.model_validate(body), "cq", {})
    assert request.pod_sets[0].affinity == ((Requirement("gpu", "NotIn", ("a100",)),),)
