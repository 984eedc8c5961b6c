"""Upstream's ``pkg/scheduler/flavorassigner/flavorassigner_test.go`` ``TestAssignFlavors`` and ``TestDeletedFlavors``,
case by case (keys are upstream's case names), against ``flavors.assign_flavors``.

As upstream: the workload's pod sets, ``test-clusterqueue`` (and ``test-secondary-clusterqueue`` in the same
cohort) with the usage given, and a stub preemption oracle answering per flavor-resource (``Preempt, 0`` for any
other, upstream's ``testOracle``). Compared: the representative mode, each pod set's flavors, the reasons of a pod
set that does not fit (upstream's ``Status``), the borrowing level and the NoFit reason. Upstream's per-resource
modes and ``FlavorAssignmentAttempts`` are not compared (a pod set here has one mode). Not ported, and why:
``NOT_PORTED`` at the end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import pytest
from kueue_builders import cq

from gangplane.api.core import Taint, Toleration
from gangplane.api.scheduling.kueue import FlavorFungibilityPolicy as F
from gangplane.api.scheduling.kueue import PreemptionPolicy as P
from gangplane.schedulers.core.objects import Requirement
from gangplane.schedulers.kueue.flavors import assign_flavors
from gangplane.schedulers.kueue.model import (
    AssignmentMode,
    ClusterQueueSpec,
    FlavorMode,
    FlavorQuotas,
    FlavorResource,
    FlavorSpec,
    Fungibility,
    PodSetRequest,
    ResourceGroup,
    ResourceQuota,
    WorkloadRequest,
    to_amount,
)
from gangplane.schedulers.kueue.quota import QuotaTree

CPU, MEM, GPU, PODS = "cpu", "memory", "example.com/gpu", "pods"
FIT, PREEMPT, NO_FIT = AssignmentMode.FIT, AssignmentMode.PREEMPT, AssignmentMode.NO_FIT
MAX, NO_FLAVOR = "ExceedsMaxQuota", "NoMatchingFlavor"
SPOT = Toleration(key="instance", operator="Equal", value="spot", effect="NoSchedule")
_SPOT_TAINT = (Taint(key="instance", value="spot", effect="NoSchedule"),)
FLAVORS = {
    f.name: f
    for f in (
        FlavorSpec("default"), FlavorSpec("one", {"type": "one"}), FlavorSpec("two", {"type": "two"}),
        FlavorSpec("b_one", {"b_type": "one"}), FlavorSpec("b_two", {"b_type": "two"}),
        FlavorSpec("tainted", node_taints=_SPOT_TAINT),
        FlavorSpec("taint_and_toleration", node_taints=_SPOT_TAINT, tolerations=(SPOT,)),
        FlavorSpec("label-x-a", {"x": "a"}), FlavorSpec("label-xy-b", {"x": "b", "y": "k"}),
        FlavorSpec("flavor"),  # TestDeletedFlavors' (its "deleted-flavor" is absent on purpose)
    )
}  # fmt: skip

Quota = str | tuple[str, str | None, str | None]
"""A nominal quota, or (nominal, borrowingLimit, lendingLimit) as upstream's ``ResourceQuotaWrapper``."""


def _quota(resource: str, q: Quota) -> ResourceQuota:
    nominal, borrow, lend = (q, None, None) if isinstance(q, str) else q
    amount = lambda v: None if v is None else to_amount(resource, v)  # noqa: E731
    return ResourceQuota(to_amount(resource, nominal), amount(borrow), amount(lend))


def rg(flavors: Mapping[str, Mapping[str, Quota]]) -> ResourceGroup:
    covered = tuple(sorted({r for res in flavors.values() for r in res}))
    quotas = tuple(FlavorQuotas(f, {r: _quota(r, q) for r, q in res.items()}) for f, res in flavors.items())
    return ResourceGroup(covered, quotas)


def the_cq(*groups: ResourceGroup, cohort: bool = False, **options: object) -> ClusterQueueSpec:
    return replace(cq("test-clusterqueue", cohort="test-cohort" if cohort else None, **options),  # type: ignore[arg-type]
                   resource_groups=groups)  # fmt: skip


def secondary(*groups: ResourceGroup) -> ClusterQueueSpec:
    return replace(cq("test-secondary-clusterqueue", cohort="test-cohort"), resource_groups=groups)


@dataclass(frozen=True)
class Pod:
    name: str
    count: int
    requests: Mapping[str, str]
    selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    affinity: tuple[tuple[Requirement, ...], ...] = ()


def label_in(key: str, *values: str) -> Requirement:
    return Requirement(key, "In", values)


def pod(requests: Mapping[str, str], count: int = 1, name: str = "main", **kwargs: object) -> Pod:
    return Pod(name, count, requests, **kwargs)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Case:
    pods: tuple[Pod, ...]
    cq: ClusterQueueSpec
    mode: AssignmentMode = FIT
    flavors: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Per pod set, ``{resource: flavor}`` (a str: that flavor for every resource requested)."""
    reasons: Mapping[str, list[str]] = field(default_factory=dict)
    usage: Mapping[FlavorResource, int] = field(default_factory=dict)
    second: ClusterQueueSpec | None = None
    second_usage: Mapping[FlavorResource, int] = field(default_factory=dict)
    simulation: Mapping[FlavorResource, tuple[FlavorMode, int]] = field(default_factory=dict)
    borrow: int = 0
    no_fit: str | None = None
    fair: bool = False


def _request(case: Case) -> WorkloadRequest:
    sets = tuple(
        PodSetRequest(p.name, p.count, {r: to_amount(r, q) for r, q in p.requests.items()}, dict(p.selector),
                      p.tolerations, p.affinity)
        for p in case.pods
    )  # fmt: skip
    return WorkloadRequest("ns/w", "ns", "lq", case.cq.name, sets)


def _want_flavors(case: Case, request: WorkloadRequest) -> dict[str, dict[str, str]]:
    want = {}
    for p in request.pod_sets:
        given = case.flavors.get(p.name)
        if given is None:
            continue
        want[p.name] = dict(given) if not isinstance(given, str) else {r: given for r in p.requests}
    return want


def run(case: Case) -> None:
    specs = [case.cq, *([case.second] if case.second else [])]
    tree = QuotaTree(specs, ())
    tree.add_usage(case.cq.name, case.usage)
    if case.second is not None:
        tree.add_usage(case.second.name, case.second_usage)

    def oracle(fr: FlavorResource, amount: int) -> tuple[FlavorMode, int]:
        return case.simulation.get(fr, (FlavorMode.PREEMPT, 0))

    request = _request(case)
    result = assign_flavors(request, case.cq, tree, FLAVORS, oracle, fair_sharing=case.fair)
    assert result.mode == case.mode
    viable = {p.name: dict(p.flavors) for p in result.pod_sets if p.mode > FlavorMode.NO_FIT}
    assert viable == _want_flavors(case, request)
    failing = {p.name: sorted(p.reasons) for p in result.pod_sets if p.mode < FlavorMode.FIT}
    assert failing == {name: sorted(reasons) for name, reasons in case.reasons.items()}
    assert result.borrow == case.borrow
    if case.no_fit is not None:
        assert str(result.reason) == case.no_fit


def short(flavor: str, more: str, resource: str = CPU) -> str:
    return f"insufficient unused quota for {resource} in flavor {flavor}, {more} more needed"


def over(flavor: str, before: str, request: str, maximum: str, resource: str = CPU) -> str:
    return (f"insufficient quota for {resource} in flavor {flavor}, previously considered podsets requests "
            f"({before}) + current podset request ({request}) > maximum capacity ({maximum})")  # fmt: skip


MI = 2**20
STOP = Fungibility(when_can_borrow=F.MAY_STOP_SEARCH, when_can_preempt=F.MAY_STOP_SEARCH)
TRY = Fungibility(when_can_borrow=F.TRY_NEXT_FLAVOR, when_can_preempt=F.TRY_NEXT_FLAVOR)
BORROW_TRY = Fungibility(when_can_borrow=F.TRY_NEXT_FLAVOR, when_can_preempt=F.MAY_STOP_SEARCH)
RECLAIM_BORROW = {"reclaim": P.LOWER_PRIORITY, "borrow_within": P.LOWER_PRIORITY}
ONE_CPU, TWO_CPU = ("one", CPU), ("two", CPU)


def _pods_10(cpu: tuple[Quota, Quota], fungibility: Fungibility | None = None, *, cohort: bool = False,
             **options: object) -> ClusterQueueSpec:  # fmt: skip
    """Flavors one and two with 10 pods each and the given cpu quotas (the "try next flavor" cases)."""
    group = rg({"one": {PODS: "10", CPU: cpu[0]}, "two": {PODS: "10", CPU: cpu[1]}})
    extra = {"fungibility": fungibility} if fungibility else {}
    return the_cq(group, cohort=cohort, **extra, **options)


def _borrow_twelve(fungibility: Fungibility, one: Quota, *, used: bool = True, **options: object) -> Case:
    """12 cpu wanted; flavor one: nominal 0 (borrowing ``one``), two: 12; the secondary lends 12 of one, 10 used."""
    return Case(
        (pod({CPU: "12"}),),
        the_cq(rg({"one": {CPU: one}, "two": {CPU: "12"}}), cohort=True, fungibility=fungibility, **options),
        second=secondary(rg({"one": {CPU: "12"}})),
        second_usage={ONE_CPU: 10_000} if used else {},
        simulation={ONE_CPU: (FlavorMode.PREEMPT, 1)},
    )


def _preempting(case: Case) -> Case:
    return replace(
        case, mode=PREEMPT, flavors={"main": "one"}, reasons={"main": [short("one", "10")]}, borrow=1
    )


def _two_fits(case: Case) -> Case:
    return replace(case, flavors={"main": "two"})


CASES: dict[str, Case] = {
    "single flavor, fits": Case(
        (pod({CPU: "1", MEM: "1Mi"}),), the_cq(rg({"default": {CPU: "1", MEM: "2Mi"}})),
        flavors={"main": "default"}),
    "single flavor, fits tainted flavor": Case(
        (pod({CPU: "1"}, tolerations=(SPOT,)),), the_cq(rg({"tainted": {CPU: "4"}})), flavors={"main": "tainted"}),
    "single flavor, fits tainted flavor with toleration": Case(
        (pod({CPU: "1"}),), the_cq(rg({"taint_and_toleration": {CPU: "4"}})),
        flavors={"main": "taint_and_toleration"}),
    "single flavor, used resources, doesn't fit": Case(
        (pod({CPU: "2"}),), the_cq(rg({"default": {CPU: "4"}})), PREEMPT, {"main": "default"},
        {"main": [short("default", "1")]}, usage={("default", CPU): 3_000}),
    "multiple resource groups, fits": Case(
        (pod({CPU: "3", MEM: "10Mi"}),),
        the_cq(rg({"one": {CPU: "2"}, "two": {CPU: "4"}}), rg({"b_one": {MEM: "1Gi"}, "b_two": {MEM: "5Gi"}})),
        flavors={"main": {CPU: "two", MEM: "b_one"}}),
    "multiple resource groups, one could fit with preemption, other doesn't fit": Case(
        (pod({CPU: "3", MEM: "10Mi"}),), the_cq(rg({"one": {CPU: "3"}}), rg({"b_one": {MEM: "1Mi"}})), NO_FIT,
        reasons={"main": [over("b_one", "0", "10Mi", "1Mi", MEM)]}, usage={ONE_CPU: 1_000}, no_fit=MAX),
    "multiple resource groups with multiple resources, fits": Case(
        (pod({CPU: "3", MEM: "10Mi", GPU: "3"}),),
        the_cq(rg({"one": {CPU: "2", MEM: "1Gi"}, "two": {CPU: "4", MEM: "15Mi"}}),
                rg({"b_one": {GPU: "4"}, "b_two": {GPU: "2"}})),
        flavors={"main": {CPU: "two", MEM: "two", GPU: "b_one"}}),
    "multiple resource groups with multiple resources, fits with different modes": Case(
        (pod({CPU: "3", MEM: "10Mi", GPU: "3"}),),
        the_cq(rg({"one": {CPU: "2", MEM: "1Gi"}, "two": {CPU: "4", MEM: "15Mi"}}), rg({"b_one": {GPU: "4"}}),
                cohort=True),
        PREEMPT, {"main": {CPU: "two", MEM: "two", GPU: "b_one"}},
        {"main": [over("one", "0", "3", "2"), short("two", "5Mi", MEM), short("b_one", "1", GPU)]},
        usage={("two", MEM): 10 * MI}, second=secondary(rg({"b_one": {GPU: "0"}})),
        second_usage={("b_one", GPU): 2}, simulation={("two", MEM): (FlavorMode.PREEMPT, 1)}, borrow=1),
    "multiple resources in a group, doesn't fit": Case(
        (pod({CPU: "3", MEM: "10Mi"}),), the_cq(rg({"one": {CPU: "2", MEM: "1Gi"}, "two": {CPU: "4", MEM: "5Mi"}})),
        NO_FIT, reasons={"main": [over("one", "0", "3", "2"), over("two", "0", "10Mi", "5Mi", MEM)]}, no_fit=MAX),
    "multiple flavors, fits while skipping tainted flavor": Case(
        (pod({CPU: "3"}),), the_cq(rg({"tainted": {CPU: "4"}, "two": {CPU: "4"}})), flavors={"main": "two"}),
    "multiple flavors, fits a node selector": Case(
        (pod({CPU: "1"}, selector={"type": "two", "ignored1": "foo"}, affinity=((label_in("ignored2", "bar"),),)),),
        the_cq(rg({"one": {CPU: "4"}, "two": {CPU: "4"}})), flavors={"main": "two"}),
    "multiple flavors, fits with node affinity": Case(
        (pod({CPU: "1", MEM: "1Mi"}, selector={"ignored1": "foo"}, affinity=((label_in("type", "two"),),)),),
        the_cq(rg({"one": {CPU: "4", MEM: "1Gi"}, "two": {CPU: "4", MEM: "1Gi"}})), flavors={"main": "two"}),
    "multiple flavors, node affinity fits any flavor": Case(
        (pod({CPU: "1"}, affinity=((label_in("ignored2", "bar"),), (label_in("cpuType", "two"),))),),
        the_cq(rg({"one": {CPU: "4"}, "two": {CPU: "4"}})), flavors={"main": "one"}),
    "multiple flavors with different label keys, selector only uses flavor's own keys": Case(
        (pod({CPU: "1"}, selector={"x": "a", "y": "g"}),),
        the_cq(rg({"label-x-a": {CPU: "4"}, "label-xy-b": {CPU: "4"}})), flavors={"main": "label-x-a"}),
    "labelless flavor in group with labeled flavor, workload uses labeled selector": Case(
        (pod({CPU: "1"}, selector={"type": "two"}),), the_cq(rg({"default": {CPU: "4"}, "two": {CPU: "4"}})),
        flavors={"main": "default"}),
    "multiple flavors, doesn't fit node affinity": Case(
        (pod({CPU: "1"}, affinity=((label_in("type", "three"),),)),),
        the_cq(rg({"one": {CPU: "4"}, "two": {CPU: "4"}})),
        NO_FIT, reasons={"main": ["flavor one doesn't match node affinity", "flavor two doesn't match node affinity"]},
        no_fit=NO_FLAVOR),
    "multiple specs, fit different flavors": Case(
        (pod({CPU: "5"}, name="driver"), pod({CPU: "3"}, name="worker")),
        the_cq(rg({"one": {CPU: "4"}, "two": {CPU: "10"}})), flavors={"driver": "two", "worker": "one"}),
    "multiple specs, fits borrowing": Case(
        (pod({CPU: "4", MEM: "1Gi"}, name="driver"), pod({CPU: "6", MEM: "4Gi"}, name="worker")),
        the_cq(rg({"default": {CPU: ("2", "98", None), MEM: "2Gi"}}), cohort=True),
        flavors={"driver": "default", "worker": "default"},
        second=secondary(rg({"default": {CPU: "198", MEM: "198Gi"}})), borrow=1),
    "not enough space to borrow": Case(
        (pod({CPU: "2"}),), the_cq(rg({"one": {CPU: "1"}}), cohort=True), NO_FIT,
        reasons={"main": [over("one", "0", "2", "1")]}, second=secondary(rg({"one": {CPU: ("10", None, "0")}})),
        second_usage={ONE_CPU: 9_000}, no_fit=MAX),
    "past max, but can preempt in ClusterQueue": Case(
        (pod({CPU: "2"}),), the_cq(rg({"one": {CPU: ("2", "8", None)}}), cohort=True), PREEMPT, {"main": "one"},
        {"main": [short("one", "1")]}, usage={ONE_CPU: 9_000}, second=secondary(rg({"one": {CPU: "98"}})),
        second_usage={ONE_CPU: 9_000}, simulation={ONE_CPU: (FlavorMode.PREEMPT, 1)}, borrow=1),
    "past min, but can preempt in ClusterQueue": Case(
        (pod({CPU: "2"}),), the_cq(rg({"one": {CPU: "2"}})), PREEMPT, {"main": "one"}, {"main": [short("one", "1")]},
        usage={ONE_CPU: 1_000}),
    "past min, but can preempt in cohort and ClusterQueue": Case(
        (pod({CPU: "2"}),), the_cq(rg({"one": {CPU: "3"}}), cohort=True), PREEMPT, {"main": "one"},
        {"main": [short("one", "2")]}, usage={ONE_CPU: 2_000}, second=secondary(rg({"one": {CPU: "7"}})),
        second_usage={ONE_CPU: 8_000}, simulation={ONE_CPU: (FlavorMode.PREEMPT, 1)}, borrow=1),
    "can only preempt flavors that match affinity": Case(
        (pod({CPU: "2"}, selector={"type": "two"}),), the_cq(rg({"one": {CPU: "4"}, "two": {CPU: "4"}})), PREEMPT,
        {"main": "two"}, {"main": ["flavor one doesn't match node affinity", short("two", "1")]},
        usage={ONE_CPU: 3_000, TWO_CPU: 3_000}),
    "each podset requires preemption on a different flavor": Case(
        (pod({CPU: "2"}, name="launcher"), pod({CPU: "1"}, 10, "workers", tolerations=(SPOT,))),
        the_cq(rg({"one": {CPU: "4"}, "tainted": {CPU: "10"}})), PREEMPT,
        {"launcher": "one", "workers": "tainted"},
        {"launcher": [short("one", "1"), "untolerated taint {instance spot NoSchedule <nil>} in flavor tainted"],
         "workers": [over("one", "2", "10", "4"), short("tainted", "3")]},
        usage={ONE_CPU: 3_000, ("tainted", CPU): 3_000}),
    "resource not listed in clusterQueue": Case(
        (pod({GPU: "2"}),), the_cq(rg({"one": {CPU: "4"}})), NO_FIT,
        reasons={"main": [f"resource {GPU} unavailable in ClusterQueue"]}, no_fit=NO_FLAVOR),
    "zero resource request not in clusterQueue should succeed": Case(
        (pod({CPU: "1", GPU: "0"}),), the_cq(rg({"default": {CPU: "4"}})), flavors={"main": {CPU: "default"}}),
    "zero resource request defined in clusterQueue should get flavor assigned": Case(
        (pod({CPU: "1", GPU: "0"}),), the_cq(rg({"default": {CPU: "4", GPU: "4"}})),
        flavors={"main": {CPU: "default", GPU: "default"}}),
    "num pods fit": Case(
        (pod({CPU: "1"}, 3),), the_cq(rg({"default": {PODS: "3", CPU: "10"}})),
        flavors={"main": {CPU: "default", PODS: "default"}}),
    "num pods don't fit": Case(
        (pod({CPU: "1"}, 3),), the_cq(rg({"default": {PODS: "2", CPU: "10"}})), NO_FIT,
        reasons={"main": [over("default", "0", "3", "2", PODS)]}, no_fit=MAX),
    # Reclaimable pods are not modelled: the same as upstream with the feature off.
    "with reclaimable pods; reclaimablePods off": Case(
        (pod({CPU: "1"}, 5),), the_cq(rg({"default": {PODS: "5", CPU: "10"}})),
        flavors={"main": {CPU: "default", PODS: "default"}}),
    "preempt before try next flavor": Case(
        (pod({CPU: "9"}),), _pods_10(("10", "10"), STOP), PREEMPT, {"main": {CPU: "one", PODS: "one"}},
        {"main": [short("one", "1")]}, usage={ONE_CPU: 2_000}),
    "preempt before try next flavor; using WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": Case(
        (pod({CPU: "9"}),), _pods_10(("10", "10"), STOP), PREEMPT, {"main": {CPU: "one", PODS: "one"}},
        {"main": [short("one", "1")]}, usage={ONE_CPU: 2_000}),
    "preempt try next flavor": Case(
        (pod({CPU: "9"}),), _pods_10(("10", "10")), flavors={"main": {CPU: "two", PODS: "two"}},
        usage={ONE_CPU: 2_000}),
    "borrow try next flavor, found the first flavor": Case(
        (pod({CPU: "9"}),), _pods_10((("10", "1", None), "1"), TRY, cohort=True),
        flavors={"main": {CPU: "one", PODS: "one"}}, usage={ONE_CPU: 2_000},
        second=secondary(rg({"one": {CPU: "1"}})), borrow=1),
    "borrow try next flavor, found the second flavor": Case(
        (pod({CPU: "9"}),), _pods_10((("10", "1", None), "10"), TRY, cohort=True),
        flavors={"main": {CPU: "two", PODS: "two"}}, usage={ONE_CPU: 2_000},
        second=secondary(rg({"one": {CPU: "1"}}))),
    "borrow before try next flavor": Case(
        (pod({CPU: "9"}),), _pods_10((("10", "1", None), "10"), cohort=True),
        flavors={"main": {CPU: "one", PODS: "one"}}, usage={ONE_CPU: 2_000},
        second=secondary(rg({"one": {CPU: "1"}})), borrow=1),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch": _preempting(
        _borrow_twelve(STOP, ("0", "12", None), **RECLAIM_BORROW)),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch,WhenCanPreempt="
    "MayStopSearch": _preempting(_borrow_twelve(STOP, ("0", "12", None), **RECLAIM_BORROW)),
    "when borrowing while preemption is needed for flavor one, no borrowingLimit; WhenCanBorrow=MayStopSearch":
        _preempting(_borrow_twelve(STOP, "0", **RECLAIM_BORROW)),
    "when borrowing while preemption is needed for flavor one, no borrowingLimit; WhenCanBorrow=MayStopSearch,"
    "WhenCanPreempt=MayStopSearch": _preempting(_borrow_twelve(STOP, "0", **RECLAIM_BORROW)),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor": _two_fits(
        _borrow_twelve(BORROW_TRY, ("0", "12", None), used=False, **RECLAIM_BORROW)),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor,WhenCanPreempt="
    "MayStopSearch": _two_fits(_borrow_twelve(BORROW_TRY, ("0", "12", None), used=False, **RECLAIM_BORROW)),
    "when borrowing while preemption is needed, but borrowingLimit exceeds the quota available in the cohort": Case(
        (pod({CPU: "12"}),), the_cq(rg({"one": {CPU: ("0", "12", None)}}), cohort=True, **RECLAIM_BORROW), NO_FIT,
        reasons={"main": [over("one", "0", "12", "11")]}, second=secondary(rg({"one": {CPU: "11"}})),
        second_usage={ONE_CPU: 10_000}, no_fit=MAX),
    "lend try next flavor, found the second flavor": Case(
        (pod({CPU: "9"}),), _pods_10((("10", None, "1"), ("10", None, "0")), TRY, cohort=True),
        flavors={"main": {CPU: "two", PODS: "two"}}, usage={ONE_CPU: 2_000},
        second=secondary(rg({"one": {CPU: "1"}}))),
    "lend try next flavor, found the first flavor": Case(
        (pod({CPU: "9"}),), _pods_10((("10", None, "1"), ("1", None, "0")), TRY, cohort=True),
        flavors={"main": {CPU: "one", PODS: "one"}}, usage={ONE_CPU: 2_000},
        second=secondary(rg({"one": {CPU: "1"}})), borrow=1),
    "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which fits)": Case(
        (pod({CPU: "2"}),),
        the_cq(rg({"one": {CPU: ("0", "2", None)}, "two": {CPU: ("0", "2", None)}}), cohort=True, fungibility=STOP,
                **RECLAIM_BORROW),
        flavors={"main": "two"}, second=secondary(rg({"one": {CPU: "2"}, "two": {CPU: "2"}})),
        second_usage={ONE_CPU: 2_000}, simulation={ONE_CPU: (FlavorMode.NO_CANDIDATES, 0)}, borrow=1),
    "quota exhausted, but can preempt in cohort and ClusterQueue": Case(
        (pod({CPU: "9"}),), the_cq(rg({"one": {PODS: "10", CPU: ("10", None, "0")}}), cohort=True), PREEMPT,
        {"main": {CPU: "one", PODS: "one"}}, {"main": [short("one", "1")]}, usage={ONE_CPU: 2_000},
        second=secondary(rg({"one": {PODS: "0", CPU: "0"}})), simulation={ONE_CPU: (FlavorMode.PREEMPT, 1)},
        borrow=1),
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Any":
        replace(_preempting(_borrow_twelve(STOP, "0", reclaim=P.ANY)), fair=True),
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Never":
        replace(_two_fits(_borrow_twelve(STOP, "0")), fair=True,
                simulation={ONE_CPU: (FlavorMode.NO_CANDIDATES, 0)}),
    "multi-podset, one fits and another fails, fitting podset attempts skipped in resolveNoFitReason": Case(
        (pod({CPU: "1"}, name="fitting-podset", selector={"type": "one"}), pod({CPU: "5"}, name="blocking-podset")),
        the_cq(rg({"one": {CPU: "2"}, "two": {CPU: "2"}})), NO_FIT, {"fitting-podset": "one"},
        {"blocking-podset": [over("one", "1", "5", "2"), over("two", "0", "5", "2")]}, no_fit=MAX),
}  # fmt: skip

# Same tables under their deprecated-fungibility twins.
for _name in (
    "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which fits)",
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Any",
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Never",
):
    CASES[f"{_name}; using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch"] = CASES[
        _name
    ]

NOT_PORTED = {
    "multiple flavors, leader worker set, leader and workers request the same resources fits": "pod-set groups",
    "multiple flavors, leader worker set, workers request GPU, leader does not request GPU, fits": "pod-set groups",
    "multiple flavors, leader worker set, workers request GPU, leader does not request GPU, does not fit, without "
    "group it would fit": "pod-set groups (LeaderWorkerSet) are not modelled",
    "with reclaimable pods; reclaimablePods on": "reclaimable pods are not modelled",
    "workload slice preemption fits in the original workload resource flavor": "workload slices are not modelled",
    "workload slice preemption does not fit in the original workload resource flavor": "workload slices",
    "multiple TAS flavors assigned to different resources in the same PodSet leads to NoFit": "TAS",
}
UPSTREAM_CASES = 60
"""``TestAssignFlavors``'s cases at kueue ff69552e79."""


DELETED_FLAVORS = {
    "multiple flavors, skip missing ResourceFlavor": Case(
        (pod({CPU: "3"}),), the_cq(rg({"deleted-flavor": {CPU: "4"}, "flavor": {CPU: "4"}})),
        flavors={"main": "flavor"}),
    "flavor not found": Case(
        (pod({CPU: "1"}),), the_cq(rg({"deleted-flavor": {CPU: "4"}})), NO_FIT,
        reasons={"main": ["flavor deleted-flavor not found"]}, no_fit=NO_FLAVOR),
}  # fmt: skip
"""``TestDeletedFlavors`` (same file upstream), all 2."""


@pytest.mark.parametrize("name", list(DELETED_FLAVORS))
def test_deleted_flavors(name: str) -> None:
    run(DELETED_FLAVORS[name])


@pytest.mark.parametrize("name", list(CASES))
def test_assign_flavors(name: str) -> None:
    run(CASES[name])


def test_every_upstream_case_is_accounted_for() -> None:
    assert len(CASES) + len(NOT_PORTED) == UPSTREAM_CASES
