"""Values the Slurm Bridge core decides over, and the actions it returns. Pure data, no I/O.

The shell (shell.py) builds a ``BridgeView`` from the store and Slurm each cycle; ``bridge.decide`` turns it
into ``Action`` values; the shell executes them. Keys gangplane adds to slurm-bridge's set (api/scheduling/slurm.py)
are defined here because api/ belongs to the lead: see ``POD_GROUP_JOB_ANNOTATION`` and ``JOB_COMMENT_PREFIX``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from gangplane.api.scheduling import slurm
from gangplane.schedulers.slurm.cli import JobSpec, SlurmJob, SlurmNode

POD_GROUP_JOB_ANNOTATION = slurm.SLURM_JOB_ID_LABEL
"""PodGroup annotation holding the id of the group's Slurm job, so a restarted bridge re-adopts it. Same key as
slurm-bridge's pod label (upstream keeps the id only on pods); pods get that label too when bound."""

JOB_COMMENT_PREFIX = "gangplane:"
"""Every hold job's ``--comment`` is ``gangplane:<namespace>/<podgroup>:<podgroup uid>``: it ties a job to its
group even when the annotation write was lost, and marks the jobs this bridge may cancel."""

CONDITION_TYPE = "SlurmJobAllocated"
"""PodGroup ``status.conditions`` entry: True once Slurm allocated the group's job and its pods are bound."""

POD_SCHEDULED = "PodScheduled"
DISRUPTION_TARGET = "DisruptionTarget"  # set on a pod just before the bridge deletes it (Kubernetes' type)
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})

POD_FINALIZER = slurm.FINALIZER
"""Put on a pod just before the bridge deletes it for an ended Slurm job, and dropped ``RELEASE_AFTER`` seconds
after its ``DisruptionTarget`` once the pod is terminal: the pod stays visible as ``Failed`` long enough for
its Job to count the failure (and apply ``podFailurePolicy``). A Job's own pods also carry the Job
controller's ``batch.kubernetes.io/job-tracking`` finalizer, which alone keeps the failure counted; this hold
stays because upstream slurm-bridge holds the same finalizer on the pods it schedules until they end, and it
also covers pods that no Job tracks."""

RELEASE_AFTER = 2.0
"""Seconds; condition times have second precision, so the pod stays at least one second."""

# Slurm base states. A job in none of these sets (CONFIGURING, SUSPENDED, ...) is active but not usable.
PENDING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
RUNNING_STATES = frozenset({"RUNNING"})
# Slurm 22.05 reports an ending job as COMPLETING, hiding why it ends (23.02+ lists the base state first).
# The bridge waits for the final state (usually < 1 s) so the pods' deletion reason says CANCELLED / TIMEOUT.
ENDING_STATES = frozenset({"COMPLETING"})
ENDED_STATES = frozenset(
    {
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
        "REVOKED",
        "SPECIAL_EXIT",
    }
)


class Reason(StrEnum):
    """``reason`` of the PodGroup condition and of the pods' PodScheduled / DisruptionTarget conditions."""

    WAITING_FOR_PODS = "WaitingForPods"
    UNSCHEDULABLE = "Unschedulable"  # the request can never fit the partition
    SUBMIT_REJECTED = "SlurmRejected"
    JOB_PENDING = "SlurmJobPending"
    ALLOCATED = "SlurmJobAllocated"
    NODE_NOT_MAPPED = "SlurmNodeNotMapped"
    JOB_ENDED = "SlurmJobEnded"
    PODS_FINISHED = "PodsFinished"
    GROUP_SHRANK = "GroupShrank"
    POD_GROUP_DELETED = "PodGroupDeleted"
    DUPLICATE_JOB = "DuplicateSlurmJob"
    FOREIGN_JOB = "ForeignSlurmJob"  # the job named on the PodGroup is not this bridge's job for it
    SLURM_UNREACHABLE = "SlurmUnreachable"  # squeue failed: nothing is decided until Slurm answers again
    NO_POD_GROUP = "NoPodGroup"


def job_comment(namespace: str, name: str, uid: str) -> str:
    return f"{JOB_COMMENT_PREFIX}{namespace}/{name}:{uid}"


def owns(job: SlurmJob, group_uid: str | None, user: str) -> bool:
    """Is ``job`` this bridge's job (its comment marker, its user) — for PodGroup ``group_uid`` if given?"""
    owner = parse_job_comment(job.comment)
    mine = owner is not None and (group_uid is None or owner[2] == group_uid)
    return mine and (not user or not job.user or job.user == user)


def parse_job_comment(comment: str) -> tuple[str, str, str] | None:
    """``(namespace, name, uid)`` of a gangplane hold job's comment, None for anybody else's job."""
    if not comment.startswith(JOB_COMMENT_PREFIX):
        return None
    key, _, uid = comment[len(JOB_COMMENT_PREFIX) :].rpartition(":")
    namespace, _, name = key.partition("/")
    return (namespace, name, uid) if namespace and name and uid else None


@dataclass(frozen=True, slots=True)
class Ref:
    """A namespaced object by name and uid."""

    namespace: str
    name: str
    uid: str = ""

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ConditionView:
    status: str  # True | False
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class PodView:
    ref: Ref
    phase: str = "Pending"
    node_name: str = ""
    terminating: bool = False
    cpu_millis: int = 0
    memory_bytes: int = 0
    gpus: int = 0
    job_id: int | None = None  # the slurm-jobid label, set when the bridge bound it
    scheduled: ConditionView | None = None  # current PodScheduled condition
    held: bool = False  # carries the bridge's finalizer (pods it failed because their Slurm job ended)
    disrupted_at: float | None = None  # when the bridge set DisruptionTarget (its lastTransitionTime)

    @property
    def live(self) -> bool:
        return self.phase not in TERMINAL_PHASES

    @property
    def pending(self) -> bool:
        """Waiting for a node: the only pods a job is submitted for or bound."""
        return self.live and not self.node_name and not self.terminating


@dataclass(frozen=True, slots=True)
class GroupView:
    ref: Ref
    min_member: int
    pods: tuple[PodView, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    job_id: int | None = None  # POD_GROUP_JOB_ANNOTATION
    condition: ConditionView | None = None
    deleting: bool = False


@dataclass(frozen=True, slots=True)
class Rejection:
    """sbatch refused ``spec`` for a group: do not resubmit the same request every cycle."""

    spec: JobSpec
    message: str


@dataclass(frozen=True, slots=True)
class BridgeView:
    groups: tuple[GroupView, ...] = ()
    loose_pods: tuple[PodView, ...] = ()  # managed pods whose PodGroup does not exist
    jobs: tuple[SlurmJob, ...] = ()  # everything squeue lists
    slurm_nodes: tuple[SlurmNode, ...] = ()
    node_names: Mapping[str, str] = field(default_factory=dict)  # Slurm node name -> gangplane Node name
    rejections: Mapping[str, Rejection] = field(default_factory=dict)  # by PodGroup uid
    default_partition: str = slurm.DEFAULT_PARTITION
    now: float = 0.0  # the injected clock, for RELEASE_AFTER
    user: str = ""  # the user the bridge submits as; jobs of other users are never touched ("" = unknown)


@dataclass(frozen=True, slots=True)
class Submit:
    group: Ref
    spec: JobSpec


@dataclass(frozen=True, slots=True)
class RecordJob:
    group: Ref
    job_id: int


@dataclass(frozen=True, slots=True)
class ForgetJob:
    group: Ref
    job_id: int


@dataclass(frozen=True, slots=True)
class Bind:
    pod: Ref
    node: str  # gangplane Node name
    slurm_node: str
    job_id: int


@dataclass(frozen=True, slots=True)
class DeletePods:
    pods: tuple[Ref, ...]
    reason: Reason
    message: str


@dataclass(frozen=True, slots=True)
class Cancel:
    job_id: int
    reason: Reason
    message: str


@dataclass(frozen=True, slots=True)
class Release:
    """Drop the bridge's finalizer from a pod it failed: its owner has had time to count the failure."""

    pod: Ref


@dataclass(frozen=True, slots=True)
class SetGroupCondition:
    group: Ref
    condition: ConditionView


@dataclass(frozen=True, slots=True)
class MarkUnschedulable:
    pods: tuple[Ref, ...]
    reason: Reason
    message: str


Action = (
    Submit
    | RecordJob
    | ForgetJob
    | Bind
    | DeletePods
    | Release
    | Cancel
    | SetGroupCondition
    | MarkUnschedulable
)
