"""A compact harness for upstream's ``pkg/scheduler/scheduler_test.go`` ``TestSchedule`` and
``scheduler_fs_test.go`` ``TestScheduleForFairSharing`` tables: upstream's fixture (flavors, ClusterQueues,
LocalQueues and namespaces), workloads written in a few words, one admission cycle, then upstream's checks.

What a case compares, as upstream's ``runScheduleTestCases`` does:

- ``admitted``: the workloads admitted in this cycle and their flavors (upstream's ``wantAssignments`` minus the
  workloads that already held quota); every workload that held quota and was not preempted must still hold it;
- ``preempted``: the victims and their ``Preempted`` reason. Upstream keeps a victim's quota in the cache until
  its pods are gone, so ``wantAssignments`` still lists it; here eviction releases it and queues the victim
  again at once (docs/kueue.md), so a victim must be back in its heap and is left out of ``left``;
- ``left`` and ``inadmissible``: what stays in each ClusterQueue's heap and inadmissible set (``wantLeft``,
  ``wantInadmissibleLeft``);
- ``conditions``: the ``QuotaReserved=False`` reason and message of the workloads named (from ``wantWorkloads``);
  an admitted workload's ``Quota reserved in ClusterQueue <name>`` is checked for every admission.

Upstream's events and ``schedulingStats`` are not modelled by the core and not compared. Quantities are written as
upstream writes them (``"1"``, ``"500m"``) and converted with Kueue's own rule (``model.to_amount``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kueue_builders import cq

from gangplane.api.core import Taint
from gangplane.api.scheduling.common import LabelSelector, LabelSelectorRequirement
from gangplane.api.scheduling.kueue import PreemptionPolicy as P
from gangplane.api.scheduling.kueue import QueueingStrategy
from gangplane.schedulers.kueue.cycle import run_cycle
from gangplane.schedulers.kueue.fairsharing import DEFAULT_STRATEGIES
from gangplane.schedulers.kueue.flavors import Assignment, PodSetAssignment
from gangplane.schedulers.kueue.model import (
    ClusterQueueSpec,
    CohortSpec,
    FlavorSpec,
    PodSetRequest,
    WorkloadRequest,
    to_amount,
)
from gangplane.schedulers.kueue.podsready import WaitForPodsReady
from gangplane.schedulers.kueue.state import KueueConfig, KueueState

CPU, GPU = "cpu", "example.com/gpu"
STRICT = QueueingStrategy.STRICT_FIFO
NO_LONGER_FITS = ("WaitingForQuota", "Workload no longer fits after processing another workload")
NO_RESERVATION = "The workload has no reservation"
"""Upstream's ``Admitted=False`` message beside every ``QuotaReserved=False`` (``wantWorkloads``)."""

PodSet = tuple[str, int, Mapping[str, str]]
Flavors = str | Mapping[str, str | Mapping[str, str]]
"""Where a held workload's quota is: one flavor for everything, or per pod set one flavor or ``{resource:
flavor}``."""


def ps(name: str, count: int, requests: Mapping[str, str]) -> PodSet:
    return name, count, requests


@dataclass(frozen=True)
class Wl:
    """A workload: ``key`` is ``namespace/name``; ``queue`` its LocalQueue; ``held`` = (ClusterQueue, flavors)
    for one that already holds quota (upstream's ``ReserveQuotaAt``)."""

    key: str
    queue: str = ""
    requests: Mapping[str, str] = field(default_factory=dict)
    pod_sets: tuple[PodSet, ...] = ()
    priority: int = 0
    created: float = 0.0
    held: tuple[str, Flavors] | None = None
    uid: str = ""
    job_uid: str = ""

    def sets(self) -> tuple[PodSet, ...]:
        return self.pod_sets or (("main", 1, self.requests),)


def pending(key: str, queue: str, requests: Mapping[str, str] | None = None, *pod_sets: PodSet,
            priority: int = 0, created: float = 0.0, uid: str = "", job_uid: str = "") -> Wl:  # fmt: skip
    return Wl(key, queue, requests or {}, pod_sets, priority, created, uid=uid, job_uid=job_uid)


def held(key: str, cq_name: str, flavors: Flavors, requests: Mapping[str, str] | None = None, *pod_sets: PodSet,
         priority: int = 0, queue: str = "", created: float = 0.0) -> Wl:  # fmt: skip
    return Wl(key, queue, requests or {}, pod_sets, priority, created, (cq_name, flavors))


@dataclass(frozen=True)
class Case:
    workloads: tuple[Wl, ...]
    admitted: Mapping[str, Flavors] = field(default_factory=dict)
    preempted: Mapping[str, str | tuple[str, str]] = field(default_factory=dict)
    """Victim -> its Preempted reason, or (reason, upstream's eviction message)."""
    left: Mapping[str, list[str]] = field(default_factory=dict)
    inadmissible: Mapping[str, list[str]] = field(default_factory=dict)
    conditions: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    cqs: tuple[ClusterQueueSpec, ...] = ()
    lqs: Mapping[str, str] = field(default_factory=dict)
    """Extra LocalQueues, ``namespace/name`` -> ClusterQueue."""
    cohorts: tuple[CohortSpec, ...] = ()
    fair: bool = False


# ---------------------------------------------------------------- upstream's TestSchedule fixture


def dep(value: str) -> LabelSelector:
    return LabelSelector(
        match_expressions=[LabelSelectorRequirement(key="dep", operator="In", values=[value])]
    )


NAMESPACES = {"default": {}, "eng-alpha": {"dep": "eng"}, "eng-beta": {"dep": "eng"}, "eng-gamma": {"dep": "eng"},
              "sales": {"dep": "sales"}, "lend": {"dep": "lend"}}  # fmt: skip
_TAINTED = {"spot-tainted": "val", "spot-tainted-2": "val2"}
FLAVORS = [FlavorSpec(n) for n in ("default", "on-demand", "spot", "model-a")] + [
    FlavorSpec(n, node_taints=(Taint(key="key", value=v, effect="NoSchedule"),)) for n, v in _TAINTED.items()
]
BASE_CQS = (
    cq("sales", {"default": {CPU: (50_000, 0, None)}}, namespace_selector=dep("sales"), strategy=STRICT),
    cq("eng-alpha", {"on-demand": {CPU: (50_000, 50_000, None)}, "spot": {CPU: (100_000, 0, None)}},
       cohort="eng", namespace_selector=dep("eng"), strategy=STRICT),
    ClusterQueueSpec(
        "eng-beta",
        (*cq("b", {"on-demand": {CPU: (50_000, 10_000, None)}, "spot": {CPU: (0, 100_000, None)}}).resource_groups,
         *cq("b", {"model-a": {GPU: (20, 0, None)}}).resource_groups),
        "eng", STRICT, cq("b", within=P.LOWER_PRIORITY, reclaim=P.ANY).preemption,
        namespace_selector=dep("eng"),
    ),
    cq("flavor-nonexistent-cq", {"nonexistent-flavor": {CPU: 50_000}}, strategy=STRICT),
    cq("lend-a", {"default": {CPU: (3_000, None, 2_000)}}, cohort="lend", namespace_selector=dep("lend")),
    cq("lend-b", {"default": {CPU: (2_000, None, 2_000)}}, cohort="lend", namespace_selector=dep("lend")),
)  # fmt: skip
BASE_LQS = {"sales/main": "sales", "sales/blocked": "eng-alpha", "eng-alpha/main": "eng-alpha",
            "eng-beta/main": "eng-beta", "sales/flavor-nonexistent-queue": "flavor-nonexistent-cq",
            "sales/cq-nonexistent-queue": "nonexistent-cq", "lend/lend-a-queue": "lend-a",
            "lend/lend-b-queue": "lend-b"}  # fmt: skip


# ---------------------------------------------------------------- running a case


def _request(w: Wl, cluster_queue: str) -> WorkloadRequest:
    namespace, name = w.key.split("/")
    pod_sets = tuple(
        PodSetRequest(n, count, {r: to_amount(r, q) for r, q in req.items()}) for n, count, req in w.sets()
    )
    return WorkloadRequest(key=w.key, namespace=namespace, local_queue=w.queue, cluster_queue=cluster_queue,
                           pod_sets=pod_sets, priority=w.priority, created=w.created, uid=w.uid or name,
                           job_uid=w.job_uid,
                           namespace_labels=NAMESPACES.get(namespace, {}))  # fmt: skip


def _pod_set_flavors(flavors: Flavors, pod_set: PodSetRequest) -> dict[str, str]:
    """One flavor for all the pod set's resources, or the ``{resource: flavor}`` given (which may leave out a
    resource, as upstream's assignments leave out zero requests)."""
    given = flavors if isinstance(flavors, str) else flavors[pod_set.name]
    return {r: given for r in pod_set.requests} if isinstance(given, str) else dict(given)


def _held_assignment(request: WorkloadRequest, flavors: Flavors) -> Assignment:
    sets = []
    for p in request.pod_sets:
        chosen = _pod_set_flavors(flavors, p)
        usage = {(chosen[r], r): p.total(r) for r in p.requests}
        sets.append(PodSetAssignment(p.name, p.count, chosen, usage))
    return Assignment(sets)


def build(case: Case) -> KueueState:
    lqs = {**BASE_LQS, **case.lqs}
    # as upstream's scheduler in these tables: waitForPodsReady off
    state = KueueState(
        KueueConfig(WaitForPodsReady(enabled=False), DEFAULT_STRATEGIES if case.fair else None)
    )
    state.configure([*BASE_CQS, *case.cqs], case.cohorts, FLAVORS, 0.0)
    for w in case.workloads:
        if w.held is not None:
            request = _request(w, w.held[0])
            state.restore_admitted(request, _held_assignment(request, w.held[1]), 0.0, True)
        else:
            namespace = w.key.split("/")[0]
            state.add_workload(_request(w, lqs.get(f"{namespace}/{w.queue}", "")), 1.0)
    return state


def _flavors(assignment: Assignment | None) -> dict[str, dict[str, str]]:
    return {p.name: dict(p.flavors) for p in assignment.pod_sets} if assignment is not None else {}


def _want_flavors(state: KueueState, key: str, flavors: Flavors) -> dict[str, dict[str, str]]:
    request = state.workloads[key].request
    return {p.name: _pod_set_flavors(flavors, p) for p in request.pod_sets}


def _queued(state: KueueState, which: str) -> dict[str, list[str]]:
    found = {name: sorted(getattr(q, which)) for name, q in state.queues.queues.items()}
    return {name: keys for name, keys in found.items() if keys}


def run(case: Case) -> KueueState:
    """Build upstream's fixture plus the case, run one cycle past configure's batched requeue, check it."""
    state = build(case)
    held_before = {w.key for w in case.workloads if w.held is not None}
    result = run_cycle(state, 2.0)
    got = {w.key: _flavors(w.assignment) for w in result.admitted}
    assert got == {k: _want_flavors(state, k, f) for k, f in case.admitted.items()}
    for w in result.admitted:
        condition = w.conditions["QuotaReserved"]
        assert condition.message == f"Quota reserved in ClusterQueue {w.cluster_queue}"
    holding = {k for by_key in state.admitted.values() for k in by_key}
    assert holding == (held_before - set(case.preempted)) | set(case.admitted)
    assert {e.key: str(e.preemption_reason) for e in result.evictions} == {
        k: v if isinstance(v, str) else v[0] for k, v in case.preempted.items()
    }
    messages = {k: v[1] for k, v in case.preempted.items() if not isinstance(v, str)}
    assert {e.key: e.message for e in result.evictions if e.key in messages} == messages
    queued = _queued(state, "active")
    victims = {k: [key for key in keys if key in case.preempted] for k, keys in queued.items()}
    assert sorted(k for keys in victims.values() for k in keys) == sorted(case.preempted)
    left = {k: [key for key in keys if key not in case.preempted] for k, keys in queued.items()}
    assert {k: v for k, v in left.items() if v} == {k: sorted(v) for k, v in case.left.items()}
    assert _queued(state, "inadmissible") == {k: sorted(v) for k, v in case.inadmissible.items()}
    conditions = {key: state.workloads[key].conditions["QuotaReserved"] for key in case.conditions}
    got_conditions = {key: (c.reason, c.message) for key, c in conditions.items() if c.status == "False"}
    assert got_conditions == dict(case.conditions)
    admitted = [state.workloads[key].conditions["Admitted"] for key in case.conditions]
    assert {(c.status, c.reason, c.message) for c in admitted} <= {("False", "NoReservation", NO_RESERVATION)}
    return state
