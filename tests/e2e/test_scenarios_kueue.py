"""Issue #6's scenarios on the embedded control plane: TrainJobs queued through the embedded Kueue (quota,
cohorts, priorities, queueing strategies, flavors) and then placed by the embedded schedulers, running real
local processes. Resources are accounting units; workloads are short ``python -c`` sleeps."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from e2e_harness import Cluster, wait_for
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gangplane.agent.nodes import ClusterConfig, NodeGroup
from gangplane.api.scheduling import kueue as kq
from gangplane.clock import WallClock, rfc3339
from gangplane.controllers.pending import WAITING_CONDITION
from gangplane.store import catalog
from gangplane.store.base import Object, ResourceType

pytestmark = pytest.mark.slow

TRAINER = "trainer.kubeflow.org/v1alpha1"
NS = "default"
Factory = Callable[[ClusterConfig], Cluster]


# ---------------------------------------------------------------- objects


def _runtime(name: str, scheduler: str | None = None, pod_group: dict[str, Any] | None = None) -> Object:
    pod: dict[str, Any] = {"containers": [{"name": "node", "image": "local"}]}
    if scheduler:
        pod["schedulerName"] = scheduler
    rjob = {
        "name": "node",
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": pod}},
        },
    }
    spec: dict[str, Any] = {"mlPolicy": {"numNodes": 1}, "template": {"spec": {"replicatedJobs": [rjob]}}}
    if pod_group:
        spec["podGroupPolicy"] = pod_group
    return {"apiVersion": TRAINER, "kind": "ClusterTrainingRuntime", "metadata": {"name": name}, "spec": spec}


def trainjob(
    name: str,
    queue: str,
    code: str,
    *,
    cpu: str = "1",
    nodes: int = 1,
    runtime: str = "plain",
    priority: str | None = None,
) -> Object:
    labels = {kq.QUEUE_NAME_LABEL: queue} if queue else {}
    if priority:
        labels[kq.PRIORITY_CLASS_LABEL] = priority
    trainer = {
        "numNodes": nodes,
        "command": [sys.executable, "-c", code],
        "resourcesPerNode": {"requests": {"cpu": cpu}},
    }
    return {
        "apiVersion": TRAINER,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"runtimeRef": {"name": runtime}, "trainer": trainer},
    }


def sleep(seconds: float) -> str:
    return f"import time; time.sleep({seconds})"


def flavor(name: str, node_labels: dict[str, str] | None = None) -> Object:
    spec = {"nodeLabels": node_labels} if node_labels else {}
    return {"apiVersion": kq.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cluster_queue(name: str, cpu_by_flavor: dict[str, int | dict[str, Any]], **spec: Any) -> Object:
    """A ClusterQueue covering cpu; a flavor's quota is the nominal cores or a full resource entry."""
    flavors = [
        {"name": f, "resources": [{"name": "cpu", **(q if isinstance(q, dict) else {"nominalQuota": q})}]}
        for f, q in cpu_by_flavor.items()
    ]
    body = {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}]}
    return {
        "apiVersion": kq.API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {**body, **spec},
    }


def local_queue(name: str, cq: str) -> Object:
    return {
        "apiVersion": kq.API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"clusterQueue": cq},
    }


def priority_class(name: str, value: int) -> Object:
    return {
        "apiVersion": kq.API_VERSION,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def queue_setup(c: Cluster, *objects: Object) -> None:
    """The plain runtime, a default flavor and the given Kueue objects."""
    c.create(_runtime("plain"))
    c.create(flavor("default"))
    for obj in objects:
        c.create(obj)


def nodes(*groups: tuple[str, int, str, dict[str, str]]) -> ClusterConfig:
    """Node groups ``(name, count, cpu, labels)``, nodes named ``<name>-<i>``."""
    return ClusterConfig(
        node_groups=[
            NodeGroup(name=n, count=k, capacity={"cpu": cpu, "memory": "8Gi"}, labels=labels)
            for n, k, cpu, labels in groups
        ]
    )


# ---------------------------------------------------------------- reading the cluster


def workload(c: Cluster, job: str) -> Object | None:
    for w in c.store.list(catalog.WORKLOADS).items:
        if any(r.get("name") == job for r in w["metadata"].get("ownerReferences") or []):
            return w
    return None


def wl_condition(c: Cluster, job: str, kind: str) -> dict[str, Any] | None:
    found = workload(c, job)
    conditions = ((found or {}).get("status") or {}).get("conditions") or []
    return next((x for x in conditions if x["type"] == kind and x["status"] == "True"), None)


def suspended(c: Cluster, job: str) -> bool:
    return bool(c.trainjob(job)["spec"].get("suspend"))


def running(c: Cluster, job: str, count: int = 1) -> bool:
    pods = [p for p in c.pods(job) if not p["metadata"].get("deletionTimestamp")]
    return len(pods) == count and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def live_pods(c: Cluster, job: str) -> list[Object]:
    return [p for p in c.pods(job) if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]


def complete(c: Cluster, job: str, timeout: float = 60) -> None:
    assert wait_for(lambda: c.finished(job), timeout, f"{job} to finish") == "Complete", c.trainjob(job)


def wait(c: Cluster, check: Callable[[], Any], timeout: float, what: str, *show: str) -> Any:
    """``wait_for`` that, on failure, adds the state of the ``show`` jobs at that moment."""
    try:
        return wait_for(check, timeout, what)
    except AssertionError as err:
        raise AssertionError(f"{err}\n{dump(c, *show)}") from None


def before(c: Cluster, first: str, then: str) -> Callable[[], bool]:
    """A check for ``wait``: true once ``then`` is admitted (unsuspended); fails if that happens before
    ``first`` finished."""

    def check() -> bool:
        started = not suspended(c, then)
        assert not started or c.finished(first), f"{then} was admitted before {first} finished"
        return started

    return check


def dump(c: Cluster, *jobs: str) -> str:
    """What a failure message shows: each job's suspend flag, Waiting condition and Workload conditions."""
    lines = []
    for job in jobs:
        w = workload(c, job) or {}
        conds = [
            (x["type"], x["status"], x.get("message", ""))
            for x in (w.get("status") or {}).get("conditions") or []
        ]
        lines.append(
            f"{job}: suspend={suspended(c, job)} waiting={c.condition(job, WAITING_CONDITION)} wl={conds}"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- 1. quota


def run_quota_scenario(c: Cluster, while_blocked: Callable[[], None] = lambda: None) -> None:
    """Quota for one 2-cpu job: the second waits QueuedByKueue with Kueue's message, then runs.
    ``while_blocked`` runs while the second job waits and the first still runs."""
    queue_setup(c, cluster_queue("cq", {"default": 2}), local_queue("lq", "cq"))
    c.create(trainjob("first", "lq", sleep(3), cpu="2"))
    wait_for(lambda: running(c, "first"), 30, "first to run")
    c.create(trainjob("second", "lq", sleep(0.2), cpu="2"))
    waiting = wait_for(
        lambda: (
            (w := c.condition("second", WAITING_CONDITION))
            and "insufficient" in w["message"]
            and "(0 workloads ahead)" in w["message"]
            and w
        ),
        20,
        "second's QueuedByKueue condition with Kueue's message and its queue position",
    )
    assert waiting["reason"] == "QueuedByKueue"
    reserved = (workload(c, "second") or {})["status"]["conditions"]
    kueue_message = next(x["message"] for x in reserved if x["type"] == "QuotaReserved")
    assert kueue_message in waiting["message"]
    assert "insufficient unused quota for cpu in flavor default" in kueue_message
    assert suspended(c, "second") and c.pods("second") == []
    while_blocked()
    assert c.finished("first") is None, "first ended before the checks on the blocked second job were done"
    wait(c, before(c, "first", "second"), 30, "second to be admitted once first finished", "first", "second")
    complete(c, "first")
    complete(c, "second")
    assert c.condition("second", WAITING_CONDITION) is None
    # Kueue marks the Workload Finished on its own pass after the TrainJob completes: wait for it.
    wait_for(lambda: wl_condition(c, "second", "Finished"), 20, "second's Workload to be marked Finished")


def test_quota_blocks_a_second_trainjob_until_the_first_finishes(cluster_factory: Factory) -> None:
    run_quota_scenario(cluster_factory(nodes(("node", 1, "4", {}))))


# ---------------------------------------------------------------- 2. cohort borrowing and reclaim


def test_borrowing_from_a_cohort_is_reclaimed_by_its_lender(cluster_factory: Factory) -> None:
    c = cluster_factory(nodes(("node", 2, "4", {})))
    reclaim = {"reclaimWithinCohort": "Any"}
    queue_setup(
        c,
        cluster_queue("cq-a", {"default": 4}, cohortName="team", preemption=reclaim),
        cluster_queue("cq-b", {"default": 4}, cohortName="team", preemption=reclaim),
        local_queue("lq-a", "cq-a"),
        local_queue("lq-b", "cq-b"),
    )
    c.create(trainjob("a-own", "lq-a", sleep(6), cpu="4"))
    wait_for(lambda: not suspended(c, "a-own"), 20, "a-own admitted in its nominal quota")
    c.create(trainjob("a-borrow", "lq-a", sleep(6), cpu="4"))
    wait(c, lambda: running(c, "a-borrow"), 30, "a-borrow to run on borrowed quota", "a-borrow")
    assert (workload(c, "a-borrow") or {})["status"]["admission"]["clusterQueue"] == "cq-a"
    c.create(trainjob("b-own", "lq-b", sleep(0.5), cpu="4"))
    wait(c, lambda: not suspended(c, "b-own"), 20, "b-own to reclaim", "a-own", "a-borrow", "b-own")
    preempted = wl_condition(c, "a-borrow", "Preempted")
    assert preempted is not None and preempted["reason"] == "InCohortReclamation", dump(c, "a-borrow")
    assert suspended(c, "a-borrow") and not suspended(c, "a-own")
    wait_for(lambda: not live_pods(c, "a-borrow"), 30, "a-borrow's pods to be removed")
    complete(c, "b-own")
    complete(c, "a-own")
    complete(c, "a-borrow")


# ---------------------------------------------------------------- 3. priority preemption


def test_high_priority_preempts_low_which_requeues_and_completes(cluster_factory: Factory) -> None:
    c = cluster_factory(nodes(("node", 1, "4", {})))
    cq = cluster_queue("cq", {"default": 2}, preemption={"withinClusterQueue": "LowerPriority"})
    queue_setup(c, cq, local_queue("lq", "cq"), priority_class("low", 10), priority_class("high", 1000))
    c.create(trainjob("low", "lq", sleep(4), cpu="2", priority="low"))
    wait_for(lambda: running(c, "low"), 30, "low to run")
    c.create(trainjob("high", "lq", sleep(1), cpu="2", priority="high"))
    wait(c, lambda: not suspended(c, "high"), 20, "high to be admitted", "low", "high")
    assert suspended(c, "low"), dump(c, "low")
    preempted = wl_condition(c, "low", "Preempted")
    assert preempted is not None and preempted["reason"] == "InClusterQueue", dump(c, "low")
    requeued = wl_condition(c, "low", "Requeued")
    assert requeued is not None and requeued["reason"] == "Preempted", dump(c, "low")
    assert (workload(c, "high") or {})["spec"]["priority"] == 1000
    wait_for(lambda: not live_pods(c, "low"), 30, "low's pods to be removed")
    assert c.finished("high") is None and c.finished("low") is None
    wait(c, before(c, "high", "low"), 30, "low to be admitted again once high finished", "low", "high")
    complete(c, "high")
    complete(c, "low")
    wait_for(lambda: wl_condition(c, "low", "Finished"), 20, "low's Workload to be marked Finished")


# ---------------------------------------------------------------- 4. StrictFIFO vs BestEffortFIFO


def test_strict_fifo_blocks_behind_its_head_best_effort_skips(cluster_factory: Factory) -> None:
    c = cluster_factory(nodes(("node", 2, "4", {})))
    queue_setup(
        c,
        cluster_queue("strict", {"default": 4}, queueingStrategy="StrictFIFO"),
        cluster_queue("besteffort", {"default": 4}, queueingStrategy="BestEffortFIFO"),
        local_queue("lq-strict", "strict"),
        local_queue("lq-be", "besteffort"),
    )
    for q in ("strict", "be"):
        c.create(trainjob(f"{q}-filler", f"lq-{q}", sleep(5), cpu="2"))
    wait_for(lambda: all(running(c, f"{q}-filler") for q in ("strict", "be")), 30, "both fillers to run")
    for q in ("strict", "be"):
        c.create(trainjob(f"{q}-big", f"lq-{q}", sleep(0.2), cpu="4"))
    wait_for(lambda: all(workload(c, f"{q}-big") for q in ("strict", "be")), 10, "big workloads")
    # Queue order is by Workload creation time, at second precision as on a real API server: make sure the
    # small jobs' Workloads are created in a later second, so the big ones are the heads.
    created = max(
        str((workload(c, f"{q}-big") or {})["metadata"]["creationTimestamp"]) for q in ("strict", "be")
    )
    wait_for(lambda: rfc3339(WallClock().now()) > created, 3, "the next second")
    for q in ("strict", "be"):
        c.create(trainjob(f"{q}-small", f"lq-{q}", sleep(0.2), cpu="2"))
    wait(c, lambda: not suspended(c, "be-small"), 20, "be-small to skip be-big", "be-big", "be-small")
    assert suspended(c, "be-big")
    assert suspended(c, "strict-small") and suspended(c, "strict-big"), dump(c, "strict-big", "strict-small")
    assert c.finished("strict-filler") is None  # the strict small job waited though its quota was free

    wait(
        c,
        before(c, "strict-big", "strict-small"),
        30,
        "strict-small after its head",
        "strict-big",
        "strict-small",
    )
    for job in ("strict-filler", "strict-big", "strict-small", "be-filler", "be-big", "be-small"):
        complete(c, job)


# ---------------------------------------------------------------- 5. flavors


def test_flavor_selection_writes_the_node_selector_and_pods_land_on_matching_nodes(
    cluster_factory: Factory,
) -> None:
    c = cluster_factory(nodes(("spot", 2, "4", {"pool": "spot"}), ("ondemand", 2, "4", {"pool": "ondemand"})))
    c.create(_runtime("plain"))
    for name in ("spot", "ondemand"):
        c.create(flavor(name, {"pool": name}))
    c.create(cluster_queue("cq", {"spot": 4, "ondemand": 8}))
    c.create(local_queue("lq", "cq"))
    c.create(trainjob("on-spot", "lq", sleep(4), cpu="2", nodes=2))
    wait_for(lambda: running(c, "on-spot", 2), 30, "on-spot to run")
    c.create(trainjob("overflow", "lq", sleep(0.5), cpu="2", nodes=2))
    complete(c, "overflow")
    admitted = (workload(c, "overflow") or {})["status"]["admission"]["podSetAssignments"][0]["flavors"]
    assert admitted == {"cpu": "ondemand"}
    patch = next(p for p in c.trainjob("overflow")["spec"]["runtimePatches"] if p["manager"] == kq.MANAGER)
    rjob = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    assert rjob["template"]["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "ondemand"}
    for job, pool in (("on-spot", "spot"), ("overflow", "ondemand")):
        pods = c.pods(job)
        assert len(pods) == 2
        assert {p["spec"]["nodeSelector"]["pool"] for p in pods} == {pool}
        assert {p["spec"]["nodeName"].rsplit("-", 1)[0] for p in pods} == {pool}
    complete(c, "on-spot")


# ---------------------------------------------------------------- 6. Kueue + gang schedulers


def _all_bound(c: Cluster, job: str) -> None:
    # That a gang binds whole is checked while it waits (placed_after_the_squatter), not from PodScheduled
    # times (a gang's members are bound one binding at a time).
    pods = c.pods(job)
    assert len(pods) == 2 and all(p["spec"].get("nodeName") for p in pods), pods


@pytest.mark.parametrize(
    ("scheduler", "policy", "podgroups"),
    [
        (
            "scheduler-plugins-scheduler",
            {"coscheduling": {"scheduleTimeoutSeconds": 60}},
            catalog.COSCHEDULING_PODGROUPS,
        ),
        ("volcano", {"volcano": {}}, catalog.VOLCANO_PODGROUPS),
    ],
    ids=["coscheduling", "volcano"],
)
def test_kueue_admits_then_the_gang_scheduler_places_the_gang(
    cluster_factory: Factory, scheduler: str, policy: dict[str, Any], podgroups: ResourceType
) -> None:
    """Kueue's quota fits one 2 x 3-cpu gang; an unqueued 2-cpu job holds one node, so the admitted gang
    cannot be placed until it ends: no member binds alone; the second gang waits in Kueue, suspended."""
    c = cluster_factory(nodes(("node", 2, "4", {})))
    queue_setup(c, cluster_queue("cq", {"default": 6}), local_queue("lq", "cq"))
    c.create(_runtime("gang", scheduler, policy))
    c.create(trainjob("squatter", "", sleep(4), cpu="2"))  # not queued: Kueue leaves it alone
    wait_for(lambda: running(c, "squatter"), 30, "squatter to run")
    c.create(trainjob("gang-1", "lq", sleep(1), cpu="3", nodes=2, runtime="gang"))
    wait(c, lambda: not suspended(c, "gang-1") and len(c.pods("gang-1")) == 2, 20, "gang-1's pods", "gang-1")
    c.create(trainjob("gang-2", "lq", sleep(0.2), cpu="3", nodes=2, runtime="gang"))
    wait_for(
        lambda: (w := c.condition("gang-2", WAITING_CONDITION)) and w["reason"] == "QueuedByKueue",
        20,
        "gang-2 queued by Kueue",
    )
    assert c.store.get(podgroups, NS, "gang-1")["spec"]["minMember"] == 2
    blocked = wait_for(
        lambda: (w := c.condition("gang-1", WAITING_CONDITION)) and w["reason"] != "QueuedByKueue" and w,
        10,
        "gang-1's placement wait (the squatter holds 2 cpu for 4 s)",
    )
    assert blocked["reason"] in ("PodsUnschedulable", "GangUnschedulable"), blocked
    assert "gang needs 2 pods (cpu=3 each)" in blocked["message"], blocked

    def placed_after_the_squatter() -> bool:
        bound = [p for p in c.pods("gang-1") if p["spec"].get("nodeName")]
        # one 3-cpu member would fit on the free node: none may bind until the whole gang fits
        assert bound == [] or not live_pods(c, "squatter"), (
            "a gang-1 pod bound while the squatter held a node"
        )
        assert suspended(c, "gang-2") or c.finished("gang-1"), "gang-2 admitted while gang-1 holds the quota"
        return len(bound) == 2

    wait(c, placed_after_the_squatter, 30, "gang-1 placed", "gang-1", "gang-2", "squatter")
    for job in ("gang-1", "gang-2", "squatter"):
        complete(c, job)
    for job in ("gang-1", "gang-2"):
        assert wl_condition(c, job, "Admitted") is not None
        _all_bound(c, job)
        assert {p["spec"]["schedulerName"] for p in c.pods(job)} == {scheduler}


# ---------------------------------------------------------------- 7. metrics


def _samples(c: Cluster) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(c.local.metrics).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_report_admissions_pending_and_quota(cluster_factory: Factory) -> None:
    c = cluster_factory(nodes(("node", 1, "4", {})))
    pending = (("cluster_queue", "cq"), ("status", "inadmissible"))
    quota = (("cluster_queue", "cq"), ("cohort", ""), ("flavor", "default"), ("resource", "cpu"))

    def while_blocked() -> None:
        samples = _samples(c)
        active = (("cluster_queue", "cq"), ("status", "active"))
        assert (
            samples[("kueue_pending_workloads", pending)] + samples[("kueue_pending_workloads", active)] == 1
        )
        assert samples[("kueue_admitted_active_workloads", (("cluster_queue", "cq"),))] == 1
        assert samples[("kueue_cluster_queue_resource_usage", quota)] == 2

    run_quota_scenario(c, while_blocked)
    samples = _samples(c)
    cq = (("cluster_queue", "cq"), ("priority_class", ""))
    assert samples[("kueue_admitted_workloads_total", cq)] == 2
    assert samples[("kueue_quota_reserved_workloads_total", cq)] == 2
    assert samples[("kueue_admission_wait_time_seconds_count", cq)] == 2
    assert samples[("kueue_admission_wait_time_seconds_sum", cq)] > 0  # second waited for the first
    assert samples[("kueue_admission_attempts_total", (("result", "inadmissible"),))] >= 1
    wait_for(
        lambda: _samples(c).get(("kueue_finished_workloads_total", (("cluster_queue", "cq"),))) == 2,
        10,
        "both workloads counted finished",
    )
    samples = _samples(c)
    assert samples[("kueue_cluster_queue_nominal_quota", quota)] == 2
    assert samples[("kueue_cluster_queue_resource_usage", quota)] == 0
    assert samples[("kueue_pending_workloads", pending)] == 0
    assert samples[("kueue_admitted_active_workloads", (("cluster_queue", "cq"),))] == 0
