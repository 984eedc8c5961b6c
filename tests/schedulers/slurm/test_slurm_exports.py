"""The public surface of gangplane.schedulers.slurm, pinned."""

import gangplane.schedulers.slurm as package


def test_exported_members() -> None:
    assert sorted(package.__all__) == [
        "Action",
        "BridgeView",
        "CONDITION_TYPE",
        "CommandResult",
        "JOB_COMMENT_PREFIX",
        "JobSpec",
        "POD_GROUP_JOB_ANNOTATION",
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
    assert all(hasattr(package, name) for name in package.__all__)
