"""The slurm-bridge-scheduler shell against a real 4-node Slurm (scripts/slurm/start.sh; see conftest.py).

Nodes ``node-1..4`` carry the ``slinky.slurm.net/slurm-nodename`` label ``n1..n4``, so the mapping from Slurm's
names to gangplane's is exercised, not assumed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from slurm_builders import LocalSlurm, node_object, pod_group_object, pod_object, wait_until

from gangplane.api.scheduling.slurm import SLURM_JOB_ID_LABEL, SLURM_NODE_ANNOTATION
from gangplane.clock import WallClock
from gangplane.schedulers.slurm import (
    CONDITION_TYPE,
    POD_GROUP_JOB_ANNOTATION,
    SlurmBridge,
    build_slurm_bridge,
)
from gangplane.schedulers.slurm.model import Reason
from gangplane.store.base import ListOptions, Object
from gangplane.store.catalog import COSCHEDULING_PODGROUPS, NODES, PODS
from gangplane.store.memory import MemoryStore

pytestmark = pytest.mark.slow


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    memory = MemoryStore()
    for i in range(1, 5):
        memory.create(NODES, node_object(f"node-{i}", f"n{i}"))
    yield memory
    memory.close()


@pytest.fixture
def bridge(store: MemoryStore, slurm: LocalSlurm) -> Iterator[SlurmBridge]:
    running = build_slurm_bridge(store, WallClock(), slurm.cli(), poll_interval=0.2)
    running.start()
    yield running
    running.stop()


def submit_group(store: MemoryStore, name: str, size: int, **annotations: str) -> None:
    store.create(COSCHEDULING_PODGROUPS, pod_group_object(name, size, annotations=annotations))
    for i in range(size):
        store.create(PODS, pod_object(f"{name}-{i}", name))


def group_pods(store: MemoryStore, name: str) -> list[Object]:
    selector = f"scheduling.x-k8s.io/pod-group={name}"
    return store.list(PODS, ListOptions(namespace="ns", label_selector=selector)).items


def bound_nodes(store: MemoryStore, name: str, size: int) -> list[str] | None:
    nodes = [(p.get("spec") or {}).get("nodeName") for p in group_pods(store, name)]
    return [str(n) for n in nodes] if len(nodes) == size and all(nodes) else None


def condition(store: MemoryStore, name: str) -> dict[str, Any]:
    group = store.get(COSCHEDULING_PODGROUPS, "ns", name)
    found = [c for c in (group.get("status") or {}).get("conditions") or () if c["type"] == CONDITION_TYPE]
    return found[0] if found else {}


def job_id_of(store: MemoryStore, name: str) -> int | None:
    value = (
        store.get(COSCHEDULING_PODGROUPS, "ns", name)["metadata"]
        .get("annotations", {})
        .get(POD_GROUP_JOB_ANNOTATION)
    )
    return int(value) if value else None


def job_state(slurm: LocalSlurm, job_id: int) -> str:
    return slurm.run("squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%T").strip()


def test_a_three_pod_group_is_allocated_by_slurm_and_bound_to_the_mapped_nodes(
    store: MemoryStore, slurm: LocalSlurm, bridge: SlurmBridge
) -> None:
    submit_group(store, "train", 3)
    nodes = wait_until(lambda: bound_nodes(store, "train", 3), what="3 pods bound")
    job_id = job_id_of(store, "train")
    assert job_id is not None and job_state(slurm, job_id) == "RUNNING"
    allocated = slurm.run("squeue", "-h", "-j", str(job_id), "-o", "%N").strip()
    expanded = slurm.run("scontrol", "show", "hostnames", allocated).split()
    assert sorted(nodes) == sorted(f"node-{name[1:]}" for name in expanded)  # n2 -> node-2, distinct nodes
    for pod in group_pods(store, "train"):
        assert pod["metadata"]["labels"][SLURM_JOB_ID_LABEL] == str(job_id)
        assert pod["metadata"]["annotations"][SLURM_NODE_ANNOTATION] == pod["spec"]["nodeName"]
        scheduled = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert scheduled[0]["status"] == "True"
    wait_until(lambda: condition(store, "train").get("status") == "True", what="group condition")
    assert condition(store, "train")["reason"] == Reason.ALLOCATED


def test_a_second_group_waits_for_nodes_and_runs_once_the_first_job_is_cancelled(
    store: MemoryStore, slurm: LocalSlurm, bridge: SlurmBridge
) -> None:
    submit_group(store, "first", 3)
    wait_until(lambda: bound_nodes(store, "first", 3), what="first group bound")
    submit_group(store, "second", 3)
    wait_until(lambda: condition(store, "second").get("reason") == Reason.JOB_PENDING, what="second pending")
    second_job = job_id_of(store, "second")
    assert second_job is not None and job_state(slurm, second_job) == "PENDING"
    assert "is pending" in condition(store, "second")["message"]
    assert bound_nodes(store, "second", 3) is None
    first_job = job_id_of(store, "first")
    slurm.run("scancel", str(first_job))
    wait_until(lambda: bound_nodes(store, "second", 3), what="second group bound after the first job ended")
    assert job_state(slurm, second_job) == "RUNNING"


def test_a_group_larger_than_the_partition_gets_a_clear_reason_and_no_job(
    store: MemoryStore, slurm: LocalSlurm, bridge: SlurmBridge
) -> None:
    submit_group(store, "huge", 5)
    wait_until(lambda: condition(store, "huge").get("reason") == Reason.UNSCHEDULABLE, what="unschedulable")
    assert condition(store, "huge")["message"] == "requested 5 nodes; partition slurm-bridge has 4"
    wait_until(
        lambda: store.get(PODS, "ns", "huge-0").get("status", {}).get("conditions"), what="pod condition"
    )
    (scheduled,) = store.get(PODS, "ns", "huge-0")["status"]["conditions"]
    assert (scheduled["type"], scheduled["status"], scheduled["reason"]) == (
        "PodScheduled",
        "False",
        "Unschedulable",
    )
    assert scheduled["message"] == "requested 5 nodes; partition slurm-bridge has 4"
    comments = slurm.run("squeue", "-h", "-t", "all", "-o", "%k").split()
    assert not [c for c in comments if "ns/huge" in c]  # nothing was submitted


def test_a_request_slurm_refuses_carries_slurms_own_message(
    store: MemoryStore, slurm: LocalSlurm, bridge: SlurmBridge
) -> None:
    submit_group(store, "picky", 2, **{"slurmjob.slinky.slurm.net/constraints": "nosuchfeature"})
    wait_until(lambda: condition(store, "picky").get("reason") == Reason.SUBMIT_REJECTED, what="rejected")
    assert condition(store, "picky")["message"] == "Slurm rejected the job: Invalid feature specification"


def test_scancel_of_a_running_job_deletes_its_pods_with_the_reason(
    store: MemoryStore, slurm: LocalSlurm, bridge: SlurmBridge
) -> None:
    submit_group(store, "victim", 2)
    wait_until(lambda: bound_nodes(store, "victim", 2), what="bound")
    job_id = job_id_of(store, "victim")
    slurm.run("scancel", str(job_id))
    wait_until(lambda: not group_pods(store, "victim"), what="pods deleted")
    ended = wait_until(
        lambda: condition(store, "victim").get("reason") == Reason.JOB_ENDED and condition(store, "victim")
    )
    assert isinstance(ended, dict) and ended["message"] == f"Slurm job {job_id} ended: CANCELLED"
    wait_until(lambda: job_id_of(store, "victim") is None, what="job forgotten")


def test_deleting_the_podgroup_cancels_its_slurm_job(
    store: MemoryStore, slurm: LocalSlurm, bridge: SlurmBridge
) -> None:
    submit_group(store, "doomed", 2)
    wait_until(lambda: bound_nodes(store, "doomed", 2), what="bound")
    job_id = job_id_of(store, "doomed")
    assert job_id is not None
    store.delete(COSCHEDULING_PODGROUPS, "ns", "doomed")
    wait_until(lambda: job_state(slurm, job_id) == "CANCELLED", what="job cancelled")
    wait_until(lambda: not group_pods(store, "doomed"), what="the job's pods deleted")


def test_finished_pods_release_the_allocation(
    store: MemoryStore, slurm: LocalSlurm, bridge: SlurmBridge
) -> None:
    submit_group(store, "short", 2)
    wait_until(lambda: bound_nodes(store, "short", 2), what="bound")
    job_id = job_id_of(store, "short")
    assert job_id is not None
    for pod in group_pods(store, "short"):
        pod["status"]["phase"] = "Succeeded"
        store.update_status(PODS, pod)
    wait_until(lambda: job_state(slurm, job_id) == "CANCELLED", what="job cancelled once all pods finished")
    assert len(group_pods(store, "short")) == 2  # finished pods are kept


def test_a_restarted_bridge_adopts_the_running_job(store: MemoryStore, slurm: LocalSlurm) -> None:
    first = build_slurm_bridge(store, WallClock(), slurm.cli(), poll_interval=0.2)
    first.start()
    try:
        submit_group(store, "steady", 2)
        wait_until(lambda: bound_nodes(store, "steady", 2), what="bound")
    finally:
        first.stop()
    job_id = job_id_of(store, "steady")
    store.create(PODS, pod_object("steady-late", "steady"))  # a replacement pod: not enough nodes left free
    second = build_slurm_bridge(store, WallClock(), slurm.cli(), poll_interval=0.2)
    second.start()
    try:
        second.wait_synced()
        wait_until(
            lambda: condition(store, "steady").get("reason") == Reason.JOB_PENDING, what="surplus pod noted"
        )
    finally:
        second.stop()
    rows = [line.split() for line in slurm.run("squeue", "-h", "-t", "all", "-o", "%i %k").splitlines()]
    assert [job for job, comment in rows if "ns/steady:" in comment] == [str(job_id)]  # no second submission
    assert not store.get(PODS, "ns", "steady-late")["spec"].get("nodeName")
