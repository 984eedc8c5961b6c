"""The shell's execution of decisions against a store, with a scripted Slurm (no daemons needed)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from slurm_builders import pod_group_object, pod_object, slurm_nodes, wait_until

from gangplane.clock import ManualClock
from gangplane.schedulers.slurm import (
    POD_GROUP_JOB_ANNOTATION,
    SlurmBridge,
    build_slurm_bridge,
    slurm_node_objects,
)
from gangplane.schedulers.slurm.cli import (
    CommandResult,
    JobSpec,
    SlurmError,
    SlurmJob,
    SlurmNode,
    SubmitRejected,
)
from gangplane.schedulers.slurm.commands import SlurmCli
from gangplane.schedulers.slurm.model import CONDITION_TYPE, POD_FINALIZER, RELEASE_AFTER, Reason, job_comment
from gangplane.schedulers.slurm.shell import MANAGED_NODE_TOLERATION
from gangplane.store.catalog import COSCHEDULING_PODGROUPS, NODES, PODS
from gangplane.store.memory import MemoryStore


class ScriptedSlurm(SlurmCli):
    """Slurm as a dict: submissions run at once on the first free nodes, or pend; no threads, no daemons."""

    def __init__(self) -> None:
        super().__init__(runner=lambda argv: CommandResult(tuple(argv), 1, "", "not a real Slurm"))
        self.submitted: dict[int, SlurmJob] = {}
        self.specs: list[JobSpec] = []
        self.reject_with: str | None = None
        self.down = False

    def submit(self, spec: JobSpec) -> int:
        self.specs.append(spec)
        if self.reject_with is not None:
            raise SubmitRejected(CommandResult(("sbatch",), 1, "", f"sbatch: error: {self.reject_with}"))
        job_id = len(self.specs)
        busy = {n for j in self.submitted.values() if j.state == "RUNNING" for n in j.nodes}
        free = [n.name for n in slurm_nodes() if n.name not in busy][: spec.max_nodes]
        running = len(free) >= spec.min_nodes
        state, nodes = ("RUNNING", tuple(free)) if running else ("PENDING", ())
        self.submitted[job_id] = SlurmJob(
            job_id, spec.name, state, "None", ",".join(nodes), len(nodes), "", spec.comment, 0, nodes
        )
        return job_id

    def cancel(self, job_id: int) -> None:
        self.submitted[job_id] = replace(self.submitted[job_id], state="CANCELLED")

    def job(self, job_id: int) -> SlurmJob | None:
        return self.submitted.get(job_id)

    def jobs(self) -> list[SlurmJob]:
        if self.down:
            raise SlurmError(
                CommandResult(("squeue",), 1, "", "squeue: error: Unable to contact slurm controller")
            )
        return list(self.submitted.values())

    def nodes(self) -> list[SlurmNode]:
        return list(slurm_nodes())


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    memory = MemoryStore()
    for obj in slurm_node_objects(slurm_nodes()):
        memory.create(NODES, obj)
    yield memory
    memory.close()


@pytest.fixture
def scripted() -> ScriptedSlurm:
    return ScriptedSlurm()


@pytest.fixture
def bridge(store: MemoryStore, scripted: ScriptedSlurm) -> Iterator[SlurmBridge]:
    running = build_slurm_bridge(store, ManualClock(), scripted)
    running.manager.start_informers()
    yield running
    running.stop()
    running.manager.stop()


def settle(bridge: SlurmBridge, store: MemoryStore, cycles: int = 4) -> None:
    """Run cycles, each once the informer caches show what the store holds."""
    for _ in range(cycles):
        wait_until(lambda: caught_up(bridge, store), 5, "informer caches")
        bridge.run_once()


def caught_up(bridge: SlurmBridge, store: MemoryStore) -> bool:
    def versions(items: list[dict[str, Any]]) -> set[tuple[str, str]]:
        return {(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in items}

    pairs = ((bridge.pods, PODS), (bridge.groups, COSCHEDULING_PODGROUPS), (bridge.nodes, NODES))
    return all(versions(informer.list()) == versions(store.list(rt).items) for informer, rt in pairs)


def create_group(store: MemoryStore, name: str, size: int, **annotations: str) -> None:
    store.create(COSCHEDULING_PODGROUPS, pod_group_object(name, size, annotations=annotations))
    for i in range(size):
        store.create(PODS, pod_object(f"{name}-{i}", name))


def group_condition(store: MemoryStore, name: str) -> dict[str, str]:
    group = store.get(COSCHEDULING_PODGROUPS, "ns", name)
    return next(c for c in group["status"]["conditions"] if c["type"] == CONDITION_TYPE)


def test_slurm_node_objects_map_by_label_and_carry_capacity() -> None:
    (obj,) = slurm_node_objects([SlurmNode("n7", ("p",), 8, 4096, 2)])
    assert obj["metadata"] == {"name": "n7", "labels": {"slinky.slurm.net/slurm-nodename": "n7"}}
    assert obj["status"]["capacity"] == {"cpu": "8", "memory": "4096Mi", "pods": "110", "nvidia.com/gpu": "2"}


def test_a_cycle_submits_records_and_binds(
    store: MemoryStore, scripted: ScriptedSlurm, bridge: SlurmBridge
) -> None:
    create_group(store, "train", 2)
    settle(bridge, store)
    assert [s.min_nodes for s in scripted.specs] == [2]
    assert (
        store.get(COSCHEDULING_PODGROUPS, "ns", "train")["metadata"]["annotations"][POD_GROUP_JOB_ANNOTATION]
        == "1"
    )
    assert [store.get(PODS, "ns", f"train-{i}")["spec"]["nodeName"] for i in range(2)] == ["n1", "n2"]
    assert group_condition(store, "train")["reason"] == Reason.ALLOCATED
    # the managed-node taint's toleration, as slurm-bridge's PreEnqueue adds it
    assert store.get(PODS, "ns", "train-0")["spec"]["tolerations"] == [MANAGED_NODE_TOLERATION]


def test_a_rejected_submission_is_reported_once_not_retried_every_cycle(
    store: MemoryStore, scripted: ScriptedSlurm, bridge: SlurmBridge
) -> None:
    scripted.reject_with = "Batch job submission failed: Invalid feature specification"
    create_group(store, "train", 2)
    settle(bridge, store, cycles=5)
    assert len(scripted.specs) == 1
    condition = group_condition(store, "train")
    assert (condition["reason"], condition["message"]) == (
        Reason.SUBMIT_REJECTED,
        "Slurm rejected the job: Invalid feature specification",
    )


def test_an_unreachable_controller_changes_nothing(
    store: MemoryStore, scripted: ScriptedSlurm, bridge: SlurmBridge
) -> None:
    create_group(store, "train", 2)
    settle(bridge, store)
    scripted.down = True
    before = store.list(PODS).resource_version
    result = bridge.reconcile(("", "slurm-bridge"))
    assert result.requeue_after == bridge.poll_interval
    assert store.list(PODS).resource_version == before  # no pod deleted because squeue failed
    assert group_condition(store, "train")["reason"] == Reason.ALLOCATED  # running groups keep theirs


def test_an_unreachable_controller_shows_on_waiting_groups(
    store: MemoryStore, scripted: ScriptedSlurm, bridge: SlurmBridge
) -> None:
    scripted.down = True
    create_group(store, "train", 2)
    wait_until(lambda: caught_up(bridge, store), 5, "informer caches")
    bridge.reconcile(("", "slurm-bridge"))
    condition = group_condition(store, "train")
    assert (condition["status"], condition["reason"]) == ("False", Reason.SLURM_UNREACHABLE)
    assert "Unable to contact slurm controller" in condition["message"]
    scripted.down = False
    settle(bridge, store)
    assert group_condition(store, "train")["reason"] == Reason.ALLOCATED


def test_a_lost_annotation_is_repaired_from_the_job_comment(
    store: MemoryStore, scripted: ScriptedSlurm, bridge: SlurmBridge
) -> None:
    create_group(store, "train", 2)
    settle(bridge, store)
    group = store.get(COSCHEDULING_PODGROUPS, "ns", "train")
    del group["metadata"]["annotations"][POD_GROUP_JOB_ANNOTATION]
    store.update(COSCHEDULING_PODGROUPS, group)
    settle(bridge, store, cycles=1)
    assert len(scripted.specs) == 1
    assert (
        store.get(COSCHEDULING_PODGROUPS, "ns", "train")["metadata"]["annotations"][POD_GROUP_JOB_ANNOTATION]
        == "1"
    )


def test_an_ended_job_fails_its_pods_and_holds_them_until_their_owner_could_count_them(
    store: MemoryStore, scripted: ScriptedSlurm, bridge: SlurmBridge
) -> None:
    create_group(store, "train", 2)
    settle(bridge, store)
    scripted.submitted[1] = replace(scripted.submitted[1], state="TIMEOUT", reason="TimeLimit")
    bridge.run_once()
    message = "Slurm job 1 ended: TIMEOUT, reason TimeLimit; pod deleted"
    for pod in store.list(PODS).items:
        assert pod["metadata"]["deletionTimestamp"] and pod["metadata"]["finalizers"] == [POD_FINALIZER]
        status = pod["status"]
        assert (status["phase"], status["reason"], status["message"]) == ("Failed", "SlurmJobEnded", message)
        (disruption,) = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
        assert (disruption["status"], disruption["reason"], disruption["message"]) == (
            "True",
            "SlurmJobEnded",
            message,
        )
    settle(bridge, store, 2)
    assert len(store.list(PODS).items) == 2  # still held: the Job controller may not have seen them yet
    assert isinstance(bridge.clock, ManualClock)
    bridge.clock.advance(RELEASE_AFTER)
    settle(bridge, store, 1)
    assert store.list(PODS).items == []


def test_cancel_rereads_the_job_and_leaves_a_foreign_or_reused_id_alone(
    bridge: SlurmBridge, scripted: ScriptedSlurm
) -> None:
    ours = job_comment("ns", "train", "uid-train")
    scripted.submitted[1] = SlurmJob(1, "x", "RUNNING", comment="someone else's", user=bridge.user)
    scripted.submitted[2] = SlurmJob(2, "y", "RUNNING", comment=ours, user="mallory")
    scripted.submitted[3] = SlurmJob(3, "z", "RUNNING", comment=ours, user=bridge.user)
    for job_id in (1, 2, 3, 4):  # 4: Slurm forgot it
        bridge._cancel(job_id, Reason.PODS_FINISHED, "test")
    assert [scripted.submitted[i].state for i in (1, 2, 3)] == ["RUNNING", "RUNNING", "CANCELLED"]


class _AgentFirst(MemoryStore):
    """The node agent writes a bound pod's status once, just before the bridge's ``PodScheduled`` write."""

    def __init__(self) -> None:
        super().__init__()
        self.raced: set[str] = set()

    def update_status(self, rt: Any, obj: Any, **kw: Any) -> Any:
        name = obj["metadata"]["name"]
        scheduled = any(
            c["type"] == "PodScheduled" and c["status"] == "True"
            for c in (obj.get("status") or {}).get("conditions") or []
        )
        if rt == PODS and scheduled and name not in self.raced:
            self.raced.add(name)
            fresh = self.get(PODS, "ns", name)
            super().update_status(
                PODS, {**fresh, "status": {**(fresh.get("status") or {}), "hostIP": "10.0.0.1"}}
            )
        return super().update_status(rt, obj, **kw)


def test_a_bound_pods_scheduled_condition_is_written_despite_the_agents_status_write(
    scripted: ScriptedSlurm,
) -> None:
    """The bind's condition write loses to the agent's: it is redone on a fresh read, since no later cycle binds
    the pod (or writes its condition) again."""
    store = _AgentFirst()
    for obj in slurm_node_objects(slurm_nodes()):
        store.create(NODES, obj)
    bridge = build_slurm_bridge(store, ManualClock(), scripted)
    bridge.manager.start_informers()
    try:
        create_group(store, "train", 2)
        settle(bridge, store)
    finally:
        bridge.stop()
        bridge.manager.stop()
    assert store.raced == {"train-0", "train-1"}
    for i in range(2):
        status = store.get(PODS, "ns", f"train-{i}")["status"]
        assert status["hostIP"] == "10.0.0.1"
        assert [c["status"] for c in status.get("conditions") or [] if c["type"] == "PodScheduled"] == [
            "True"
        ]
