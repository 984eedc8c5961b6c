"""Slurm Bridge for the embedded cluster: coscheduling PodGroups scheduled by a real Slurm.

- ``cli``: what sbatch / squeue / scontrol / sinfo take and print (pure); ``commands``: runs them (I/O);
- ``spec``, ``bridge``: the pure core (job sizing, fit check, decisions);
- ``views``: store dicts as the core's views; ``shell``: the ``slurm-bridge-scheduler`` loop.
A local Slurm for tests and CI: scripts/slurm/ (docs/slurm.md).
"""

from gangplane.schedulers.slurm.bridge import decide
from gangplane.schedulers.slurm.cli import (
    CommandResult,
    JobSpec,
    Runner,
    SlurmError,
    SlurmJob,
    SlurmNode,
    SubmitRejected,
)
from gangplane.schedulers.slurm.commands import SlurmCli, SubprocessRunner
from gangplane.schedulers.slurm.model import (
    CONDITION_TYPE,
    JOB_COMMENT_PREFIX,
    POD_GROUP_JOB_ANNOTATION,
    Action,
    BridgeView,
    Reason,
)
from gangplane.schedulers.slurm.shell import SlurmBridge, build_slurm_bridge, slurm_node_objects

__all__ = [
    "CONDITION_TYPE",
    "JOB_COMMENT_PREFIX",
    "POD_GROUP_JOB_ANNOTATION",
    "Action",
    "BridgeView",
    "CommandResult",
    "JobSpec",
    "Reason",
    "Runner",
    "SlurmBridge",
    "SlurmCli",
    "SlurmError",
    "SlurmJob",
    "SlurmNode",
    "SubmitRejected",
    "SubprocessRunner",
    "build_slurm_bridge",
    "decide",
    "slurm_node_objects",
]
