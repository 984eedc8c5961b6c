"""Slinky slurm-bridge: scheduler name and the label/annotation keys it reads and writes.

slurm-bridge has no CRD of its own: a group of pods (a coscheduling PodGroup, else the top-level Job or
JobSet) becomes one Slurm *external job*, parameterised by annotations on that workload
(reference/slurm.md §A). Keys follow ``SlinkyProject/slurm-bridge`` ``6f700ba``.
"""

from __future__ import annotations

from enum import StrEnum

SCHEDULER_NAME = "slurm-bridge-scheduler"
DEFAULT_PARTITION = "slurm-bridge"  # Helm default when no partition annotation is set
DEFAULT_MANAGED_NAMESPACE = "slurm-bridge"

SLURM_JOB_ANNOTATION_PREFIX = "slurmjob.slinky.slurm.net/"


class SlurmJobAnnotation(StrEnum):
    """Annotations on the workload (JobSet/Job/LWS) or its coscheduling PodGroup, overriding derived values.

    Precedence: defaults < values derived from the pods < these annotations. Fixed once Slurm allocates.
    """

    ACCOUNT = "slurmjob.slinky.slurm.net/account"
    GROUP_ID = "slurmjob.slinky.slurm.net/group-id"
    USER_ID = "slurmjob.slinky.slurm.net/user-id"
    WCKEY = "slurmjob.slinky.slurm.net/wckey"
    CONSTRAINTS = "slurmjob.slinky.slurm.net/constraints"
    EXCLUSIVE = "slurmjob.slinky.slurm.net/exclusive"  # "false" shares nodes (1:1 pod:job only)
    LICENSES = "slurmjob.slinky.slurm.net/licenses"
    PARTITION = "slurmjob.slinky.slurm.net/partition"
    PRIORITY = "slurmjob.slinky.slurm.net/priority"
    QOS = "slurmjob.slinky.slurm.net/qos"
    RESERVATION = "slurmjob.slinky.slurm.net/reservation"
    CPU_PER_TASK = "slurmjob.slinky.slurm.net/cpu-per-task"
    GRES = "slurmjob.slinky.slurm.net/gres"
    MAX_NODES = "slurmjob.slinky.slurm.net/max-nodes"
    MIN_NODES = "slurmjob.slinky.slurm.net/min-nodes"
    MEM_PER_NODE = "slurmjob.slinky.slurm.net/mem-per-node"
    JOB_NAME = "slurmjob.slinky.slurm.net/job-name"
    TIME_LIMIT = "slurmjob.slinky.slurm.net/timelimit"  # minutes


# Written by slurm-bridge on pods (not user-settable).
SLURM_JOB_ID_LABEL = "scheduler.slinky.slurm.net/slurm-jobid"
SLURM_NODE_ANNOTATION = "slinky.slurm.net/slurm-node"
"""The Kubernetes node Slurm's allocation gives this pod; the Filter passes only that node."""
FINALIZER = "scheduler.slinky.slurm.net/finalizer"

# Node keys.
SLURM_NODE_NAME_LABEL = "slinky.slurm.net/slurm-nodename"  # when the Slurm node name differs from the K8s one
EXTERNAL_NODE_LABEL = "scheduler.slinky.slurm.net/external-node"
EXTERNAL_NODE_PARTITIONS_ANNOTATION = "scheduler.slinky.slurm.net/external-node-partitions"
MANAGED_NODE_TAINT = "slinky.slurm.net/managed-node"  # value = scheduler name, effect NoExecute
TOPOLOGY_SPEC_ANNOTATION = "topology.slinky.slurm.net/spec"
