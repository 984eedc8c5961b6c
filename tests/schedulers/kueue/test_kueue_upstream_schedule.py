"""Upstream's ``pkg/scheduler/scheduler_test.go`` ``TestSchedule``, case by case (the keys are upstream's case
names), through ``upstream_schedule.run``: upstream's fixture, one admission cycle, upstream's expectations.

Amounts are upstream's quantities. ``WAIT`` / ``PREEMPTING`` / ``NO_FLAVOR`` / ``MAX`` are the
``QuotaReserved=False`` reasons upstream expects. The three ``PreemptionOverBorrowing`` /
``BorrowingOverPreemption`` cases are in ``test_kueue_upstream_scheduler.py``. Cases not ported, and why, are
listed in ``NOT_PORTED`` at the end.
"""

from __future__ import annotations

import pytest
from kueue_builders import cohort, cq
from upstream_schedule import CPU, GPU, NO_LONGER_FITS, STRICT, Case, dep, held, pending, ps, run

from gangplane.api.scheduling.kueue import FlavorFungibilityPolicy as F
from gangplane.api.scheduling.kueue import PreemptionPolicy as P
from gangplane.schedulers.kueue.model import ClusterQueueSpec, Fungibility

WAIT, PREEMPTING = "WaitingForQuota", "WaitingForPreemptedWorkloads"
NO_FLAVOR, MAX, MISCONFIGURED = "NoMatchingFlavor", "ExceedsMaxQuota", "Misconfigured"
IN_CQ, RECLAIM = "InClusterQueue", "InCohortReclamation"
ODS = "on-demand"


def victim(uid: str, job_uid: str, why: str, preemptor: str, preemptee: str) -> str:
    """A victim's eviction message, as upstream's ``wantWorkloads`` spell it out."""
    return (f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to {why}; preemptor path: "
            f"{preemptor}; preemptee path: {preemptee}")  # fmt: skip


def flavors_msg(pod_set: str, *reasons: str, victims: int = 0) -> str:
    message = f"couldn't assign flavors to pod set {pod_set}: {', '.join(reasons)}"
    return f"{message}. Pending the preemption of {victims} workload(s)" if victims else message


def short(resource: str, flavor: str, more: str) -> str:
    return f"insufficient unused quota for {resource} in flavor {flavor}, {more} more needed"


def over_max(flavor: str, before: str, request: str, maximum: str, resource: str = CPU) -> str:
    return (f"insufficient quota for {resource} in flavor {flavor}, previously considered podsets requests "
            f"({before}) + current podset request ({request}) > maximum capacity ({maximum})")  # fmt: skip


def other_pair(quota: int, *, alpha: dict[str, object], beta: dict[str, object] | None = None,
               flavor: str = ODS, gamma: bool = False):  # fmt: skip
    """Upstream's recurring ``other-alpha`` / ``other-beta`` (/ ``other-gamma``) ClusterQueues in cohort
    ``other`` with ``quota`` cpu of ``flavor`` each, and their LocalQueues ``other`` in eng-alpha/beta/gamma."""
    names = ["other-alpha", "other-beta"] + (["other-gamma"] if gamma else [])
    options = [alpha, beta or {}, {}]
    cqs = tuple(
        cq(n, {flavor: {CPU: quota}}, cohort="other", **o) for n, o in zip(names, options, strict=False)
    )
    lqs = {f"eng-{n.split('-')[1]}/other": n for n in names}
    return cqs, lqs


LOW_RECLAIM_ANY = {"within": P.LOWER_PRIORITY, "reclaim": P.ANY}
_OTHER_MIN, _OTHER_MIN_LQ = other_pair(2000, alpha=LOW_RECLAIM_ANY, gamma=True)
_OTHER_NOM, _OTHER_NOM_LQ = other_pair(2000, alpha=LOW_RECLAIM_ANY)
_WITHIN = {"within": P.LOWER_PRIORITY}
_OTHER_WB, _OTHER_WB_LQ = other_pair(2000, alpha=_WITHIN, beta=_WITHIN, flavor="default")
_OTHER_FIT, _OTHER_FIT_LQ = other_pair(0, alpha=_WITHIN, beta=_WITHIN, flavor="default")
_OTHER_FIT = (cq("other-alpha", {"default": {CPU: 1000}}, cohort="other", within=P.LOWER_PRIORITY),
              cq("other-beta", {"default": {CPU: 2000}}, cohort="other", within=P.LOWER_PRIORITY))  # fmt: skip
_BORROW_LOW = {"within": P.LOWER_PRIORITY, "borrow_within": P.LOWER_PRIORITY}
_OTHER_SHARED, _OTHER_SHARED_LQ = other_pair(2000, alpha=_BORROW_LOW, beta=_BORROW_LOW, flavor="default")
_BANK = cq("resource-bank", {"default": {CPU: 1000}}, cohort="other")


def gpu_pair(beta_preempts: bool):
    """other-alpha with 10 gpu on-demand and 10 spot, other-beta with none (preempting only if asked)."""
    low = {"within": P.LOWER_PRIORITY, "reclaim": P.LOWER_PRIORITY}
    alpha = cq("other-alpha", {ODS: {"gpu": 10}, "spot": {"gpu": 10}}, cohort="other", **low)
    beta = cq(
        "other-beta", {ODS: {"gpu": 0}, "spot": {"gpu": 0}}, cohort="other", **(low if beta_preempts else {})
    )
    return (alpha, beta), {"eng-alpha/other": "other-alpha", "eng-beta/other": "other-beta"}


def three_cqs(r1: str) -> Case:
    """``cq1``..``cq3`` in cohort ``co`` with 10 (+10 borrowable) of r1 and r2 each; wl1 asks 16 r1, wl2 asks
    16 of ``r1`` (a resource name)."""
    quota = {"default": {"r1": (10, 10, None), "r2": (10, 10, None)}}
    cqs = tuple(cq(f"cq{i}", quota, cohort="co", within=P.LOWER_PRIORITY, reclaim=P.ANY) for i in (1, 2, 3))
    return Case(
        (pending("sales/wl1", "lq1", {"r1": "16"}, priority=-1), pending("sales/wl2", "lq2", {r1: "16"}, priority=-2)),
        cqs=cqs, lqs={f"sales/lq{i}": f"cq{i}" for i in (1, 2, 3)},
    )  # fmt: skip


def _with(case: Case, **changes: object) -> Case:
    from dataclasses import replace

    return replace(case, **changes)


def lending_pair(reclaim: P) -> Case:
    """``ClusterQueueA`` (2 gpu, reclaim ``reclaim``) using 1 with a 2-gpu workload waiting, lending to
    ``ClusterQueueB`` (none) whose 1-gpu workload waits too."""
    a = cq("ClusterQueueA", {ODS: {"gpu": 2}}, cohort="root", reclaim=reclaim)
    b = cq("ClusterQueueB", {ODS: {"gpu": 0}}, cohort="root")
    return Case(
        (held("eng-alpha/a1-admitted", "ClusterQueueA", ODS, {"gpu": "1"}, queue="lq"),
         pending("eng-alpha/a2-pending", "lq", {"gpu": "2"}), pending("eng-beta/b1-pending", "lq", {"gpu": "1"})),
        inadmissible={"ClusterQueueA": ["eng-alpha/a2-pending"]},
        conditions={"eng-alpha/a2-pending": (WAIT, flavors_msg("main", short("gpu", ODS, "1")))},
        cqs=(a, b), lqs={"eng-alpha/lq": "ClusterQueueA", "eng-beta/lq": "ClusterQueueB"},
    )  # fmt: skip


def hierarchical_lender(lending: int) -> Case:
    """``cq-lender`` (10 cpu, lending ``lending``) and ``cq-borrower`` (5, borrowing up to 10, all 5 used) in
    cohort child <- root."""
    eng = dep("eng")
    cqs = (cq("cq-lender", {ODS: {CPU: (10_000, None, lending)}}, cohort="child", namespace_selector=eng),
           cq("cq-borrower", {ODS: {CPU: (5_000, 10_000, None)}}, cohort="child", namespace_selector=eng))  # fmt: skip
    return Case(
        (held("eng-alpha/wl-existing", "cq-borrower", ODS, {CPU: "5"}),),
        cqs=cqs, cohorts=(cohort("root"), cohort("child", None, "root")),
        lqs={"eng-alpha/lq-lender": "cq-lender", "eng-alpha/lq-borrower": "cq-borrower"},
    )  # fmt: skip


_MAY_STOP = Fungibility(when_can_borrow=F.MAY_STOP_SEARCH, when_can_preempt=F.MAY_STOP_SEARCH)
_TAINTS = {"spot-tainted": "{key val NoSchedule <nil>}", "spot-tainted-2": "{key val2 NoSchedule <nil>}"}


def taint(flavor: str) -> str:
    return f"untolerated taint {_TAINTS[flavor]} in flavor {flavor}"


def custom(name: str, second: str, quota: int) -> tuple[ClusterQueueSpec, ...]:
    groups = {"spot-tainted": {CPU: (20_000, 20_000, None)}, second: {CPU: (quota, quota, None)}}
    return (cq(name, groups, strategy=STRICT),)


CASES: dict[str, Case] = {
    "use second flavor when the first has no preemption candidates; WhenCanPreempt: MayStopSearch": Case(
        (held("eng-alpha/admitted", "other-alpha", ODS, {CPU: "50"}, queue="other"),
         pending("eng-alpha/new", "other", {CPU: "20"})),
        admitted={"eng-alpha/new": "spot"},
        cqs=(cq("other-alpha", {ODS: {CPU: (50_000, 50_000, None)}, "spot": {CPU: (100_000, 0, None)}},
                within=P.LOWER_PRIORITY, fungibility=Fungibility(when_can_preempt=F.MAY_STOP_SEARCH)),),
        lqs={"eng-alpha/other": "other-alpha"}),
    # Admission checks are not modelled (a reservation is also the admission); the reservation is the same.
    "workload fits in single clusterQueue, with check state ready": Case(
        (pending("sales/foo", "main", None, ps("one", 10, {CPU: "1"})),), admitted={"sales/foo": "default"}),
    "skip workload with missing or deleted ClusterQueue (NoFit)": Case(
        (pending("sales/missing-cq-workload", "non-existent-queue", None, ps("set", 1, {CPU: "1"})),)),
    "flavors with mixed misconfiguration and insufficient quota": Case(
        (held("sales/existing-on-demand-job", "custom-cq", ODS, {CPU: "10"}, queue="custom-q"),
         pending("sales/new-job", "custom-q", {CPU: "10"})),
        left={"custom-cq": ["sales/new-job"]},
        conditions={"sales/new-job": (WAIT, flavors_msg("main", short(CPU, ODS, "5"), taint("spot-tainted")))},
        cqs=custom("custom-cq", ODS, 15_000), lqs={"sales/custom-q": "custom-cq"}),
    "flavors with mixed taint mismatch and exceeding limits": Case(
        (pending("sales/new-job2", "custom-q2", {CPU: "10"}),),
        left={"custom-cq2": ["sales/new-job2"]},
        conditions={"sales/new-job2": (MAX, flavors_msg("main", over_max(ODS, "0", "10", "5"), taint("spot-tainted")))},
        cqs=custom("custom-cq2", ODS, 5_000), lqs={"sales/custom-q2": "custom-cq2"}),
    "flavors are structurally incompatible": Case(
        (pending("sales/new-job3", "custom-q3", {CPU: "1"}),),
        left={"custom-cq3": ["sales/new-job3"]},
        conditions={"sales/new-job3": (NO_FLAVOR, flavors_msg("main", taint("spot-tainted"), taint("spot-tainted-2")))},
        cqs=custom("custom-cq3", "spot-tainted-2", 5_000), lqs={"sales/custom-q3": "custom-cq3"}),
    "workload fits in single clusterQueue, with check state pending": Case(
        (pending("sales/foo", "main", None, ps("one", 10, {CPU: "1"})),), admitted={"sales/foo": "default"}),
    "single clusterQueue full": Case(
        (pending("sales/new", "main", None, ps("one", 11, {CPU: "1"})),
         held("sales/assigned", "sales", "default", None, ps("one", 40, {CPU: "1"}))),
        left={"sales": ["sales/new"]},
        conditions={"sales/new": (WAIT, flavors_msg("one", short(CPU, "default", "1")))}),
    "failed to match clusterQueue selector": Case(
        (pending("sales/new", "blocked", None, ps("one", 1, {CPU: "1"})),),
        inadmissible={"eng-alpha": ["sales/new"]},
        conditions={"sales/new": (MISCONFIGURED, "workload namespace doesn't match ClusterQueue selector")}),
    "admit in different cohorts": Case(
        (pending("sales/new", "main", None, ps("one", 1, {CPU: "1"})),
         pending("eng-alpha/new", "main", None, ps("one", 51, {CPU: "1"}))),
        admitted={"sales/new": "default", "eng-alpha/new": ODS}),
    "admit in same cohort with no borrowing": Case(
        (pending("eng-alpha/new", "main", None, ps("one", 40, {CPU: "1"})),
         pending("eng-beta/new", "main", None, ps("one", 40, {CPU: "1"}))),
        admitted={"eng-alpha/new": ODS, "eng-beta/new": ODS}),
    "assign multiple resources and flavors": Case(
        (pending("eng-beta/new", "main", None, ps("one", 10, {CPU: "6", GPU: "1"}), ps("two", 40, {CPU: "1"})),),
        admitted={"eng-beta/new": {"one": {CPU: ODS, GPU: "model-a"}, "two": "spot"}}),
    "cannot borrow if cohort was assigned and would result in overadmission": Case(
        (pending("eng-alpha/new", "main", None, ps("one", 45, {CPU: "1"})),
         pending("eng-beta/new", "main", None, ps("one", 56, {CPU: "1"}))),
        admitted={"eng-alpha/new": ODS}, left={"eng-beta": ["eng-beta/new"]},
        conditions={"eng-beta/new": NO_LONGER_FITS}),
    "can borrow if cohort was assigned and will not result in overadmission": Case(
        (pending("eng-alpha/new", "main", None, ps("one", 45, {CPU: "1"})),
         pending("eng-beta/new", "main", None, ps("one", 55, {CPU: "1"}))),
        admitted={"eng-alpha/new": ODS, "eng-beta/new": ODS}),
    "can borrow if needs reclaim from cohort in different flavor": Case(
        (pending("eng-alpha/can-reclaim", "main", {CPU: "100"}),
         pending("eng-beta/needs-to-borrow", "main", {CPU: "1"}),
         held("eng-beta/user-on-demand", "eng-beta", ODS, {CPU: "50"}),
         held("eng-beta/user-spot", "eng-beta", "spot", {CPU: "1"})),
        admitted={"eng-beta/needs-to-borrow": ODS}, left={"eng-alpha": ["eng-alpha/can-reclaim"]},
        conditions={"eng-alpha/can-reclaim": (
            WAIT, flavors_msg("main", short(CPU, ODS, "50"), short(CPU, "spot", "1")))}),
    "workload exceeds lending limit when borrow in cohort": Case(
        (held("lend/a", "lend-b", "default", {CPU: "2"}), pending("lend/b", "lend-b-queue", {CPU: "3"})),
        inadmissible={"lend-b": ["lend/b"]},
        conditions={"lend/b": (WAIT, flavors_msg("main", short(CPU, "default", "1")))}),
    "hierarchical cohort respects lending limit when borrowing": _with(
        hierarchical_lender(3_000),
        workloads=(*hierarchical_lender(0).workloads, pending("eng-alpha/wl-pending", "lq-borrower", {CPU: "4"})),
        inadmissible={"cq-borrower": ["eng-alpha/wl-pending"]},
        conditions={"eng-alpha/wl-pending": (WAIT, flavors_msg("main", short(CPU, ODS, "1")))}),
    "hierarchical cohort allows borrowing up to lending limit": _with(
        hierarchical_lender(5_000),
        workloads=(*hierarchical_lender(0).workloads, pending("eng-alpha/wl-borrowing", "lq-borrower", {CPU: "5"})),
        admitted={"eng-alpha/wl-borrowing": ODS}),
    "preempt workloads in ClusterQueue and cohort": Case(
        (pending("eng-beta/preemptor", "main", {CPU: "20"}, uid="wl-preemptor", job_uid="job-preemptor"),
         held("eng-alpha/use-all-spot", "eng-alpha", "spot", {CPU: "100"}),
         held("eng-beta/low-1", "eng-beta", ODS, {CPU: "30"}, priority=-1),
         held("eng-beta/low-2", "eng-beta", ODS, {CPU: "10"}, priority=-2),
         held("eng-alpha/borrower", "eng-alpha", ODS, {CPU: "60"})),
        preempted={"eng-alpha/borrower": (RECLAIM, victim("wl-preemptor", "job-preemptor", "reclamation within the "
                                                           "cohort", "/eng/eng-beta", "/eng/eng-alpha")),
                   "eng-beta/low-2": (IN_CQ, victim("wl-preemptor", "job-preemptor", "prioritization in the "
                                                    "ClusterQueue", "/eng/eng-beta", "/eng/eng-beta"))},
        left={"eng-beta": ["eng-beta/preemptor"]},
        conditions={"eng-beta/preemptor": (PREEMPTING, flavors_msg(
            "main", short(CPU, ODS, "20"), short(CPU, "spot", "20"), victims=2))}),
    "multiple CQs need preemption": Case(
        (pending("eng-beta/preemptor", "other", {CPU: "1"}, priority=-1, uid="wl-preemptor",
                 job_uid="job-preemptor"),
         pending("eng-alpha/pending", "other", {CPU: "1"}, priority=1),
         held("eng-alpha/use-all", "other-alpha", ODS, {CPU: "100"})),
        preempted={"eng-alpha/use-all": (RECLAIM, victim("wl-preemptor", "job-preemptor", "reclamation within "
                                                         "the cohort", "/other/other-beta", "/other/other-alpha"))},
        left={"other-beta": ["eng-beta/preemptor"]}, inadmissible={"other-alpha": ["eng-alpha/pending"]},
        conditions={"eng-alpha/pending": (WAIT, flavors_msg("main", short(CPU, ODS, "1"))),
                    "eng-beta/preemptor": (PREEMPTING, flavors_msg("main", short(CPU, ODS, "1"), victims=1))},
        cqs=(cq("other-alpha", {ODS: {CPU: (50_000, 50_000, None)}}, cohort="other"),
             cq("other-beta", {ODS: {CPU: (50_000, 10_000, None)}}, cohort="other", **LOW_RECLAIM_ANY)),
        lqs={"eng-alpha/other": "other-alpha", "eng-beta/other": "other-beta"}),
    "cannot borrow resource not listed in clusterQueue": Case(
        (pending("eng-alpha/new", "main", {GPU: "1"}),), left={"eng-alpha": ["eng-alpha/new"]},
        conditions={"eng-alpha/new": (NO_FLAVOR, flavors_msg("main", f"resource {GPU} unavailable in ClusterQueue"))}),
    "not enough resources to borrow, fallback to next flavor; WhenCanPreempt: TryNextFlavor": Case(
        (pending("eng-alpha/new", "main", None, ps("one", 60, {CPU: "1"})),
         held("eng-beta/existing", "eng-beta", ODS, None, ps("one", 45, {CPU: "1"}))),
        admitted={"eng-alpha/new": "spot"}),
    # Upstream's queue manager holds no heap for a ClusterQueue that does not exist, so the workload is in no
    # queue; here it waits in that name's inadmissible set, which nothing pops until the ClusterQueue appears.
    "workload should not fit in nonexistent clusterQueue": Case(
        (pending("sales/foo", "cq-nonexistent-queue", {CPU: "1"}),),
        inadmissible={"nonexistent-cq": ["sales/foo"]}),
    "workload should not fit in clusterQueue with nonexistent flavor": Case(
        (pending("sales/foo", "flavor-nonexistent-queue", {CPU: "1"}),),
        left={"flavor-nonexistent-cq": ["sales/foo"]}),
    "no overadmission while borrowing": Case(
        (pending("eng-beta/new", "main", None, ps("one", 50, {CPU: "1"}), created=-2),
         pending("eng-alpha/new-alpha", "main", None, ps("one", 1, {CPU: "1"}), created=-1),
         pending("eng-gamma/new-gamma", "main", None, ps("one", 50, {CPU: "1"})),
         held("eng-gamma/existing", "eng-gamma", {"borrow-on-demand": ODS, "use-all-spot": "spot"}, None,
              ps("borrow-on-demand", 51, {CPU: "1"}), ps("use-all-spot", 100, {CPU: "1"}))),
        admitted={"eng-beta/new": ODS, "eng-alpha/new-alpha": ODS},
        inadmissible={"eng-gamma": ["eng-gamma/new-gamma"]},
        conditions={"eng-gamma/new-gamma": (WAIT, flavors_msg("one", short(CPU, ODS, "41"), short(CPU, "spot", "50")))},
        cqs=(cq("eng-gamma", {ODS: {CPU: (50_000, 10_000, None)}, "spot": {CPU: (0, 100_000, None)}},
                cohort="eng", **LOW_RECLAIM_ANY),),
        lqs={"eng-gamma/main": "eng-gamma"}),
    "partial admission disabled, multiple variable pod sets": Case(
        (pending("sales/new", "main", None, ps("one", 20, {CPU: "1"}), ps("two", 30, {CPU: "1"}),
                 ps("three", 15, {CPU: "1"})),),
        left={"sales": ["sales/new"]},
        conditions={"sales/new": (MAX, flavors_msg("three", over_max("default", "50", "15", "50")))}),
    "two workloads can borrow different resources from the same flavor in the same cycle": _with(
        three_cqs("r2"), admitted={"sales/wl1": "default", "sales/wl2": "default"}),
    "two workloads can borrow the same resources from the same flavor in the same cycle if fits in the cohort quota":
        _with(three_cqs("r1"), admitted={"sales/wl1": "default", "sales/wl2": "default"},
              workloads=(pending("sales/wl1", "lq1", {"r1": "16"}, priority=-1),
                         pending("sales/wl2", "lq2", {"r1": "14"}, priority=-2))),
    "only one workload can borrow one resources from the same flavor in the same cycle if cohort quota cannot fit":
        _with(three_cqs("r1"), admitted={"sales/wl1": "default"}, left={"cq2": ["sales/wl2"]},
              conditions={"sales/wl2": NO_LONGER_FITS}),
    "preemption while borrowing, workload waiting for preemption should not block a borrowing workload in another CQ":
        Case(
            (pending("eng-alpha/a", "lq_a", {CPU: "3"}, created=1),
             pending("eng-beta/b", "lq_b", {CPU: "1"}, created=2),
             held("eng-alpha/admitted_a", "cq_a", "default", {CPU: "2"}, queue="lq_a")),
            admitted={"eng-beta/b": "default"}, inadmissible={"cq_a": ["eng-alpha/a"]},
            conditions={"eng-alpha/a": (WAIT, flavors_msg("main", short(CPU, "default", "2")))},
            cqs=(cq("cq_shared", {"default": {CPU: (4_000, 0, None)}}, cohort="pwb"),
                 cq("cq_a", {"default": {CPU: (0, 3_000, None)}}, cohort="pwb", reclaim=P.LOWER_PRIORITY,
                    borrow_within=P.LOWER_PRIORITY),
                 cq("cq_b", {"default": {CPU: 0}}, cohort="pwb", reclaim=P.LOWER_PRIORITY,
                    borrow_within=P.LOWER_PRIORITY)),
            lqs={"eng-alpha/lq_a": "cq_a", "eng-beta/lq_b": "cq_b"}),
    "minimal preemptions when target queue is exhausted": Case(
        (*(held(f"eng-alpha/a{i}", "other-alpha", ODS, {CPU: "1"}, priority=p, queue="other")
           for i, p in ((1, -2), (2, -2), (3, -1))),
         *(held(f"eng-beta/b{i}", "other-beta", ODS, {CPU: "1"}, queue="other") for i in (1, 2, 3)),
         pending("eng-alpha/incoming", "other", {CPU: "2"}, uid="wl-incoming")),
        preempted={"eng-alpha/a1": IN_CQ, "eng-alpha/a2": IN_CQ},
        left={"other-alpha": ["eng-alpha/incoming"]},
        conditions={"eng-alpha/incoming": (PREEMPTING, flavors_msg("main", short(CPU, ODS, "2"), victims=2))},
        cqs=_OTHER_MIN, lqs=_OTHER_MIN_LQ),
    "A workload is only eligible to do preemptions if it fits fully within nominal quota": Case(
        (held("eng-alpha/a1", "other-alpha", ODS, {CPU: "1"}, priority=-1, queue="other"),
         held("eng-beta/b1", "other-beta", ODS, {CPU: "1"}, priority=-1, queue="other"),
         pending("eng-alpha/incoming", "other", {CPU: "3"}, priority=1)),
        inadmissible={"other-alpha": ["eng-alpha/incoming"]},
        conditions={"eng-alpha/incoming": (WAIT, flavors_msg("main", short(CPU, ODS, "1")))},
        cqs=_OTHER_NOM, lqs=_OTHER_NOM_LQ),
    "multiple preemptions without borrowing": Case(
        (held("eng-alpha/a1", "other-alpha", "default", {CPU: "2"}, queue="other"),
         held("eng-beta/b1", "other-beta", "default", {CPU: "2"}, queue="other"),
         pending("eng-alpha/preemptor", "other", {CPU: "2"}, priority=100, uid="wl-preemptor"),
         pending("eng-beta/preemptor", "other", {CPU: "2"}, priority=100, uid="wl-preemptor")),
        preempted={"eng-alpha/a1": IN_CQ, "eng-beta/b1": IN_CQ},
        left={"other-alpha": ["eng-alpha/preemptor"], "other-beta": ["eng-beta/preemptor"]},
        conditions={f"eng-{x}/preemptor": (PREEMPTING, flavors_msg("main", short(CPU, "default", "2"), victims=1))
                    for x in ("alpha", "beta")},
        cqs=_OTHER_WB, lqs=_OTHER_WB_LQ),
    "multiple preemptions preemption possible after earlier workload fits": Case(
        (held("eng-beta/b1", "other-beta", "default", {CPU: "2"}, queue="other"),
         pending("eng-alpha/fit", "other", {CPU: "1"}, priority=100),
         pending("eng-beta/preemptor", "other", {CPU: "2"}, priority=99, uid="wl-preemptor")),
        admitted={"eng-alpha/fit": "default"}, preempted={"eng-beta/b1": IN_CQ},
        left={"other-beta": ["eng-beta/preemptor"]},
        conditions={"eng-beta/preemptor": (PREEMPTING, flavors_msg("main", short(CPU, "default", "1"), victims=1))},
        cqs=_OTHER_FIT, lqs=_OTHER_FIT_LQ),
    "multiple preemptions skip preemption when shared limited resource": Case(
        (held("eng-alpha/a1", "other-alpha", "default", {CPU: "2"}, queue="other"),
         held("eng-beta/b1", "other-beta", "default", {CPU: "2"}, queue="other"),
         pending("eng-alpha/preemptor", "other", {CPU: "3"}, priority=100, uid="wl-preemptor"),
         pending("eng-beta/pretending-preemptor", "other", {CPU: "3"}, priority=99)),
        preempted={"eng-alpha/a1": IN_CQ},
        left={"other-alpha": ["eng-alpha/preemptor"], "other-beta": ["eng-beta/pretending-preemptor"]},
        conditions={"eng-alpha/preemptor": (PREEMPTING, flavors_msg("main", short(CPU, "default", "2"), victims=1)),
                    "eng-beta/pretending-preemptor": NO_LONGER_FITS},
        cqs=(*_OTHER_SHARED, _BANK), lqs=_OTHER_SHARED_LQ),
    "not enough resources": Case(
        (pending("sales/new", "main", None, ps("one", 1, {CPU: "100"})),), left={"sales": ["sales/new"]},
        conditions={"sales/new": (MAX, flavors_msg("one", over_max("default", "0", "100", "50")))}),
    "prefer reclamation over cq priority based preemption": Case(
        (held("eng-alpha/a1", "other-alpha", ODS, {"gpu": "5"}, priority=50),
         held("eng-beta/b1", "other-beta", "spot", {"gpu": "5"}, priority=50),
         pending("eng-alpha/preemptor", "other", {"gpu": "6"}, priority=100, uid="wl-preemptor")),
        preempted={"eng-beta/b1": RECLAIM}, left={"other-alpha": ["eng-alpha/preemptor"]},
        conditions={"eng-alpha/preemptor": (PREEMPTING, flavors_msg(
            "main", short("gpu", ODS, "1"), short("gpu", "spot", "1"), victims=1))},
        cqs=gpu_pair(True)[0], lqs=gpu_pair(True)[1]),
    "prefer first preemption flavor when second flavor requires both reclaim and cq priority preemption": Case(
        (held("eng-alpha/a1", "other-alpha", ODS, {"gpu": "5"}, priority=50),
         held("eng-alpha/a2", "other-alpha", "spot", {"gpu": "5"}, priority=50),
         held("eng-beta/b1", "other-beta", "spot", {"gpu": "5"}, priority=50),
         pending("eng-alpha/preemptor", "other", {"gpu": "6"}, priority=100, uid="wl-preemptor")),
        preempted={"eng-alpha/a1": IN_CQ}, left={"other-alpha": ["eng-alpha/preemptor"]},
        conditions={"eng-alpha/preemptor": (PREEMPTING, flavors_msg(
            "main", short("gpu", ODS, "1"), short("gpu", "spot", "6"), victims=1))},
        cqs=gpu_pair(False)[0], lqs=gpu_pair(False)[1]),
    "prefer first preemption flavor when second flavor also requires cq preemption": Case(
        (held("eng-alpha/a1", "other-alpha", ODS, {"gpu": "6"}, priority=50),
         held("eng-alpha/a2", "other-alpha", "spot", {"gpu": "5"}, priority=50),
         held("eng-beta/b1", "other-beta", "spot", {"gpu": "5"}, priority=9001),
         pending("eng-alpha/preemptor", "other", {"gpu": "5"}, priority=100, uid="wl-preemptor")),
        preempted={"eng-alpha/a1": IN_CQ}, left={"other-alpha": ["eng-alpha/preemptor"]},
        conditions={"eng-alpha/preemptor": (PREEMPTING, flavors_msg(
            "main", short("gpu", ODS, "1"), short("gpu", "spot", "5"), victims=1))},
        cqs=gpu_pair(False)[0], lqs=gpu_pair(False)[1]),
    "workload requiring reclaimation prioritized over wl in another full cq": Case(
        (held("eng-alpha/Admitted-Workload-1", "CQ1", ODS, {"gpu": "5"}, queue="lq"),
         pending("eng-alpha/WL1", "lq", {"gpu": "10"}),
         pending("eng-beta/WL2", "lq", {"gpu": "10"}, created=1, uid="wl-WL2"),
         held("eng-gamma/Admitted-Workload-2", "CQ3", ODS, {"gpu": "5"}, queue="lq"),
         held("eng-gamma/Admitted-Workload-3", "CQ3", ODS, {"gpu": "5"}, priority=1, queue="lq")),
        preempted={"eng-gamma/Admitted-Workload-2": RECLAIM},
        left={"CQ2": ["eng-beta/WL2"]}, inadmissible={"CQ1": ["eng-alpha/WL1"]},
        conditions={"eng-alpha/WL1": (WAIT, flavors_msg("main", short("gpu", ODS, "5"))),
                    "eng-beta/WL2": (PREEMPTING, flavors_msg("main", short("gpu", ODS, "5"), victims=1))},
        cqs=(cq("CQ1", {ODS: {"gpu": 10}}, cohort="other"),
             cq("CQ2", {ODS: {"gpu": 10}}, cohort="other", reclaim=P.ANY),
             cq("CQ3", {ODS: {"gpu": 0}}, cohort="other")),
        lqs={"eng-alpha/lq": "CQ1", "eng-beta/lq": "CQ2", "eng-gamma/lq": "CQ3"}),
    "capacity not blocked when lending clusterqueue can reclaim (ReclaimWithinCohort=Any)": _with(
        lending_pair(P.ANY), admitted={"eng-beta/b1-pending": ODS}),
    "capacity blocked when lending clusterqueue not guaranteed to reclaim (ReclaimWithinCohort=LowerPriority)": _with(
        lending_pair(P.LOWER_PRIORITY), left={"ClusterQueueB": ["eng-beta/b1-pending"]},
        conditions={**lending_pair(P.NEVER).conditions, "eng-beta/b1-pending": NO_LONGER_FITS}),
    "capacity blocked when lending clusterqueue not guaranteed to reclaim (ReclaimWithinCohort=Never)": _with(
        lending_pair(P.NEVER), left={"ClusterQueueB": ["eng-beta/b1-pending"]},
        conditions={**lending_pair(P.NEVER).conditions, "eng-beta/b1-pending": NO_LONGER_FITS}),
    "in a hierarchical cohort, workload borrowing less is scheduled first": Case(
        (pending("eng-alpha/guaranteed", "lq-guaranteed", None, ps("one", 1, {CPU: "4"})),
         pending("eng-alpha/best-effort", "lq-best-effort", None, ps("one", 1, {CPU: "4"}), priority=3)),
        admitted={"eng-alpha/guaranteed": "default"}, left={"best-effort": ["eng-alpha/best-effort"]},
        conditions={"eng-alpha/best-effort": NO_LONGER_FITS},
        cqs=(cq("guaranteed", {"default": {CPU: 0}}, cohort="guaranteed"),
             cq("best-effort", {"default": {CPU: 0}}, cohort="root")),
        cohorts=(cohort("root"), cohort("guaranteed", {"default": {CPU: 4_000}}, "root")),
        lqs={"eng-alpha/lq-guaranteed": "guaranteed", "eng-alpha/lq-best-effort": "best-effort"}),
    "don't assign flavor if there are no candidates for preemption": Case(
        (held("eng-alpha/admitted", "cq2", ODS, {CPU: "1"}, queue="lq2"),
         pending("eng-alpha/new", "lq1", {CPU: "1"}, priority=100)),
        admitted={"eng-alpha/new": "spot"},
        cqs=(cq("cq1", {ODS: {CPU: (0, 1_000, None)}, "spot": {CPU: (0, 1_000, None)}}, cohort="cohort",
                within=P.LOWER_PRIORITY, reclaim=P.ANY, borrow_within=P.LOWER_PRIORITY, fungibility=_MAY_STOP),
             cq("cq2", {ODS: {CPU: 1_000}, "spot": {CPU: 1_000}}, cohort="cohort")),
        lqs={"eng-alpha/lq1": "cq1", "eng-alpha/lq2": "cq2"}),
    # Admission checks are not modelled; the reservation (spot: on-demand cannot hold 80) is the same.
    "pending admission check with nofit and fit flavors": Case(
        (pending("eng-beta/pending-check", "main", {CPU: "80"}),), admitted={"eng-beta/pending-check": "spot"}),
    "admit to second flavor when first needs preemption; WhenCanPreempt: TryNextFlavor": Case(
        (held("eng-alpha/blocker", "preempt-attempts-cq", ODS, {CPU: "1"}, priority=50, queue="preempt-attempts-lq"),
         pending("eng-alpha/test-wl", "preempt-attempts-lq", {CPU: "1"}, priority=100)),
        admitted={"eng-alpha/test-wl": "spot"},
        cqs=(cq("preempt-attempts-cq", {ODS: {CPU: 1_000}, "spot": {CPU: 1_000}}, within=P.LOWER_PRIORITY,
                fungibility=Fungibility(when_can_preempt=F.TRY_NEXT_FLAVOR)),),
        lqs={"eng-alpha/preempt-attempts-lq": "preempt-attempts-cq"}),
    "admit workload with zero-quantity request for resource not in ClusterQueue": Case(
        (pending("sales/zero-resource-wl", "main", {CPU: "1", GPU: "0"}),),
        admitted={"sales/zero-resource-wl": {"main": {CPU: "default"}}}),
    "preempt when workload requests zero of a resource not defined in ClusterQueue": Case(
        (pending("sales/preemptor", "preempt-zero-gpu-lq", {CPU: "2", GPU: "0"}, uid="wl-preemptor"),
         held("sales/low-priority", "preempt-zero-gpu-cq", "default", {CPU: "4"}, priority=-1)),
        preempted={"sales/low-priority": IN_CQ}, left={"preempt-zero-gpu-cq": ["sales/preemptor"]},
        conditions={"sales/preemptor": (PREEMPTING, flavors_msg("main", short(CPU, "default", "2"), victims=1))},
        cqs=(cq("preempt-zero-gpu-cq", {"default": {CPU: 4_000}}, within=P.LOWER_PRIORITY),),
        lqs={"sales/preempt-zero-gpu-lq": "preempt-zero-gpu-cq"}),
    "prevent integer overflow when sum of requests over podsets exceeds MaxInt64": Case(
        (pending("default/vuln-wl", "overflow-queue", None, ps("ps1", 1, {CPU: "1000000m"}),
                 ps("ps2", 1, {CPU: "9223372036854775000m"})),),
        inadmissible={"overflow-cq": ["default/vuln-wl"]},
        conditions={"default/vuln-wl": (MAX, flavors_msg("ps2", over_max("default", "1k", "9223372036854775", "10k")))},
        cqs=(cq("overflow-cq", {"default": {CPU: 10_000_000}}),), lqs={"default/overflow-queue": "overflow-cq"}),
    # Go clamps the milli-value at MaxInt64 (9223372036854775807m); Python's integers are exact, so the message
    # names the request as written. The outcome is upstream's.
    "prevent integer overflow in ResourceValue conversion to MilliValue": Case(
        (pending("default/vuln-wl", "overflow-queue", None, ps("ps1", 1, {CPU: "9223372036854776"})),),
        inadmissible={"overflow-cq": ["default/vuln-wl"]},
        conditions={"default/vuln-wl": (MAX, flavors_msg("ps1", over_max("default", "0", "9223372036854776", "10")))},
        cqs=(cq("overflow-cq", {"default": {CPU: 10_000}}),), lqs={"default/overflow-queue": "overflow-cq"}),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_schedule(name: str) -> None:
    run(CASES[name])


NOT_PORTED = {
    "error during admission": "the API write failing is the shell's (kueue_shell), not the core's",
    "partial admission single variable pod set": "partial admission is not modelled",
    "partial admission single variable pod set, preempt first": "partial admission is not modelled",
    "partial admission single variable pod set, preempt with partial admission": "partial admission is not modelled",
    "partial admission multiple variable pod sets": "partial admission is not modelled",
    "container does not satisfy limitRange constraints": "LimitRanges are not served",
    "container resource requests exceed limits": "pods are refused by the API server's validation; the core does "
    "not re-check a Workload's pod templates",
    "workload-slice fits in single clusterQueue": "elastic workload slices are not modelled",
    "block preemptions and signal `BlockedOnPreemptionGates` when a preemption gate is present": "preemption gates "
    "(ConcurrentAdmission / MultiKueue) are not modelled",
    "do not signal `BlockedOnPreemptionGates` when a preemption gate is present, but the workload fits without "
    "preemption": "preemption gates are not modelled",
    "do not signal `BlockedOnPreemptionGates` when a preemption gate is present, but the workload had nothing to "
    "preempt": "preemption gates are not modelled",
}
UPSTREAM_CASES = 65
"""``TestSchedule``'s cases at kueue ff69552e79: ported here, in test_kueue_upstream_scheduler.py (3), or above."""


def test_every_upstream_case_is_accounted_for() -> None:
    assert len(CASES) + 3 + len(NOT_PORTED) == UPSTREAM_CASES
