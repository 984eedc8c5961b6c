"""Defaulting: CRD defaults are assigned (and so serialised), and runtimePatches times follow the webhook."""

from __future__ import annotations

from typing import Any

import pytest

from builders import RuntimeBuilder, TrainJobBuilder, patch_rjob
from gangplane.api.core import Pod
from gangplane.api.defaults import default_object, default_runtime, default_trainjob
from gangplane.clock import ManualClock, rfc3339

T_OLD = "2025-12-31T00:00:00Z"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def test_trainjob_crd_defaults_are_serialised(clock: ManualClock) -> None:
    job = TrainJobBuilder().obj()
    default_trainjob(job, clock)
    spec = job.to_dict()["spec"]
    assert spec["runtimeRef"] == {
        "name": "torch-distributed",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    assert spec["suspend"] is False
    assert spec["managedBy"] == "trainer.kubeflow.org/trainjob-controller"


def test_trainjob_defaults_keep_given_values(clock: ManualClock) -> None:
    builder = TrainJobBuilder().runtime_ref("r", kind="TrainingRuntime", api_group="x.io").suspend()
    job = builder.managed_by("kueue.x-k8s.io/multikueue").obj()
    default_trainjob(job, clock)
    spec = job.to_dict()["spec"]
    assert spec["runtimeRef"] == {"name": "r", "kind": "TrainingRuntime", "apiGroup": "x.io"}
    assert (spec["suspend"], spec["managedBy"]) == (True, "kueue.x-k8s.io/multikueue")


def test_image_pull_secret_name_defaults_to_empty(clock: ManualClock) -> None:
    job = TrainJobBuilder().patch("a.io/x", patch_rjob(imagePullSecrets=[{}, {"name": "s"}])).obj()
    default_trainjob(job, clock)
    pod = job.to_dict()["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]
    assert pod["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["imagePullSecrets"] == [
        {"name": ""},
        {"name": "s"},
    ]


def times(
    builder: TrainJobBuilder, clock: ManualClock, old: TrainJobBuilder | None = None
) -> list[str | None]:
    job = builder.obj()
    default_trainjob(job, clock, old.obj() if old else None)
    return [p.time for p in job.spec.runtime_patches or []]


def test_patch_time_on_create(clock: ManualClock) -> None:
    builder = TrainJobBuilder().patch("a.io/x").patch("b.io/y", time=T_OLD)
    assert times(builder, clock) == [rfc3339(clock.now()), T_OLD]


SELECTOR_1, SELECTOR_2 = patch_rjob(nodeSelector={"a": "1"}), patch_rjob(nodeSelector={"a": "2"})


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(
            [("a.io/x", SELECTOR_1, T_OLD)], [("a.io/x", SELECTOR_1, None)], T_OLD, id="unchanged-keeps-old"
        ),
        pytest.param(
            [("a.io/x", SELECTOR_1, T_OLD)],
            [("a.io/x", SELECTOR_1, "2020-01-01T00:00:00Z")],
            T_OLD,
            id="unchanged-overrides-client-time",
        ),
        pytest.param(
            [("a.io/x", SELECTOR_1, T_OLD)], [("a.io/x", SELECTOR_2, None)], "now", id="changed-gets-now"
        ),
        pytest.param(
            [("a.io/x", SELECTOR_1, T_OLD)],
            [("a.io/x", SELECTOR_2, "2020-01-01T00:00:00Z")],
            "2020-01-01T00:00:00Z",
            id="changed-keeps-client-time",
        ),
        pytest.param(
            [("b.io/y", SELECTOR_1, T_OLD)], [("a.io/x", SELECTOR_1, None)], "now", id="new-manager-gets-now"
        ),
    ],
)
def test_patch_time_on_update(
    clock: ManualClock, old: list[tuple[str, Any, str]], new: list[tuple[str, Any, str | None]], expected: str
) -> None:
    clock.advance(3600)
    old_job, new_job = TrainJobBuilder(), TrainJobBuilder()
    for manager, rjob, time in old:
        old_job.patch(manager, rjob, time=time)
    for manager, rjob, time in new:
        new_job.patch(manager, rjob, time=time)
    want = rfc3339(clock.now()) if expected == "now" else expected
    assert times(new_job, clock, old_job) == [want]


def test_runtime_ml_policy_defaults() -> None:
    runtime = RuntimeBuilder().trainer_job().ml_policy(mpi={}).obj()
    default_runtime(runtime)
    assert runtime.to_dict()["spec"]["mlPolicy"]["mpi"] == {
        "numProcPerNode": 1,
        "mpiImplementation": "OpenMPI",
        "sshAuthMountPath": "/root/.ssh",
        "runLauncherAsNode": False,
    }
    flux = RuntimeBuilder().trainer_job().ml_policy(flux={}, numNodes=3).obj()
    default_runtime(flux)
    assert flux.to_dict()["spec"]["mlPolicy"] == {"numNodes": 3, "flux": {"numProcPerNode": 1}}


def test_runtime_ml_policy_defaults_keep_given_values() -> None:
    given = {
        "numProcPerNode": 4,
        "mpiImplementation": "",
        "sshAuthMountPath": "/s",
        "runLauncherAsNode": True,
    }
    runtime = RuntimeBuilder().trainer_job().ml_policy(mpi=dict(given)).obj()
    default_runtime(runtime)
    assert runtime.to_dict()["spec"]["mlPolicy"]["mpi"] == given


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        pytest.param(
            RuntimeBuilder().coscheduling(), {"coscheduling": {"scheduleTimeoutSeconds": 60}}, id="cosched"
        ),
        pytest.param(
            RuntimeBuilder().coscheduling(5),
            {"coscheduling": {"scheduleTimeoutSeconds": 5}},
            id="cosched-set",
        ),
        pytest.param(RuntimeBuilder().volcano(), {"volcano": {}}, id="volcano-without-topology"),
        pytest.param(
            RuntimeBuilder().volcano(mode="soft"),
            {"volcano": {"networkTopology": {"mode": "soft", "highestTierAllowed": 1}}},
            id="volcano-topology",
        ),
    ],
)
def test_pod_group_policy_defaults(builder: RuntimeBuilder, expected: dict[str, Any]) -> None:
    runtime = builder.trainer_job().obj()
    default_runtime(runtime)
    assert runtime.to_dict()["spec"]["podGroupPolicy"] == expected


def test_jobset_defaults_are_only_the_crd_ones() -> None:
    builder = RuntimeBuilder().trainer_job().rjob("w", "c", replicas=3, groupName="g")
    builder.jobset(
        failurePolicy={"maxRestarts": 1}, volumeClaimPolicies=[{"retentionPolicy": {}, "templates": []}]
    )
    runtime = builder.obj()
    default_runtime(runtime)
    spec = runtime.to_dict()["spec"]["template"]["spec"]
    assert [(r["replicas"], r["groupName"]) for r in spec["replicatedJobs"]] == [(1, "default"), (3, "g")]
    assert spec["failurePolicy"] == {"maxRestarts": 1, "restartStrategy": "Recreate"}
    assert spec["volumeClaimPolicies"][0]["retentionPolicy"] == {"whenDeleted": "Delete"}
    assert "completionMode" not in str(spec) and "network" not in spec


def test_default_object_dispatches_and_is_idempotent(clock: ManualClock) -> None:
    job, runtime = (
        TrainJobBuilder().patch("a.io/x").obj(),
        RuntimeBuilder().trainer_job().coscheduling().obj(),
    )
    for obj in (job, runtime):
        default_object(obj, clock)
        once = obj.to_dict()
        clock.advance(10)
        default_object(obj, clock, obj.copy_deep())
        assert obj.to_dict() == once
    pod = Pod.model_validate({"metadata": {"name": "p"}})
    default_object(pod, clock)
    assert pod.to_dict() == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
