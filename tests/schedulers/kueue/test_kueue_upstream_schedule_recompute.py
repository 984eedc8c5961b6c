"""Upstream's ``pkg/scheduler/scheduler_recompute_preemption_test.go`` ``TestScheduleRecomputePreemptionTargets``
(a preemptor whose victims overlap an earlier one's is assigned again, on its nominated flavors), case by case (keys
are upstream's case names), through ``upstream_schedule.run``. Its own ClusterQueues sit beside
``TestSchedule``'s fixture, in cohorts of their own.

Not ported: "legacy overlap skip with RecomputePreemptionTargetsUponOverlap disabled" (the recomputation is always
on here, as upstream's default). The two TAS variants of the flavor-stickiness case switch TAS gates that change
nothing without TAS, so they are the same table entry.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from kueue_builders import cohort, cq
from test_kueue_upstream_schedule import PREEMPTING, RECLAIM, WAIT, flavors_msg, short, victim
from upstream_schedule import CPU, Case, held, pending, run

from gangplane.api.scheduling.kueue import PreemptionPolicy as P

IN_COHORT_FS = "InCohortFairSharing"
DEFERRED = (PREEMPTING, "Workload has overlapping preemption targets with another workload, but will fit after "
            "these preemptions complete")  # fmt: skip
_ANY = {"within": P.LOWER_PRIORITY, "reclaim": P.ANY}
CQS = tuple(
    cq(name, {"default": {CPU: cpu}}, cohort=parent, **_ANY)
    for name, parent, cpu in (("cq-hero", "parent-cohort-a", 3_000_000), ("cq-noisy", "parent-cohort-a", 0),
                              ("cq-tiny", "parent-cohort-b", 50_000), ("cq-rest", "parent-cohort-c", 0))
)  # fmt: skip
COHORTS = (cohort("root-cohort", {"default": {CPU: 3_005_000}}),
           cohort("parent-cohort-a", {"default": {CPU: 0}}, "root-cohort"),
           cohort("parent-cohort-b", None, "root-cohort"), cohort("parent-cohort-c", None, "root-cohort"))  # fmt: skip
LQS = {f"eng-alpha/lq-{n}": f"cq-{n}" for n in ("hero", "noisy", "tiny", "rest")}
HERO, TINY = "eng-alpha/wl-hero", "eng-alpha/wl-tiny-pending"
PATH = {n: f"/root-cohort/parent-cohort-{p}/cq-{n}" for n, p in (("hero", "a"), ("noisy", "a"), ("tiny", "b"),
                                                                  ("rest", "c"))}  # fmt: skip


def _reclaim_nominal(fair: bool) -> Case:
    """cq-rest holds all 6055 cpu; wl-tiny-pending (50) and wl-hero (2950) both want it back."""
    return Case(
        (held("eng-alpha/wl-rest-admitted", "cq-rest", "default", {CPU: "6055"}, queue="lq-rest"),
         pending(HERO, "lq-hero", {CPU: "2950"}, created=1, job_uid="job-h-uid"),
         pending(TINY, "lq-tiny", {CPU: "50"}, job_uid="job-t-uid")),
        preempted={"eng-alpha/wl-rest-admitted": (RECLAIM, victim(
            "wl-tiny-pending", "job-t-uid", "reclamation within the cohort", PATH["tiny"], PATH["rest"]))},
        left={"cq-hero": [HERO], "cq-tiny": [TINY]},
        conditions={HERO: DEFERRED, TINY: (PREEMPTING, flavors_msg("main", short(CPU, "default", "50"), victims=1))},
        cqs=CQS, cohorts=COHORTS, lqs=LQS, fair=fair,
    )  # fmt: skip


def _stickiness() -> Case:
    """cq-1 borrows 5 of each flavor; its prio-11 preemptor is pinned to the flavor it nominated (default), whose
    victim cq-2's preemptor took first."""
    cqs = tuple(cq(n, {"default": {CPU: 5_000}, "on-demand": {CPU: 5_000}}, cohort="root", **_ANY)
                for n in ("cq-1", "cq-2"))  # fmt: skip
    one, two = "default/wl-pending-high-prio-1", "default/wl-pending-high-prio-2"
    return Case(
        (held("default/wl-admitted-default", "cq-1", "default", {CPU: "10"}, queue="lq-1"),
         held("default/wl-admitted-on-demand", "cq-1", "on-demand", {CPU: "10"}, queue="lq-1"),
         pending(one, "lq-1", {CPU: "10"}, priority=11, uid="wl-pending-high-prio-1-uid",
                 job_uid="job-high-prio-1-uid"),
         pending(two, "lq-2", {CPU: "10"}, priority=10, created=1, uid="wl-pending-high-prio-2-uid",
                 job_uid="job-high-prio-2-uid")),
        preempted={"default/wl-admitted-default": (IN_COHORT_FS, victim(
            "wl-pending-high-prio-2-uid", "job-high-prio-2-uid", "Fair Sharing within the cohort", "/root/cq-2",
            "/root/cq-1"))},
        left={"cq-2": [two]}, inadmissible={"cq-1": [one]},
        conditions={
            one: (WAIT, flavors_msg("main", short(CPU, "default", "10"), "skipping flavor on-demand as it is not "
                                    "found in the nomination mapping for resource cpu")),
            two: (PREEMPTING, flavors_msg("main", short(CPU, "default", "10"), short(CPU, "on-demand", "10"),
                                          victims=1))},
        cqs=cqs, cohorts=(cohort("root"),), lqs={"default/lq-1": "cq-1", "default/lq-2": "cq-2"}, fair=True,
    )  # fmt: skip


CASES: dict[str, Case] = {
    "with fair sharing: hierarchical nominal-first prefers non-borrowing leaf CQ": Case(
        (held("eng-alpha/wl-noisy-admitted", "cq-noisy", "default", {CPU: "3000"}, queue="lq-noisy"),
         held("eng-alpha/wl-tiny-admitted", "cq-tiny", "default", {CPU: "60"}, queue="lq-tiny"),
         held("eng-alpha/wl-rest-admitted", "cq-rest", "default", {CPU: "2995"}, queue="lq-rest"),
         pending(HERO, "lq-hero", {CPU: "2990"}, created=1, job_uid="job-h-uid"),
         pending(TINY, "lq-tiny", {CPU: "10"}, job_uid="job-t-uid")),
        preempted={
            "eng-alpha/wl-noisy-admitted": (RECLAIM, victim(
                "wl-hero", "job-h-uid", "reclamation within the cohort", PATH["hero"], PATH["noisy"])),
            "eng-alpha/wl-rest-admitted": (IN_COHORT_FS, victim(
                "wl-tiny-pending", "job-t-uid", "Fair Sharing within the cohort", PATH["tiny"], PATH["rest"]))},
        left={"cq-hero": [HERO], "cq-tiny": [TINY]},
        conditions={HERO: (PREEMPTING, flavors_msg("main", short(CPU, "default", "5"), victims=1)),
                    TINY: (PREEMPTING, flavors_msg("main", short(CPU, "default", "10"), victims=1))},
        cqs=CQS, cohorts=COHORTS, lqs=LQS, fair=True),
    "with fair sharing: two workloads reclaim nominal quota; RecomputePreemptionTargetsUponOverlap enabled": replace(
        _reclaim_nominal(True),
        workloads=(*_reclaim_nominal(True).workloads,
                   pending("eng-alpha/wl-rest-pending", "lq-rest", {CPU: "4000"}, priority=10, created=2)),
        inadmissible={"cq-rest": ["eng-alpha/wl-rest-pending"]},
        conditions={**_reclaim_nominal(True).conditions,
                    "eng-alpha/wl-rest-pending": (WAIT, flavors_msg("main", short(CPU, "default", "945")))}),
    "two workloads reclaim nominal quota; RecomputePreemptionTargetsUponOverlap enabled": _reclaim_nominal(False),
    "flavor stickiness with RecomputePreemptionTargetsUponOverlap": _stickiness(),
    "flavor stickiness with RecomputePreemptionTargetsUponOverlap and TAS disabled": _stickiness(),
    "flavor stickiness with RecomputePreemptionTargetsUponOverlap and TAS recomputation disabled": _stickiness(),
}  # fmt: skip

NOT_PORTED = {
    "legacy overlap skip with RecomputePreemptionTargetsUponOverlap disabled": "the recomputation is always on",
}


@pytest.mark.parametrize("name", list(CASES))
def test_schedule_recompute_preemption_targets(name: str) -> None:
    run(CASES[name])


def test_every_upstream_case_is_accounted_for() -> None:
    assert len(CASES) + len(NOT_PORTED) == 7
