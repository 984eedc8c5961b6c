"""Admission validation: one valid and one invalid case per rule, exact path, cause type and message."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import RuntimeBuilder, TrainJobBuilder, patch_rjob
from gangplane.api.defaults import default_object
from gangplane.api.serde import load_paths, to_model
from gangplane.api.validation import (
    Validation,
    validate_object,
    validate_runtime,
    validate_runtime_patches_mutability,
    validate_trainjob,
    validate_trainjob_update,
)
from gangplane.api.validation import runtime as rt
from gangplane.api.validation import trainjob as tj
from gangplane.clock import ManualClock
from gangplane.errors import CauseType as C

UPSTREAM_RUNTIMES = Path("/work/shared/upstream/runtimes")
Expected = list[tuple[str, C, str]]


def found(result: Validation) -> Expected:
    return [(e.path, e.type, e.detail) for e in result.errors]


def J() -> TrainJobBuilder:
    return TrainJobBuilder()


def R() -> RuntimeBuilder:
    return RuntimeBuilder().trainer_job()


UNSUPPORTED = "unsupported runtime: {}"
MIN0, MIN1 = "should be greater than or equal to 0", "should be greater than or equal to 1"
PATCH = "spec.runtimePatches[0]"
PATCH_POD = f"{PATCH}.trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
RJOBS = "spec.template.spec.replicatedJobs"
POD = "template.spec.template.spec"
DOMAIN_MSG = 'must be a domain-prefixed path (such as "acme.io/foo")'
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com')"
)


def env(n: int) -> list[dict[str, str]]:
    return [{"name": f"E{i}", "value": "v"} for i in range(n)]


TRAINJOB_CASES = [
    pytest.param(J(), [], id="minimal-ok"),
    pytest.param(J().set("metadata.name", "a" * 63), [], id="name-63-ok"),
    pytest.param(
        J().set("metadata.name", "1job"),
        [("metadata.name", C.INVALID, tj.NAME_FORMAT_MSG)],
        id="name-rfc1035",
    ),
    pytest.param(
        J().set("metadata.name", "job.x"), [("metadata.name", C.INVALID, tj.NAME_FORMAT_MSG)], id="name-dot"
    ),
    pytest.param(
        J().set("metadata.name", "a" * 64), [("metadata.name", C.INVALID, tj.NAME_LENGTH_MSG)], id="name-64"
    ),
    pytest.param(
        J().set("metadata", {}),
        [("metadata.name", C.REQUIRED, "name or generateName is required")],
        id="name-missing",
    ),
    pytest.param(J().runtime_ref("a" * 253), [], id="ref-name-253-ok"),
    pytest.param(
        J().runtime_ref("a" * 254),
        [("spec.runtimeRef.name", C.TOO_LONG, "may not be more than 253 bytes")],
        id="ref-name-254",
    ),
    pytest.param(
        J().runtime_ref(""),
        [("spec.runtimeRef.name", C.INVALID, "should be at least 1 chars long")],
        id="ref-name-empty",
    ),
    pytest.param(J().runtime_ref("r", kind="TrainingRuntime"), [], id="ref-kind-training-runtime-ok"),
    pytest.param(
        J().runtime_ref("r", kind="Foo"),
        [("spec.runtimeRef.kind", C.NOT_SUPPORTED, UNSUPPORTED.format("Foo.trainer.kubeflow.org"))],
        id="ref-kind-unsupported",
    ),
    pytest.param(
        J().runtime_ref("r", kind="K" * 254),
        [
            ("spec.runtimeRef.kind", C.TOO_LONG, "may not be more than 253 bytes"),
            (
                "spec.runtimeRef.kind",
                C.NOT_SUPPORTED,
                UNSUPPORTED.format("K" * 254 + ".trainer.kubeflow.org"),
            ),
        ],
        id="ref-kind-too-long",
    ),
    pytest.param(J().runtime_ref("r", api_group="trainer.kubeflow.org"), [], id="ref-group-ok"),
    pytest.param(
        J().runtime_ref("r", api_group="example.com"),
        [
            (
                "spec.runtimeRef.apiGroup",
                C.NOT_SUPPORTED,
                UNSUPPORTED.format("ClusterTrainingRuntime.example.com"),
            )
        ],
        id="ref-group-unsupported",
    ),
    pytest.param(
        J().runtime_ref("r", api_group="g" * 254),
        [
            ("spec.runtimeRef.apiGroup", C.TOO_LONG, "may not be more than 253 bytes"),
            (
                "spec.runtimeRef.apiGroup",
                C.NOT_SUPPORTED,
                UNSUPPORTED.format("ClusterTrainingRuntime." + "g" * 254),
            ),
        ],
        id="ref-group-too-long",
    ),
    pytest.param(J().initializer("dataset", storageUri="hf://tatsu-lab/alpaca"), [], id="storage-uri-ok"),
    pytest.param(J().initializer("model", storageUri=""), [], id="storage-uri-empty-ok"),
    pytest.param(
        J().initializer("dataset", storageUri="tatsu-lab/alpaca"),
        [("spec.initializer.dataset.storageUri", C.INVALID, tj.STORAGE_URI_MSG)],
        id="storage-uri-no-scheme",
    ),
    pytest.param(
        J().initializer("model", storageUri="s3://" + "a" * 2044),
        [("spec.initializer.model.storageUri", C.TOO_LONG, "may not be more than 2048 bytes")],
        id="storage-uri-too-long",
    ),
    pytest.param(J().initializer("model", env=env(128)), [], id="initializer-env-128-ok"),
    pytest.param(
        J().initializer("model", env=env(129)),
        [("spec.initializer.model.env", C.TOO_MANY, "must have at most 128 items")],
        id="initializer-env-129",
    ),
    pytest.param(
        J().initializer("dataset", env=[{"name": "A"}, {"name": "A"}]),
        [("spec.initializer.dataset.env[1]", C.DUPLICATE, "Duplicate value")],
        id="initializer-env-duplicate",
    ),
    pytest.param(J().trainer(env=env(128)), [], id="trainer-env-128-ok"),
    pytest.param(
        J().trainer(env=env(129)),
        [("spec.trainer.env", C.TOO_MANY, "must have at most 128 items")],
        id="trainer-env-129",
    ),
    pytest.param(
        J().env("A", "B", "A"),
        [("spec.trainer.env[2]", C.DUPLICATE, "Duplicate value")],
        id="trainer-env-duplicate",
    ),
    pytest.param(J().trainer(image="i" * 500), [], id="image-500-ok"),
    pytest.param(
        J().trainer(image="i" * 501),
        [("spec.trainer.image", C.TOO_LONG, "may not be more than 500 bytes")],
        id="image-501",
    ),
    pytest.param(J().trainer(command=["x"] * 128), [], id="command-128-ok"),
    pytest.param(
        J().trainer(command=["x"] * 129),
        [("spec.trainer.command", C.TOO_MANY, "must have at most 128 items")],
        id="command-129",
    ),
    pytest.param(
        J().trainer(args=["x"] * 129),
        [("spec.trainer.args", C.TOO_MANY, "must have at most 128 items")],
        id="args-129",
    ),
    pytest.param(J().num_nodes(0), [], id="num-nodes-0-ok"),
    pytest.param(J().num_nodes(-1), [("spec.trainer.numNodes", C.INVALID, MIN0)], id="num-nodes-negative"),
    pytest.param(J().trainer(numProcPerNode=1), [], id="num-proc-1-ok"),
    pytest.param(
        J().trainer(numProcPerNode=0),
        [("spec.trainer.numProcPerNode", C.INVALID, tj.NUM_PROC_MSG)],
        id="num-proc-0",
    ),
    pytest.param(J().deadline(1), [], id="deadline-1-ok"),
    pytest.param(J().deadline(0), [("spec.activeDeadlineSeconds", C.INVALID, MIN1)], id="deadline-0"),
    pytest.param(J().managed_by("kueue.x-k8s.io/multikueue"), [], id="managed-by-multikueue-ok"),
    pytest.param(
        J().managed_by("example.com/mine"),
        [("spec.managedBy", C.INVALID, tj.MANAGED_BY_MSG)],
        id="managed-by-other",
    ),
    pytest.param(J().patch("kueue.x-k8s.io/manager"), [], id="manager-kueue-ok"),
    pytest.param(J().patch("example.com/x"), [], id="manager-example-ok"),
    pytest.param(J().patch("manager"), [(f"{PATCH}.manager", C.INVALID, DOMAIN_MSG)], id="manager-no-domain"),
    pytest.param(
        J().patch("example.com/"), [(f"{PATCH}.manager", C.INVALID, DOMAIN_MSG)], id="manager-empty-path"
    ),
    pytest.param(
        J().patch(""),
        [(f"{PATCH}.manager", C.INVALID, "should be at least 1 chars long")],
        id="manager-empty",
    ),
    pytest.param(
        J().patch("Example.com/x"), [(f"{PATCH}.manager", C.INVALID, SUBDOMAIN_MSG)], id="manager-uppercase"
    ),
    pytest.param(
        J().patch("example.com/" + "a" * 242),
        [(f"{PATCH}.manager", C.TOO_LONG, "may not be more than 253 bytes")],
        id="manager-254",
    ),
    pytest.param(
        J().patch("a.io/x").patch("a.io/x"),
        [("spec.runtimePatches[1]", C.DUPLICATE, "Duplicate value")],
        id="manager-duplicate",
    ),
]


def patches(n: int) -> TrainJobBuilder:
    builder = J()
    for i in range(n):
        builder.patch(f"example.com/m{i}")
    return builder


def gates(n: int) -> list[dict[str, str]]:
    return [{"name": f"g{i}"} for i in range(n)]


PATCH_CASES = [
    pytest.param(patches(16), [], id="patches-16-ok"),
    pytest.param(
        patches(17), [("spec.runtimePatches", C.TOO_MANY, "must have at most 16 items")], id="patches-17"
    ),
    pytest.param(J().patch("a.io/x", time="2026-05-01T15:20:00Z"), [], id="time-ok"),
    pytest.param(
        J().patch("a.io/x", time="yesterday"),
        [(f"{PATCH}.time", C.INVALID, "must be an RFC 3339 date-time")],
        id="time-bad",
    ),
    pytest.param(
        J().patch("a.io/x", *[patch_rjob(f"j{i}") for i in range(100)]), [], id="patch-rjobs-100-ok"
    ),
    pytest.param(
        J().patch("a.io/x", *[patch_rjob(f"j{i}") for i in range(101)]),
        [
            (
                f"{PATCH}.trainingRuntimeSpec.template.spec.replicatedJobs",
                C.TOO_MANY,
                "must have at most 100 items",
            )
        ],
        id="patch-rjobs-101",
    ),
    pytest.param(
        J().patch("a.io/x", patch_rjob("node"), patch_rjob("node")),
        [(f"{PATCH}.trainingRuntimeSpec.template.spec.replicatedJobs[1]", C.DUPLICATE, "Duplicate value")],
        id="patch-rjobs-duplicate",
    ),
    pytest.param(
        J().patch("a.io/x", patch_rjob(tolerations=[{"key": "k"}] * 128)), [], id="tolerations-128-ok"
    ),
    pytest.param(
        J().patch("a.io/x", patch_rjob(tolerations=[{"key": "k"}] * 129)),
        [(f"{PATCH_POD}.tolerations", C.TOO_MANY, "must have at most 128 items")],
        id="tolerations-129",
    ),
    pytest.param(J().patch("a.io/x", patch_rjob(schedulingGates=gates(16))), [], id="gates-16-ok"),
    pytest.param(
        J().patch("a.io/x", patch_rjob(schedulingGates=gates(17))),
        [(f"{PATCH_POD}.schedulingGates", C.TOO_MANY, "must have at most 16 items")],
        id="gates-17",
    ),
    pytest.param(
        J().patch("a.io/x", patch_rjob(schedulingGates=gates(1) * 2)),
        [(f"{PATCH_POD}.schedulingGates[1]", C.DUPLICATE, "Duplicate value")],
        id="gates-duplicate",
    ),
    pytest.param(
        J().patch("a.io/x", patch_rjob(schedulingGates=[{}])),
        [(f"{PATCH_POD}.schedulingGates[0].name", C.REQUIRED, "Required value")],
        id="gate-without-name",
    ),
    pytest.param(J().patch("a.io/x", patch_rjob(terminationGracePeriodSeconds=0)), [], id="grace-0-ok"),
    pytest.param(
        J().patch("a.io/x", patch_rjob(terminationGracePeriodSeconds=-1)),
        [(f"{PATCH_POD}.terminationGracePeriodSeconds", C.INVALID, MIN0)],
        id="grace-negative",
    ),
    pytest.param(
        J().patch("a.io/x", patch_rjob(containers=[{"name": "node"}, {"name": "node"}])),
        [(f"{PATCH_POD}.containers[1]", C.DUPLICATE, "Duplicate value")],
        id="patch-containers-duplicate",
    ),
    pytest.param(
        J().patch("a.io/x", patch_rjob(volumes=[{"name": "v"}, {"name": "v"}])),
        [(f"{PATCH_POD}.volumes[1]", C.DUPLICATE, "Duplicate value")],
        id="patch-volumes-duplicate",
    ),
]


@pytest.mark.parametrize(("builder", "expected"), TRAINJOB_CASES + PATCH_CASES)
def test_trainjob_rule(builder: TrainJobBuilder, expected: Expected) -> None:
    assert found(validate_trainjob(builder.obj())) == expected


def test_trainjob_reports_every_error_at_once() -> None:
    job = J().set("metadata.name", "Bad").num_nodes(-1).deadline(0).managed_by("x").patch("nodomain").obj()
    errors = validate_trainjob(job).errors
    assert sorted((e.path, e.type) for e in errors) == [
        ("metadata.name", C.INVALID),
        ("spec.activeDeadlineSeconds", C.INVALID),
        ("spec.managedBy", C.INVALID),
        ("spec.runtimePatches[0].manager", C.INVALID),
        ("spec.trainer.numNodes", C.INVALID),
    ]


# ---------------------------------------------------------------- TrainJob updates

SA = "service-account"


def sa_patch(account: str, **pod: object) -> dict[str, object]:
    return patch_rjob("node", serviceAccountName=account, **pod)


UPDATE_CASES = [
    pytest.param(J(), J().suspend(True), [], id="suspend-is-mutable"),
    pytest.param(
        J(), J().runtime_ref("other"), [("spec.runtimeRef", C.INVALID, tj.IMMUTABLE_MSG)], id="runtime-ref"
    ),
    pytest.param(
        J().initializer("model", storageUri="hf://a"),
        J().initializer("model", storageUri="hf://b"),
        [("spec.initializer", C.INVALID, tj.IMMUTABLE_MSG)],
        id="initializer",
    ),
    pytest.param(
        J().num_nodes(1), J().num_nodes(2), [("spec.trainer", C.INVALID, tj.IMMUTABLE_MSG)], id="trainer"
    ),
    pytest.param(J(), J().num_nodes(2), [], id="trainer-added-cel-skips-absent-old"),
    pytest.param(
        J().deadline(5),
        J().deadline(6),
        [("spec.activeDeadlineSeconds", C.INVALID, tj.IMMUTABLE_MSG)],
        id="deadline",
    ),
    pytest.param(
        J().managed_by(tj.MANAGED_BY_VALUES[0]),
        J().managed_by(tj.MANAGED_BY_VALUES[1]),
        [("spec.managedBy", C.INVALID, tj.IMMUTABLE_MSG)],
        id="managed-by",
    ),
    pytest.param(
        J().suspend().patch("a.io/x", sa_patch("a")),
        J().suspend().patch("a.io/x", sa_patch("b")),
        [(f"{PATCH_POD}.serviceAccountName", C.INVALID, tj.IMMUTABLE_MSG)],
        id="patch-service-account",
    ),
    pytest.param(
        J().suspend().patch("a.io/x", patch_rjob(containers=[{"name": "node"}])),
        J().suspend().patch("a.io/x", patch_rjob(containers=[{"name": "node", "env": [{"name": "A"}]}])),
        [(f"{PATCH_POD}.containers", C.INVALID, tj.IMMUTABLE_MSG)],
        id="patch-containers",
    ),
    pytest.param(
        J().suspend().patch("a.io/x", patch_rjob(terminationGracePeriodSeconds=1)),
        J().suspend().patch("a.io/x", patch_rjob(terminationGracePeriodSeconds=2)),
        [(f"{PATCH_POD}.terminationGracePeriodSeconds", C.INVALID, tj.IMMUTABLE_MSG)],
        id="patch-grace-period",
    ),
    pytest.param(
        J().suspend().patch("a.io/x", patch_rjob(nodeSelector={"a": "1"})),
        J().suspend().patch("a.io/x", patch_rjob(nodeSelector={"a": "2"})),
        [],
        id="patch-node-selector-mutable",
    ),
    pytest.param(
        J().suspend().patch("a.io/x", sa_patch("a")),
        J().suspend().patch("b.io/y", sa_patch("b")),
        [],
        id="patch-other-manager-not-correlated",
    ),
    pytest.param(
        J().patch("a.io/x", patch_rjob(nodeSelector={"a": "1"})),
        J().patch("a.io/x", patch_rjob(nodeSelector={"a": "2"})),
        [("spec.runtimePatches", C.FORBIDDEN, tj.PATCHES_SUSPEND_MSG)],
        id="patches-change-while-running",
    ),
    pytest.param(
        J().suspend().patch("a.io/x", patch_rjob(nodeSelector={"a": "1"})),
        J().suspend(False).patch("a.io/x", patch_rjob(nodeSelector={"a": "2"})),
        [],
        id="patches-change-with-resume",
    ),
    pytest.param(
        J().patch("a.io/x"),
        J().suspend().patch("a.io/x").patch("b.io/y"),
        [],
        id="patches-change-with-suspend",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), UPDATE_CASES)
def test_trainjob_update_rule(old: TrainJobBuilder, new: TrainJobBuilder, expected: Expected) -> None:
    assert found(validate_trainjob_update(old.obj(), new.obj())) == expected


def test_patches_mutability_reports_each_active_job() -> None:
    old, new = J().suspend().obj(), J().suspend().patch("a.io/x").obj()
    errors = validate_runtime_patches_mutability(old, new, ["node", "launcher"])
    assert [(e.path, e.type, e.detail) for e in errors] == [
        ("spec.runtimePatches", C.FORBIDDEN, tj.PATCHES_ACTIVE_MSG.format("node")),
        ("spec.runtimePatches", C.FORBIDDEN, tj.PATCHES_ACTIVE_MSG.format("launcher")),
    ]
    assert validate_runtime_patches_mutability(new, new, ["node"]) == []
    assert found(validate_trainjob_update(old, new, active_jobs=["node"])) == [
        ("spec.runtimePatches", C.FORBIDDEN, tj.PATCHES_ACTIVE_MSG.format("node"))
    ]


# ---------------------------------------------------------------- runtimes


def cosched_with(scheduler: str | None) -> RuntimeBuilder:
    return RuntimeBuilder().coscheduling().rjob("node", "node", ancestor="trainer", scheduler=scheduler)


def volcano_with(scheduler: str | None) -> RuntimeBuilder:
    return RuntimeBuilder().volcano().rjob("node", "node", ancestor="trainer", scheduler=scheduler)


SCHED = f"{RJOBS}[0].{POD}.schedulerName"
TARGETS = "spec.mlPolicy.torch.envInjection.targets"


def targets(*entries: tuple[str, list[str]]) -> dict[str, object]:
    return {"envInjection": {"targets": [{"jobName": j, "containerNames": c} for j, c in entries]}}


RUNTIME_CASES = [
    pytest.param(R(), [], id="minimal-ok"),
    pytest.param(
        RuntimeBuilder("Bad_Name").trainer_job(), [("metadata.name", C.INVALID, SUBDOMAIN_MSG)], id="name-bad"
    ),
    pytest.param(R().ml_policy(torch={}), [], id="one-policy-ok"),
    pytest.param(
        R().ml_policy(torch={}, mpi={}), [("spec.mlPolicy", C.INVALID, rt.ONE_POLICY_MSG)], id="two-policies"
    ),
    pytest.param(R().ml_policy(numNodes=0), [], id="num-nodes-0-ok"),
    pytest.param(
        R().ml_policy(numNodes=-1), [("spec.mlPolicy.numNodes", C.INVALID, MIN0)], id="num-nodes-negative"
    ),
    pytest.param(R().ml_policy(mpi={"numProcPerNode": 1}), [], id="mpi-procs-1-ok"),
    pytest.param(
        R().ml_policy(mpi={"numProcPerNode": 0}),
        [("spec.mlPolicy.mpi.numProcPerNode", C.INVALID, rt.MPI_NUM_PROC_MSG)],
        id="mpi-procs-0",
    ),
    pytest.param(R().ml_policy(mpi={"mpiImplementation": ""}), [], id="mpi-implementation-empty-ok"),
    pytest.param(
        R().ml_policy(mpi={"mpiImplementation": "Intel"}),
        [("spec.mlPolicy.mpi.mpiImplementation", C.NOT_SUPPORTED, 'supported values: "OpenMPI", ""')],
        id="mpi-implementation-intel",
    ),
    pytest.param(R().ml_policy(flux={"numProcPerNode": 2}), [], id="flux-procs-ok"),
    pytest.param(
        R().ml_policy(flux={"numProcPerNode": 0}),
        [("spec.mlPolicy.flux.numProcPerNode", C.INVALID, rt.FLUX_NUM_PROC_MSG)],
        id="flux-procs-0",
    ),
    pytest.param(R().ml_policy(torch=targets(("node", ["sidecar"]))), [], id="env-injection-ok"),
    pytest.param(
        R().ml_policy(torch=targets(("a", ["x"]), ("a", ["y"]))),
        [(f"{TARGETS}[1]", C.DUPLICATE, "Duplicate value")],
        id="env-injection-duplicate-job",
    ),
    pytest.param(
        R().ml_policy(torch=targets(("a", []))),
        [(f"{TARGETS}[0].containerNames", C.INVALID, "should have at least 1 items")],
        id="container-names-empty",
    ),
    pytest.param(
        R().ml_policy(torch=targets(("a", [f"c{i}" for i in range(9)]))),
        [(f"{TARGETS}[0].containerNames", C.TOO_MANY, "must have at most 8 items")],
        id="container-names-9",
    ),
    pytest.param(
        R().ml_policy(torch=targets(("a", ["x", "x"]))),
        [(f"{TARGETS}[0].containerNames[1]", C.DUPLICATE, "Duplicate value")],
        id="container-names-duplicate",
    ),
    pytest.param(
        R().ml_policy(torch=targets(("a", ["node"]))),
        [(f"{TARGETS}[0].containerNames", C.INVALID, rt.NODE_CONTAINER_MSG)],
        id="container-names-node",
    ),
    pytest.param(
        R().coscheduling().volcano(),
        [("spec.podGroupPolicy", C.INVALID, rt.ONE_GANG_MSG)],
        id="coscheduling-and-volcano",
    ),
    pytest.param(R().coscheduling(1), [], id="schedule-timeout-1-ok"),
    pytest.param(
        R().coscheduling(0),
        [("spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds", C.INVALID, MIN1)],
        id="schedule-timeout-0",
    ),
    pytest.param(R().volcano(mode="soft", highestTierAllowed=2), [], id="network-topology-ok"),
    pytest.param(
        R().volcano(mode="medium"),
        [
            (
                "spec.podGroupPolicy.volcano.networkTopology.mode",
                C.NOT_SUPPORTED,
                'supported values: "hard", "soft"',
            )
        ],
        id="network-topology-mode",
    ),
    pytest.param(
        R().volcano(highestTierAllowed=0),
        [("spec.podGroupPolicy.volcano.networkTopology.highestTierAllowed", C.INVALID, MIN1)],
        id="highest-tier-0",
    ),
    pytest.param(RuntimeBuilder().trainer_job(replicas=1), [], id="ancestor-replicas-1-ok"),
    pytest.param(
        RuntimeBuilder().trainer_job(replicas=2),
        [(f"{RJOBS}[0].replicas", C.INVALID, rt.REPLICAS_MSG)],
        id="ancestor-replicas-2",
    ),
    pytest.param(RuntimeBuilder().rjob("workers", "worker", replicas=2), [], id="non-ancestor-replicas-2-ok"),
    pytest.param(
        RuntimeBuilder().rjob("node", "trainer", ancestor="trainer"),
        [(f"{RJOBS}[0].{POD}.containers", C.INVALID, rt.CONTAINER_MSG.format("trainer"))],
        id="trainer-without-node-container",
    ),
    pytest.param(
        RuntimeBuilder().rjob("m", "model-initializer", ancestor="model-initializer"),
        [],
        id="model-initializer-ok",
    ),
    pytest.param(
        RuntimeBuilder().rjob("d", "initializer", ancestor="dataset-initializer"),
        [(f"{RJOBS}[0].{POD}.containers", C.INVALID, rt.CONTAINER_MSG.format("dataset-initializer"))],
        id="dataset-initializer-container",
    ),
    pytest.param(
        R().rjob("node", "node"), [(f"{RJOBS}[1]", C.DUPLICATE, "Duplicate value")], id="rjob-duplicate"
    ),
    pytest.param(
        R().rjob("launcher", "node", dependsOn=[{"name": "node", "status": "Ready"}]),
        [],
        id="depends-on-earlier-ok",
    ),
    pytest.param(
        RuntimeBuilder().rjob("a", "c", dependsOn=[{"name": "b", "status": "Ready"}]).rjob("b", "c"),
        [(f"{RJOBS}[0].dependsOn[0].name", C.INVALID, rt.DEPENDS_MSG.format("a", "b"))],
        id="depends-on-later",
    ),
    pytest.param(
        R().rjob("l", "c", dependsOn=[{"name": "node", "status": "Running"}]),
        [(f"{RJOBS}[1].dependsOn[0].status", C.NOT_SUPPORTED, 'supported values: "Ready", "Complete"')],
        id="depends-on-status",
    ),
    pytest.param(
        R()
        .rjob("l", "c", dependsOn=[{"name": "node", "status": "Ready"}])
        .jobset(startupPolicy={"startupPolicyOrder": "InOrder"}),
        [("spec.template.spec", C.INVALID, rt.STARTUP_DEPENDS_MSG)],
        id="startup-in-order-with-depends-on",
    ),
    pytest.param(RuntimeBuilder().rjob("w", "c", replicas=0), [], id="replicas-0-ok"),
    pytest.param(
        RuntimeBuilder().rjob("w", "c", replicas=-1),
        [(f"{RJOBS}[0].replicas", C.INVALID, MIN0)],
        id="replicas-negative",
    ),
    pytest.param(
        RuntimeBuilder().rjob("w", "c", job={"parallelism": -1}),
        [(f"{RJOBS}[0].template.spec.parallelism", C.INVALID, MIN0)],
        id="parallelism-negative",
    ),
    pytest.param(
        RuntimeBuilder().rjob("w", "c", job={"completions": -1}),
        [(f"{RJOBS}[0].template.spec.completions", C.INVALID, MIN0)],
        id="completions-negative",
    ),
    pytest.param(
        R().jobset(successPolicy={"operator": "All", "targetReplicatedJobs": ["node"]}),
        [],
        id="success-target-ok",
    ),
    pytest.param(
        R().jobset(successPolicy={"operator": "All", "targetReplicatedJobs": ["launcher"]}),
        [
            (
                "spec.template.spec.successPolicy.targetReplicatedJobs[0]",
                C.INVALID,
                rt.TARGET_MSG.format("launcher"),
            )
        ],
        id="success-target-unknown",
    ),
]

SCHEDULER_CASES = [
    pytest.param(cosched_with(None), [], id="coscheduling-unset-ok"),
    pytest.param(cosched_with("default-scheduler"), [], id="coscheduling-default-ok"),
    pytest.param(cosched_with("scheduler-plugins-scheduler"), [], id="coscheduling-plugins-ok"),
    pytest.param(cosched_with("slurm-bridge-scheduler"), [], id="coscheduling-slurm-bridge-ok"),
    pytest.param(cosched_with("my-own-scheduler"), [], id="coscheduling-unknown-name-not-judged"),
    pytest.param(cosched_with("volcano"), [(SCHED, C.INVALID, None)], id="coscheduling-volcano"),
    pytest.param(cosched_with("kai-scheduler"), [(SCHED, C.INVALID, None)], id="coscheduling-kai"),
    pytest.param(volcano_with(None), [], id="volcano-unset-ok"),
    pytest.param(volcano_with("volcano"), [], id="volcano-volcano-ok"),
    pytest.param(volcano_with("kai-scheduler"), [(SCHED, C.INVALID, None)], id="volcano-kai"),
    pytest.param(
        volcano_with("scheduler-plugins-scheduler"), [(SCHED, C.INVALID, None)], id="volcano-plugins"
    ),
    pytest.param(volcano_with("default-scheduler"), [(SCHED, C.INVALID, None)], id="volcano-default"),
    pytest.param(
        RuntimeBuilder().rjob("node", "node", ancestor="trainer", scheduler="kai-scheduler"),
        [],
        id="no-gang-policy-ok",
    ),
]


@pytest.mark.parametrize(("builder", "expected"), RUNTIME_CASES)
def test_runtime_rule(builder: RuntimeBuilder, expected: Expected) -> None:
    assert found(validate_runtime(builder.obj())) == expected


@pytest.mark.parametrize(("builder", "expected"), SCHEDULER_CASES)
def test_gang_policy_scheduler_name(builder: RuntimeBuilder, expected: list[tuple[str, C, None]]) -> None:
    errors = validate_runtime(builder.obj()).errors
    assert [(e.path, e.type, None) for e in errors] == expected
    assert all("does not honour its PodGroup" in e.detail for e in errors)


def test_runtime_reports_every_error_at_once() -> None:
    runtime = (
        RuntimeBuilder().trainer_job(replicas=3).ml_policy(torch={}, jax={}).coscheduling(0).volcano().obj()
    )
    assert sorted(e.path for e in validate_runtime(runtime).errors) == [
        "spec.mlPolicy",
        "spec.podGroupPolicy",
        "spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds",
        f"{RJOBS}[0].replicas",
    ]


@pytest.mark.parametrize("cluster", [True, False], ids=["cluster", "namespaced"])
def test_deprecated_runtime_only_warns(cluster: bool) -> None:
    builder = RuntimeBuilder("old", cluster=cluster).trainer_job()
    assert validate_runtime(builder.obj()).warnings == []
    result = validate_runtime(builder.label("trainer.kubeflow.org/support", "deprecated").obj())
    kind = "ClusterTrainingRuntime" if cluster else "TrainingRuntime"
    assert result.errors == []
    assert result.warnings == [rt.DEPRECATED_MSG.format(kind, "old", rt.DEPRECATION_POLICY_URL)]


# ---------------------------------------------------------------- dispatch and upstream runtimes


def test_validate_object_returns_schema_errors_of_a_dict() -> None:
    obj = J().trainer(numNode=2).dict()
    result = validate_object(obj)
    assert found(result) == [("spec.trainer.numNode", C.UNKNOWN_FIELD, "field not declared in schema")]


def test_validate_object_dispatches_by_kind_and_runs_update_rules() -> None:
    assert found(validate_object(R().ml_policy(torch={}, mpi={}).dict())) == [
        ("spec.mlPolicy", C.INVALID, rt.ONE_POLICY_MSG)
    ]
    old, new = J().num_nodes(1).obj(), J().num_nodes(-2).obj()
    assert [e.path for e in validate_object(new, old).errors] == ["spec.trainer.numNodes", "spec.trainer"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}
    assert validate_object(pod).ok


UPSTREAM = load_paths([UPSTREAM_RUNTIMES]) if UPSTREAM_RUNTIMES.is_dir() else []


@pytest.mark.skipif(not UPSTREAM, reason="shared upstream runtimes not available")
@pytest.mark.parametrize(
    ("source", "obj"), UPSTREAM, ids=[Path(s).stem + "/" + o["metadata"]["name"] for s, o in UPSTREAM]
)
def test_upstream_runtime_is_valid_before_and_after_defaulting(source: str, obj: dict[str, object]) -> None:
    model = to_model(obj)
    assert validate_object(model) == Validation()
    default_object(model, ManualClock())
    assert validate_object(model) == Validation()


def test_every_upstream_runtime_file_is_covered() -> None:
    if not UPSTREAM_RUNTIMES.is_dir():
        pytest.skip("shared upstream runtimes not available")
    files = {p for p in UPSTREAM_RUNTIMES.rglob("*.yaml")}
    assert {Path(s) for s, _ in UPSTREAM} == files and len(UPSTREAM) >= len(files)
