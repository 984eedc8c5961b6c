"""The Slurm Bridge decision core: submit, wait, bind, delete, cancel, and the reasons it gives."""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from hypothesis import given
from hypothesis import strategies as st
from slurm_builders import GIB, group, job, pod, pods, slurm_nodes, view

from gangplane.api.scheduling.slurm import SlurmJobAnnotation as A
from gangplane.schedulers.slurm.bridge import decide
from gangplane.schedulers.slurm.cli import JobSpec
from gangplane.schedulers.slurm.model import (
    Bind,
    Cancel,
    ConditionView,
    DeletePods,
    ForgetJob,
    MarkUnschedulable,
    Reason,
    RecordJob,
    Ref,
    Rejection,
    SetGroupCondition,
    Submit,
)

T = TypeVar("T")


def kinds(actions: list[object]) -> list[str]:
    return [type(a).__name__ for a in actions]


def only(actions: list[object], kind: type[T]) -> list[T]:
    return [a for a in actions if isinstance(a, kind)]


def group_condition(actions: list[object]) -> ConditionView:
    (found,) = only(actions, SetGroupCondition)
    return found.condition


# -- before a job exists ------------------------------------------------------------------------------------


def test_a_full_group_is_submitted_as_one_exclusive_job_sized_from_its_pods() -> None:
    members = (*pods(2), pod("train-2", cpu_millis=3200, memory_bytes=3 * GIB + 1, gpus=2))
    (submit,) = decide(view(group("train", members)))
    assert isinstance(submit, Submit) and submit.group == Ref("ns", "train", "uid-train")
    assert submit.spec == JobSpec(
        name="ns/train",
        comment="gangplane:ns/train:uid-train",
        min_nodes=3,
        max_nodes=3,
        cpus_per_task=4,  # max over pods, rounded up to whole CPUs
        mem_per_node_mb=3073,  # max over pods, rounded up to MB
        gres="gpu:2",
        partition="slurm-bridge",
    )


def test_min_member_below_the_pod_count_gives_a_node_range() -> None:
    (submit,) = decide(view(group("train", pods(3), min_member=2)))
    assert isinstance(submit, Submit) and (submit.spec.min_nodes, submit.spec.max_nodes) == (2, 3)


def test_annotations_override_what_the_pods_say() -> None:
    annotations = {
        A.PARTITION: "slurm-bridge",
        A.ACCOUNT: "ml",
        A.QOS: "high",
        A.TIME_LIMIT: "1h30m",
        A.JOB_NAME: "bert",
        A.EXCLUSIVE: "false",
        A.CPU_PER_TASK: "2",
        A.MEM_PER_NODE: "2Gi",
        A.GRES: "gpu:1",
        A.MAX_NODES: "4",
        A.PRIORITY: "10",
    }
    (submit,) = decide(view(group("train", pods(3), annotations=annotations)))
    assert isinstance(submit, Submit)
    spec = submit.spec
    assert (spec.account, spec.qos, spec.time_limit, spec.name, spec.exclusive) == (
        "ml",
        "high",
        "90",
        "bert",
        False,
    )
    assert (spec.cpus_per_task, spec.mem_per_node_mb, spec.gres, spec.max_nodes, spec.priority) == (
        2,
        2048,
        "gpu:1",
        4,
        10,
    )


def test_a_group_short_of_min_member_waits_and_says_so() -> None:
    actions = decide(view(group("train", pods(2), min_member=3)))
    assert kinds(actions) == ["SetGroupCondition", "MarkUnschedulable"]
    condition = group_condition(actions)
    assert condition == ConditionView(
        "False", Reason.WAITING_FOR_PODS, "2 of minMember 3 pods are waiting; Slurm job not submitted yet"
    )


def test_a_group_larger_than_the_partition_is_never_submitted() -> None:
    actions = decide(view(group("train", pods(5))))
    assert not only(actions, Submit)
    assert group_condition(actions) == ConditionView(
        "False", Reason.UNSCHEDULABLE, "requested 5 nodes; partition slurm-bridge has 4"
    )
    (marked,) = only(actions, MarkUnschedulable)
    assert len(marked.pods) == 5 and marked.message == "requested 5 nodes; partition slurm-bridge has 4"


def test_per_node_requests_beyond_every_node_are_unschedulable() -> None:
    actions = decide(view(group("train", pods(2, cpu_millis=6000, gpus=3))))
    assert group_condition(actions).message == (
        "requested 2 nodes with 6 CPUs, 1024 MB memory, 3 GPUs each; only 0 of partition slurm-bridge's 4 nodes "
        "have that much"
    )


def test_an_unknown_partition_is_named() -> None:
    actions = decide(view(group("train", pods(2), annotations={A.PARTITION: "debug"})))
    assert group_condition(actions).message == "partition debug does not exist (Slurm has: slurm-bridge)"


def test_without_node_information_the_job_is_left_to_slurm() -> None:
    assert kinds(decide(view(group("train", pods(5)), slurm_nodes=()))) == ["Submit"]


def test_a_rejected_request_is_reported_not_resubmitted_until_it_changes() -> None:
    g = group("train", pods(2))
    (submit,) = decide(view(g))
    assert isinstance(submit, Submit)
    rejected = {"uid-train": Rejection(submit.spec, "Requested node configuration is not available")}
    actions = decide(view(g, rejections=rejected))
    assert group_condition(actions) == ConditionView(
        "False",
        Reason.SUBMIT_REJECTED,
        "Slurm rejected the job: Requested node configuration is not available",
    )
    grown = group("train", pods(3))
    assert kinds(decide(view(grown, rejections=rejected))) == ["Submit"]


def test_finished_groups_without_pending_pods_produce_nothing() -> None:
    done = group("train", pods(3, phase="Succeeded", node="node-1"))
    assert decide(view(done)) == []


# -- while the job pends ------------------------------------------------------------------------------------


def test_a_pending_job_reports_slurms_reason_once() -> None:
    g = group("train", pods(3), job=7)
    actions = decide(view(g, jobs=(job(7, state="PENDING", reason="Resources"),)))
    condition = group_condition(actions)
    assert condition == ConditionView("False", Reason.JOB_PENDING, "Slurm job 7 is pending (Resources)")
    settled_pods = tuple(replace(p, scheduled=condition) for p in g.pods)
    settled = replace(g, pods=settled_pods, condition=condition)
    assert decide(view(settled, jobs=(job(7, state="PENDING", reason="Resources"),))) == []


def test_a_pending_job_whose_group_shrank_below_min_member_is_cancelled() -> None:
    g = group("train", pods(2), min_member=3, job=7)
    actions = decide(view(g, jobs=(job(7, state="PENDING"),)))
    (cancel,) = only(actions, Cancel)
    assert (cancel.job_id, cancel.reason) == (7, Reason.GROUP_SHRANK)


# -- once Slurm allocates -----------------------------------------------------------------------------------


def test_an_allocated_job_binds_each_pod_to_its_own_mapped_node() -> None:
    g = group("train", pods(3), job=7)
    actions = decide(view(g, jobs=(job(7, nodes=("n2", "n3", "n4")),)))
    binds = only(actions, Bind)
    assert [(b.pod.name, b.node, b.slurm_node, b.job_id) for b in binds] == [
        ("train-0", "node-2", "n2", 7),
        ("train-1", "node-3", "n3", 7),
        ("train-2", "node-4", "n4", 7),
    ]
    assert group_condition(actions) == ConditionView(
        "True", Reason.ALLOCATED, "Slurm job 7 allocated n2,n3,n4"
    )


def test_an_unmapped_slurm_node_blocks_the_whole_gang() -> None:
    g = group("train", pods(2), job=7)
    actions = decide(view(g, jobs=(job(7, nodes=("n1", "n9")),)))
    assert not only(actions, Bind)
    assert group_condition(actions).reason == Reason.NODE_NOT_MAPPED
    assert "n9 match no Node" in group_condition(actions).message


def test_a_replacement_pod_gets_the_allocated_node_nobody_uses() -> None:
    members = (pod("train-0", node="node-1", job=7), pod("train-1"), pod("train-2", node="node-3", job=7))
    actions = decide(view(group("train", members, job=7), jobs=(job(7, nodes=("n1", "n2", "n3")),)))
    assert [(b.pod.name, b.node) for b in only(actions, Bind)] == [("train-1", "node-2")]


def test_pods_beyond_a_partial_allocation_wait() -> None:
    g = group("train", pods(3), min_member=2, job=7)
    actions = decide(view(g, jobs=(job(7, nodes=("n1", "n2")),)))
    assert len(only(actions, Bind)) == 2
    (marked,) = only(actions, MarkUnschedulable)
    assert [r.name for r in marked.pods] == ["train-2"]


def test_a_job_found_by_its_comment_is_adopted_not_resubmitted() -> None:
    g = group("train", pods(2))
    actions = decide(view(g, jobs=(job(7, nodes=("n1", "n2")),)))
    assert kinds(actions)[:3] == ["RecordJob", "Bind", "Bind"]
    assert only(actions, RecordJob) == [RecordJob(Ref("ns", "train", "uid-train"), 7)]


def test_a_second_live_job_for_one_group_is_cancelled() -> None:
    g = group("train", pods(2), job=7)
    actions = decide(view(g, jobs=(job(7, nodes=("n1", "n2")), job(9, state="PENDING"))))
    assert [(c.job_id, c.reason) for c in only(actions, Cancel)] == [(9, Reason.DUPLICATE_JOB)]


# -- when the job or the pods end ---------------------------------------------------------------------------


def test_a_job_ended_by_slurm_deletes_its_running_pods_and_is_forgotten() -> None:
    members = tuple(pod(f"train-{i}", node=f"node-{i + 1}", job=7, phase="Running") for i in range(3))
    actions = decide(
        view(group("train", members, job=7), jobs=(job(7, state="TIMEOUT", reason="TimeLimit"),))
    )
    (delete,) = only(actions, DeletePods)
    assert [r.name for r in delete.pods] == ["train-0", "train-1", "train-2"]
    assert delete.message == "Slurm job 7 ended: TIMEOUT, reason TimeLimit; pod deleted"
    assert only(actions, ForgetJob) == [ForgetJob(Ref("ns", "train", "uid-train"), 7)]
    assert group_condition(actions).reason == Reason.JOB_ENDED
    # the condition before the job id is forgotten: a lost condition write is redone by the next cycle,
    # which would no longer know the job once its id is gone (a flake in the scancel e2e test)
    assert kinds(actions)[-2:] == ["SetGroupCondition", "ForgetJob"]


def test_a_completing_job_is_left_to_finish_so_the_final_state_names_the_cause() -> None:
    members = tuple(pod(f"train-{i}", node=f"node-{i + 1}", job=7, phase="Running") for i in range(2))
    actions = decide(view(group("train", members, job=7), jobs=(job(7, state="COMPLETING"),)))
    assert not only(actions, DeletePods) and not only(actions, Cancel) and not only(actions, ForgetJob)
    finished = tuple(replace(p, phase="Succeeded") for p in members)
    assert not only(decide(view(group("train", finished, job=7), jobs=(job(7, state="COMPLETING"),))), Cancel)


def test_a_job_slurm_forgot_counts_as_ended() -> None:
    members = (pod("train-0", node="node-1", job=7, phase="Running"),)
    (delete,) = only(decide(view(group("train", members, job=7))), DeletePods)
    assert delete.message == "Slurm job 7 is gone (Slurm no longer lists it); pod deleted"


def test_pods_that_finished_or_are_terminating_are_not_deleted() -> None:
    members = (
        pod("train-0", node="node-1", job=7, phase="Succeeded"),
        pod("train-1", node="node-2", job=7, phase="Running", terminating=True),
    )
    assert not only(
        decide(view(group("train", members, job=7), jobs=(job(7, state="CANCELLED"),))), DeletePods
    )


def test_a_job_whose_pods_all_finished_is_cancelled() -> None:
    members = tuple(pod(f"train-{i}", node=f"node-{i + 1}", job=7, phase="Succeeded") for i in range(2))
    (cancel,) = only(decide(view(group("train", members, job=7), jobs=(job(7, nodes=("n1", "n2")),))), Cancel)
    assert (cancel.job_id, cancel.reason) == (7, Reason.PODS_FINISHED)


def test_jobs_of_deleted_or_deleting_groups_are_cancelled_and_foreign_jobs_left_alone() -> None:
    deleting = group("old", pods(1, prefix="old"), job=8, deleting=True)
    jobs = (
        job(7, owner="gone", nodes=("n1",)),
        job(8, owner="old", nodes=("n2",)),
        job(9, owner="", nodes=("n3",)),
    )
    cancels = only(decide(view(deleting, jobs=jobs)), Cancel)
    assert [(c.job_id, c.reason, c.message) for c in cancels] == [
        (7, Reason.POD_GROUP_DELETED, "PodGroup ns/gone is gone; Slurm job 7 cancelled"),
        (8, Reason.POD_GROUP_DELETED, "PodGroup ns/old is gone; Slurm job 8 cancelled"),
    ]


def test_pods_without_their_podgroup_are_told_why_they_wait() -> None:
    (marked,) = decide(view(loose_pods=(pod("lonely"),)))
    assert isinstance(marked, MarkUnschedulable) and marked.reason == Reason.NO_POD_GROUP


# -- invariants ---------------------------------------------------------------------------------------------


@given(
    allocated=st.lists(st.sampled_from([f"n{i}" for i in range(1, 5)]), min_size=1, max_size=4, unique=True),
    bound=st.lists(st.booleans(), min_size=1, max_size=4),
)
def test_binds_never_share_a_node_or_reuse_one_hosting_a_group_pod(
    allocated: list[str], bound: list[bool]
) -> None:
    members = tuple(
        pod(
            f"p-{i}",
            node=f"node-{allocated[i][1:]}" if is_bound and i < len(allocated) else "",
            job=7,
            phase="Running",
        )
        for i, is_bound in enumerate(bound)
    )
    g = group("train", members, min_member=1, job=7)
    binds = only(decide(view(g, jobs=(job(7, nodes=tuple(allocated)),), slurm_nodes=slurm_nodes())), Bind)
    targets = [b.node for b in binds]
    hosting = {p.node_name for p in members if p.node_name}
    assert len(targets) == len(set(targets))
    assert not hosting & set(targets)
    assert all(b.slurm_node in allocated for b in binds)


def test_min_nodes_below_the_gang_minimum_is_raised_to_it() -> None:
    # A 3-pod gang with min-nodes 2 must not start on 2 Slurm nodes and finish short of a member (issue #16).
    notes = {"slurmjob.slinky.slurm.net/min-nodes": "2"}
    (submit,) = decide(view(group("train", pods(3), annotations=notes)))
    assert isinstance(submit, Submit) and (submit.spec.min_nodes, submit.spec.max_nodes) == (3, 3)


# -- ownership: only this bridge's own jobs are ever used or cancelled (hardening, issue #13) ------------------


def test_a_job_id_written_on_the_group_by_someone_else_is_ignored_with_a_condition() -> None:
    # Job 9 is somebody's (no gangplane comment): never bound to, never cancelled; the annotation goes.
    actions = decide(view(group("train", pods(2), job=9), jobs=(job(9, owner="", nodes=("n1", "n2")),)))
    assert kinds(actions) == ["SetGroupCondition", "ForgetJob"]  # the condition first: see _foreign
    (condition,) = only(actions, SetGroupCondition)
    assert condition.condition.reason == Reason.FOREIGN_JOB
    assert "Slurm job 9 named on PodGroup ns/train was not submitted by gangplane for it" in (
        condition.condition.message
    )


def test_a_job_of_another_group_or_another_user_is_not_ours() -> None:
    other_group = job(5, owner="other", nodes=("n1", "n2"))
    other_user = job(6, owner="train", nodes=("n1", "n2"), user="mallory")
    for foreign in (other_group, other_user):
        actions = decide(view(group("train", pods(2), job=foreign.job_id), jobs=(foreign,), user="bridge"))
        assert only(actions, Bind) == []
        assert only(actions, ForgetJob) == [ForgetJob(Ref("ns", "train", "uid-train"), foreign.job_id)]
    # job 5 is ours, for a group that is gone: cancelled; job 6 is another user's: left alone
    assert [c.job_id for c in only(decide(view(jobs=(other_group, other_user), user="bridge")), Cancel)] == [
        5
    ]
    orphan = job(7, owner="gone", nodes=("n1",), user="mallory")
    assert only(decide(view(jobs=(orphan,), user="bridge")), Cancel) == []
