"""MPI plugin on the upstream MPI runtimes: counts, launcher env, volumes, hostfile, SSH Secret, checks."""

from __future__ import annotations

import base64
import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric import ec

from crdschema import SHARED_DIR, validate_against_crd
from gangplane.api.trainer import ClusterTrainingRuntime, TrainJob
from gangplane.clock import ManualClock
from gangplane.errors import CauseType, FieldError
from gangplane.runtime.core import Built, default_and_validate, new_objects
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.plugins.mpi import MPIPlugin
from gangplane.runtime.points import Handle, WatchSource
from gangplane.runtime.reader import StaticReader
from gangplane.runtime.registry import PluginFactory, Registry

if SHARED_DIR is None:
    pytest.skip("shared/ with the upstream runtimes is not available", allow_module_level=True)
RUNTIMES = SHARED_DIR / "upstream" / "runtimes"
OWNER = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "name": "job",
    "uid": "uid-1",
    "controller": True,
    "blockOwnerDeletion": True,
}
FIXED_KEY = ec.derive_private_key(0x5EED, ec.SECP521R1())


def registry(mpi: PluginFactory = MPIPlugin) -> Registry:
    """The default plugins, ``mpi`` replacing MPI's factory."""
    entries = default_registry().entries()
    return Registry([dataclasses.replace(e, factory=mpi) if e.name == "MPI" else e for e in entries])


def upstream(file: str = "deepspeed_distributed.yaml") -> dict[str, Any]:
    return yaml.safe_load((RUNTIMES / file).read_text())


def edited(rt: dict[str, Any], **mpi: Any) -> dict[str, Any]:
    rt = copy.deepcopy(rt)
    rt["spec"]["mlPolicy"]["mpi"].update(mpi)
    return rt


def rjob_of(rt: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in rt["spec"]["template"]["spec"]["replicatedJobs"] if r["name"] == name)


def node_container_of(rt: dict[str, Any], name: str) -> dict[str, Any]:
    containers = rjob_of(rt, name)["template"]["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == "node")


def trainjob(**trainer: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"runtimeRef": {"name": "deepspeed-distributed"}}
    if trainer:
        spec["trainer"] = trainer
    meta = {"name": "job", "namespace": "default", "uid": "uid-1"}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta, "spec": spec}


def build(
    job: dict[str, Any], rt: dict[str, Any], *existing: dict[str, Any], mpi: PluginFactory = MPIPlugin
) -> Built:
    framework = Framework(registry(mpi), Handle(ManualClock()))
    parsed = (TrainJob.model_validate(job), ClusterTrainingRuntime.model_validate(rt))
    return new_objects(framework, *parsed, StaticReader(existing))


def validate(job: dict[str, Any], rt: dict[str, Any]) -> list[FieldError]:
    framework = Framework(registry(), Handle(ManualClock()))
    parsed = (TrainJob.model_validate(job), ClusterTrainingRuntime.model_validate(rt))
    return default_and_validate(framework, *parsed, StaticReader()).errors


def fixed_key(handle: Handle) -> MPIPlugin:
    return MPIPlugin(handle, new_key=lambda: FIXED_KEY)


def by_kind(built: Built) -> dict[str, dict[str, Any]]:
    return {d.object.to_dict()["kind"]: d.object.to_dict() for d in built.objects}


def pod_spec(built: Built, rjob: str) -> dict[str, Any]:
    rjobs = by_kind(built)["JobSet"]["spec"]["replicatedJobs"]
    spec: dict[str, Any] = next(r for r in rjobs if r["name"] == rjob)["template"]["spec"]["template"]["spec"]
    return spec


def env(container: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(e["name"], e.get("value", e.get("valueFrom"))) for e in container.get("env", [])]


def hostfile(built: Built) -> str:
    text: str = by_kind(built)["ConfigMap"]["data"]["hostfile"]
    return text


# ---------------------------------------------------------------- counts


@pytest.mark.parametrize(
    ("rt", "num_nodes", "node", "launcher"),
    [
        (upstream(), None, 1, 1),
        (upstream(), 1, 1, 1),
        (upstream(), 4, 3, 1),
        (upstream("mlx_distributed.yaml"), 3, 2, 1),
        (upstream(), 0, 1, 1),
        (edited(upstream(), runLauncherAsNode=False), 3, 3, 1),
        (edited(upstream(), runLauncherAsNode=False), 0, 0, 1),
    ],
    ids=["default", "one", "four", "mlx-three", "zero-keeps-one-node", "separate-launcher", "separate-zero"],
)
def test_counts_from_trainer_num_nodes(
    rt: dict[str, Any], num_nodes: int | None, node: int, launcher: int
) -> None:
    built = build(trainjob(numNodes=num_nodes) if num_nodes is not None else trainjob(), rt)
    counts = {p.name: p.count for p in built.info.pod_sets}
    assert counts == {"node": node, "launcher": launcher}
    assert pod_spec_parallelism(built) == counts


def pod_spec_parallelism(built: Built) -> dict[str, int]:
    return {
        r["name"]: r["template"]["spec"]["parallelism"]
        for r in by_kind(built)["JobSet"]["spec"]["replicatedJobs"]
    }


def test_runtime_num_nodes_sizes_node_and_launcher_stays_single() -> None:
    """Upstream leaves the launcher (trainer ancestor) at mlPolicy.numNodes (reference §14.9); we use 1."""
    rt = upstream()
    rt["spec"]["mlPolicy"]["numNodes"] = 5
    assert pod_spec_parallelism(build(trainjob(), rt)) == {"node": 4, "launcher": 1}


# ---------------------------------------------------------------- hostfile and numProcPerNode


@pytest.mark.parametrize(
    ("rt", "num_nodes", "expected"),
    [
        (
            upstream(),
            3,
            ["job-launcher-0-0.job slots=1", "job-node-0-0.job slots=1", "job-node-0-1.job slots=1"],
        ),
        (upstream(), 1, ["job-launcher-0-0.job slots=1", "job-node-0-0.job slots=1"]),
        (
            edited(upstream(), runLauncherAsNode=False),
            2,
            ["job-node-0-0.job slots=1", "job-node-0-1.job slots=1"],
        ),
        (
            edited(upstream(), numProcPerNode=4),
            2,
            ["job-launcher-0-0.job slots=4", "job-node-0-0.job slots=4"],
        ),
    ],
    ids=["launcher-first", "single-node", "launcher-not-a-node", "runtime-slots"],
)
def test_hostfile_lists_every_node_endpoint(rt: dict[str, Any], num_nodes: int, expected: list[str]) -> None:
    assert hostfile(build(trainjob(numNodes=num_nodes), rt)) == "".join(f"{line}\n" for line in expected)


def test_hostfile_follows_network_subdomain() -> None:
    rt = upstream()
    rt["spec"]["template"]["spec"]["network"]["subdomain"] = "mpi"
    assert (
        hostfile(build(trainjob(numNodes=2), rt))
        == "job-launcher-0-0.mpi slots=1\njob-node-0-0.mpi slots=1\n"
    )


def with_node_resources(rt: dict[str, Any], resources: dict[str, Any]) -> dict[str, Any]:
    rt = copy.deepcopy(rt)
    for name in ("node", "launcher"):
        node_container_of(rt, name)["resources"] = resources
    return rt


@pytest.mark.parametrize(
    ("rt", "trainer", "slots"),
    [
        (upstream(), {"numProcPerNode": 3, "resourcesPerNode": {"requests": {"nvidia.com/gpu": 8}}}, "3"),
        (upstream(), {"resourcesPerNode": {"requests": {"nvidia.com/gpu": 4}}}, "4"),
        (upstream(), {"resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}}, "2"),
        (upstream(), {"resourcesPerNode": {"requests": {"nvidia.com/gpu": 1}}}, "1"),
        (upstream(), {"resourcesPerNode": {"requests": {"cpu": "16"}}}, "1"),
        (
            edited(upstream(), numProcPerNode=2),
            {"resourcesPerNode": {"requests": {"nvidia.com/gpu": 4}}},
            "2",
        ),
        (with_node_resources(upstream(), {"requests": {"amd.com/gpu": 8}}), {}, "8"),
        (
            with_node_resources(upstream(), {"requests": {"nvidia.com/gpu": 8}}),
            {"resourcesPerNode": {"requests": {"cpu": "4"}}},
            "1",
        ),
    ],
    ids=[
        "trainer-wins",
        "gpus-replace-one",
        "gpus-from-limits",
        "one-gpu",
        "no-gpu",
        "runtime-not-one-kept",
        "runtime-container-gpus",
        "resources-per-node-replace-runtime",
    ],
)
def test_num_proc_per_node(rt: dict[str, Any], trainer: dict[str, Any], slots: str) -> None:
    built = build(trainjob(numNodes=2, **trainer), rt)
    launcher = pod_spec(built, "launcher")["containers"][0]
    assert dict(env(launcher))["OMPI_MCA_orte_set_default_slots"] == slots
    assert hostfile(built) == f"job-launcher-0-0.job slots={slots}\njob-node-0-0.job slots={slots}\n"


# ---------------------------------------------------------------- launcher and node pod templates

SSH_VOLUME = {
    "name": "mpi-ssh-auth",
    "secret": {
        "secretName": "job-mpi-ssh-auth",
        "defaultMode": 0o400,
        "items": [
            {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
            {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
            {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
        ],
    },
}
HOSTFILE_VOLUME = {
    "name": "mpi-hostfile",
    "configMap": {
        "name": "job-mpi-hostfile",
        "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
    },
}


def test_launcher_env_volumes_and_mounts() -> None:
    built = build(trainjob(numNodes=3, env=[{"name": "NCCL_DEBUG", "value": "INFO"}]), upstream())
    launcher = pod_spec(built, "launcher")
    assert env(launcher["containers"][0]) == [
        ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
        ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
        ("OMPI_MCA_orte_set_default_slots", "1"),
        ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
        ("NCCL_DEBUG", "INFO"),
    ]
    assert launcher["volumes"] == [SSH_VOLUME, HOSTFILE_VOLUME]
    assert launcher["containers"][0]["volumeMounts"] == [
        {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
        {"name": "mpi-hostfile", "mountPath": "/etc/mpi"},
    ]


@pytest.mark.parametrize(
    ("launcher_as_node", "node_env"),
    [(True, [("NCCL_DEBUG", "INFO")]), (False, [])],
    ids=["launcher-as-node-shares-trainer-env", "separate-launcher"],
)
def test_node_pods_get_ssh_keys_only(launcher_as_node: bool, node_env: list[tuple[str, Any]]) -> None:
    rt = edited(upstream(), runLauncherAsNode=launcher_as_node)
    built = build(trainjob(numNodes=3, env=[{"name": "NCCL_DEBUG", "value": "INFO"}]), rt)
    node = pod_spec(built, "node")
    assert node["volumes"] == [SSH_VOLUME]
    assert node["containers"][0]["volumeMounts"] == [
        {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"}
    ]
    assert env(node["containers"][0]) == node_env


def test_ssh_mount_path_defaults_to_root() -> None:
    rt = upstream("mlx_distributed.yaml")
    del rt["spec"]["mlPolicy"]["mpi"]["sshAuthMountPath"]
    built = build(trainjob(), rt)
    for rjob in ("node", "launcher"):
        mounts = pod_spec(built, rjob)["containers"][0]["volumeMounts"]
        assert mounts[0] == {"name": "mpi-ssh-auth", "mountPath": "/root/.ssh"}


def test_jobset_still_matches_the_crd() -> None:
    assert validate_against_crd(by_kind(build(trainjob(numNodes=3), upstream()))["JobSet"]) == []


def test_unsupported_implementation_warns_and_sets_no_env() -> None:
    built = build(trainjob(numNodes=2), edited(upstream(), mpiImplementation="MPICH"))
    assert "OMPI_MCA_orte_default_hostfile" not in dict(env(pod_spec(built, "launcher")["containers"][0]))
    assert hostfile(built) == ""
    assert built.warnings == ["MPI: mpiImplementation 'MPICH' is not supported"]


# ---------------------------------------------------------------- built objects


def test_build_order_and_owners() -> None:
    built = build(trainjob(numNodes=2), upstream(), mpi=fixed_key)
    objects = [d.object.to_dict() for d in built.objects]
    mpi_objects = [
        (o["kind"], o["metadata"]["name"]) for o in objects if o["kind"] in ("Secret", "ConfigMap")
    ]
    assert mpi_objects == [("Secret", "job-mpi-ssh-auth"), ("ConfigMap", "job-mpi-hostfile")]
    for obj in (o for o in objects if o["kind"] in ("Secret", "ConfigMap")):
        assert obj["apiVersion"] == "v1"
        assert obj["metadata"]["namespace"] == "default"
        assert obj["metadata"]["ownerReferences"] == [OWNER]


def test_secret_holds_a_matching_ssh_key_pair() -> None:
    secret = by_kind(build(trainjob(), upstream()))["Secret"]
    assert (secret["type"], secret["immutable"]) == ("kubernetes.io/ssh-auth", True)
    private_pem = base64.b64decode(secret["data"]["ssh-privatekey"])
    public_line = base64.b64decode(secret["data"]["ssh-publickey"])
    assert private_pem.startswith(b"-----BEGIN EC PRIVATE KEY-----")
    key = ser.load_pem_private_key(private_pem, password=None)
    expected = key.public_key().public_bytes(ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH)
    assert public_line == expected + b"\n"
    assert public_line.startswith(b"ecdsa-sha2-nistp521 ")


def test_injected_key_is_used() -> None:
    secret = by_kind(build(trainjob(), upstream(), mpi=fixed_key))["Secret"]
    public = FIXED_KEY.public_key().public_bytes(ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH) + b"\n"
    assert secret["data"]["ssh-publickey"] == base64.b64encode(public).decode()


def counting_key(calls: list[int]) -> Callable[[Handle], MPIPlugin]:
    def new_key() -> ec.EllipticCurvePrivateKey:
        calls.append(1)
        return FIXED_KEY

    return lambda handle: MPIPlugin(handle, new_key=new_key)


@pytest.mark.parametrize(
    ("existing", "kinds", "keys_made"),
    [
        ([], ["Secret", "ConfigMap"], 1),
        (
            [
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "job-mpi-ssh-auth", "namespace": "default"},
                }
            ],
            ["ConfigMap"],
            0,
        ),
        (
            [
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "job-mpi-ssh-auth", "namespace": "other"},
                }
            ],
            ["Secret", "ConfigMap"],
            1,
        ),
        (
            [
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "other-mpi-ssh-auth", "namespace": "default"},
                }
            ],
            ["Secret", "ConfigMap"],
            1,
        ),
    ],
    ids=["absent", "exists-kept", "other-namespace", "other-job"],
)
def test_secret_is_never_regenerated(
    existing: list[dict[str, Any]], kinds: list[str], keys_made: int
) -> None:
    calls: list[int] = []
    built = build(trainjob(numNodes=2), upstream(), *existing, mpi=counting_key(calls))
    assert [
        k for k in (d.object.to_dict()["kind"] for d in built.objects) if k in ("Secret", "ConfigMap")
    ] == kinds
    assert len(calls) == keys_made


def test_non_mpi_runtime_is_left_alone() -> None:
    rt = upstream("jax_distributed.yaml")
    built = build(trainjob(numNodes=2), rt)
    assert set(by_kind(built)) == {"JobSet"}
    assert "volumes" not in pod_spec(built, "node")


def test_watches_config_maps_and_secrets() -> None:
    assert MPIPlugin(Handle(ManualClock())).watches() == [
        WatchSource("v1", "ConfigMap"),
        WatchSource("v1", "Secret"),
    ]


# ---------------------------------------------------------------- validation


def without_launcher(rt: dict[str, Any]) -> dict[str, Any]:
    rt = copy.deepcopy(rt)
    rjobs = rt["spec"]["template"]["spec"]["replicatedJobs"]
    rt["spec"]["template"]["spec"]["replicatedJobs"] = [r for r in rjobs if r["name"] != "launcher"]
    rt["spec"]["template"]["spec"].pop("successPolicy")
    return rt


NUM_NODES_DETAIL = (
    "must be 1: the MPI runtime runs the launcher as a node but lacks a launcher or node replicated job"
)


@pytest.mark.parametrize(
    ("job", "rt", "expected"),
    [
        (trainjob(numNodes=4), upstream(), []),
        (
            trainjob(numNodes=2),
            without_launcher(upstream()),
            [("spec.trainer.numNodes", CauseType.INVALID, 2)],
        ),
        (trainjob(numNodes=1), without_launcher(upstream()), []),
        (trainjob(), without_launcher(upstream()), []),
        (trainjob(numNodes=2), edited(without_launcher(upstream()), runLauncherAsNode=False), []),
        (
            trainjob(env=[{"name": "A", "value": "1"}, {"name": "OMPI_MCA_plm_rsh_args", "value": "-x"}]),
            upstream(),
            [("spec.trainer.env[1].name", CauseType.INVALID, "OMPI_MCA_plm_rsh_args")],
        ),
        (
            trainjob(
                env=[
                    {"name": n}
                    for n in ("OMPI_MCA_orte_default_hostfile", "OMPI_MCA_orte_keep_fqdn_hostnames")
                ]
            ),
            upstream(),
            [
                ("spec.trainer.env[0].name", CauseType.INVALID, "OMPI_MCA_orte_default_hostfile"),
                ("spec.trainer.env[1].name", CauseType.INVALID, "OMPI_MCA_orte_keep_fqdn_hostnames"),
            ],
        ),
        (
            trainjob(env=[{"name": "OMPI_MCA_orte_set_default_slots", "value": "2"}]),
            upstream("jax_distributed.yaml"),
            [],
        ),
        (
            trainjob(),
            edited(upstream(), mpiImplementation="IntelMPI"),
            [("spec.mlPolicy.mpi.mpiImplementation", CauseType.NOT_SUPPORTED, "IntelMPI")],
        ),
        (trainjob(), edited(upstream(), mpiImplementation=""), []),
    ],
    ids=[
        "ok",
        "launcher-missing",
        "launcher-missing-one-node",
        "launcher-missing-default-nodes",
        "launcher-missing-not-a-node",
        "reserved-env",
        "two-reserved-envs",
        "reserved-env-other-framework",
        "intel-mpi",
        "empty-implementation-is-default",
    ],
)
def test_validation(
    job: dict[str, Any], rt: dict[str, Any], expected: list[tuple[str, CauseType, Any]]
) -> None:
    assert [(e.path, e.type, e.value) for e in validate(job, rt)] == expected


def test_num_nodes_error_detail() -> None:
    errors = validate(trainjob(numNodes=3), without_launcher(upstream()))
    assert [e.detail for e in errors] == [NUM_NODES_DETAIL]
