"""MPI (OpenMPI): node counts, launcher env, hostfile ConfigMap and SSH Secret (upstream ``plugins/mpi``).

The launcher runs ``mpirun``, which reaches the ``node`` pods over SSH with a key pair from the Secret
``<trainjob>-mpi-ssh-auth`` and finds them in the hostfile ``<trainjob>-mpi-hostfile`` (mounted at
``/etc/mpi`` in the launcher). Both objects are controller-owned by the TrainJob.

Where gangplane differs from upstream ``pkg/runtime/framework/plugins/mpi/mpi.go``:

- The launcher keeps count 1 (upstream leaves it at ``mlPolicy.numNodes``, reference trainer-api.md
  §14.9), and ``mlPolicy.numNodes`` also sizes ``node`` when the TrainJob gives no ``numNodes``.
- With ``runLauncherAsNode`` the launcher is always the first hostfile line (upstream follows PodSet
  order), so rank 0 runs in the launcher whatever order the runtime lists its replicated jobs in.
- An unsupported ``mpiImplementation`` is a validation error and a warning, never an exception.

SSH keys and determinism: a key pair is secret material, so it never comes from a seeded generator.
``build`` generates a fresh ECDSA P-521 pair (upstream's type, which its ``sshd`` images accept) only when
the Reader finds no Secret, and otherwise returns no Secret at all: like upstream the Secret is immutable and
never rotated, so once it exists every build is a pure function of its inputs. Nothing is derived from the
clock. Tests inject ``new_key`` to get a fixed key.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, ClassVar

from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric import ec

from gangplane.api import corev1_config as cfg
from gangplane.api import trainer as t
from gangplane.api.core import Container, EnvVar, VolumeMount
from gangplane.api.merge import upsert_by_name
from gangplane.api.meta import ObjectMeta
from gangplane.errors import CauseType, FieldError
from gangplane.runtime.info import PodSet, RuntimeInfo
from gangplane.runtime.plugins.common import owner_reference, reserved_env_errors, resources_per_node
from gangplane.runtime.plugins.jobset import upsert_env
from gangplane.runtime.plugins.torch import gpu_count
from gangplane.runtime.points import Desired, Handle, ValidationResult, WatchSource
from gangplane.runtime.reader import Reader

OPEN_MPI = "OpenMPI"
DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
HOSTFILE_DIR = "/etc/mpi"
HOSTFILE_KEY = "hostfile"
HOSTFILE_VOLUME = "mpi-hostfile"
SSH_AUTH_VOLUME = "mpi-ssh-auth"
SSH_PUBLIC_KEY = "ssh-publickey"

HOSTFILE_ENV = "OMPI_MCA_orte_default_hostfile"
KEEP_FQDN_ENV = "OMPI_MCA_orte_keep_fqdn_hostnames"
DEFAULT_SLOTS_ENV = "OMPI_MCA_orte_set_default_slots"
RSH_ARGS_ENV = "OMPI_MCA_plm_rsh_args"
RESERVED_ENV = (HOSTFILE_ENV, KEEP_FQDN_ENV, DEFAULT_SLOTS_ENV, RSH_ARGS_ENV)

# File modes of the mounted Secret items (upstream constants.MPISSH*Mode).
_SECRET_DEFAULT_MODE = 0o400
_PRIVATE_KEY_MODE = 0o640
_PUBLIC_KEY_MODE = 0o644
_HOSTFILE_MODE = 0o444

KeyFactory = Callable[[], ec.EllipticCurvePrivateKey]


def new_ssh_key() -> ec.EllipticCurvePrivateKey:
    """A fresh ECDSA P-521 key from the operating system's CSPRNG."""
    return ec.generate_private_key(ec.SECP521R1())


def hostfile_config_map_name(job: t.TrainJob) -> str:
    return f"{job.metadata.name}-mpi-hostfile"


def ssh_auth_secret_name(job: t.TrainJob) -> str:
    return f"{job.metadata.name}-mpi-ssh-auth"


def _policy(info: RuntimeInfo) -> t.MPIMLPolicySource | None:
    return info.ml_policy.mpi if info.ml_policy else None


def _implementation(policy: t.MPIMLPolicySource) -> str:
    return policy.mpi_implementation or OPEN_MPI  # CRD default


class MPIPlugin:
    name: ClassVar[str] = "MPI"

    def __init__(self, handle: Handle, new_key: KeyFactory = new_ssh_key) -> None:
        self.handle = handle
        self.new_key = new_key

    def watches(self) -> list[WatchSource]:
        return [
            WatchSource(cfg.API_VERSION, cfg.CONFIG_MAP_KIND),
            WatchSource(cfg.API_VERSION, cfg.SECRET_KIND),
        ]

    def validate(
        self, info: RuntimeInfo, old: t.TrainJob | None, new: t.TrainJob, reader: Reader
    ) -> ValidationResult:
        policy = _policy(info)
        if policy is None:
            return ValidationResult()
        errors = [
            *_pod_set_errors(info, policy, new),
            *reserved_env_errors(new, RESERVED_ENV),
            *_implementation_errors(policy),
        ]
        return ValidationResult(errors=errors)

    def enforce_ml_policy(self, info: RuntimeInfo, job: t.TrainJob) -> None:
        policy = _policy(info)
        if policy is None:
            return
        _set_counts(info, policy, job)
        policy.num_proc_per_node = _num_proc_per_node(info, policy, job)
        for pod_set in info.pod_sets:
            if pod_set.name in (t.NODE, t.LAUNCHER):
                _mount_ssh_auth(pod_set, policy, job)
        launcher = info.pod_set(t.LAUNCHER)
        if launcher is not None:
            _configure_launcher(info, launcher, policy, job)
        _share_trainer_env(info, policy, job)

    def build(self, info: RuntimeInfo, job: t.TrainJob, reader: Reader) -> list[Desired]:
        policy = _policy(info)
        if policy is None:
            return []
        namespace = job.metadata.namespace or ""
        existing = reader.get(cfg.API_VERSION, cfg.SECRET_KIND, namespace, ssh_auth_secret_name(job))
        secret = [] if existing is not None else [Desired(ssh_auth_secret(job, self.new_key()))]
        return [*secret, Desired(hostfile_config_map(info, policy, job))]


def _pod_set_errors(info: RuntimeInfo, policy: t.MPIMLPolicySource, job: t.TrainJob) -> list[FieldError]:
    """Several nodes with the launcher as one of them need both replicated jobs (upstream ``Validate``)."""
    num_nodes = job.spec.trainer.num_nodes if job.spec.trainer else None
    if job.spec.trainer is None or (num_nodes or 1) < 2 or not policy.run_launcher_as_node:
        return []
    if info.pod_set(t.LAUNCHER) is not None and info.pod_set(t.NODE) is not None:
        return []
    detail = (
        "must be 1: the MPI runtime runs the launcher as a node but lacks a launcher or node replicated job"
    )
    return [FieldError("spec.trainer.numNodes", CauseType.INVALID, detail, num_nodes)]


def _implementation_errors(policy: t.MPIMLPolicySource) -> list[FieldError]:
    """Only OpenMPI is implemented, as upstream (whose enforce step fails on anything else)."""
    if _implementation(policy) == OPEN_MPI:
        return []
    detail = f"only {OPEN_MPI} is implemented"
    path = "spec.mlPolicy.mpi.mpiImplementation"
    return [FieldError(path, CauseType.NOT_SUPPORTED, detail, policy.mpi_implementation)]


def _num_nodes(info: RuntimeInfo, job: t.TrainJob) -> int:
    if job.spec.trainer is not None and job.spec.trainer.num_nodes is not None:
        return job.spec.trainer.num_nodes
    given = info.ml_policy.num_nodes if info.ml_policy else None
    return 1 if given is None else given


def _set_counts(info: RuntimeInfo, policy: t.MPIMLPolicySource, job: t.TrainJob) -> None:
    """The launcher counts as one of ``numNodes`` when it runs as a node; it is always a single pod."""
    num_nodes = _num_nodes(info, job)
    node = info.pod_set(t.NODE)
    if node is not None:
        node.count = max(num_nodes - 1, 1) if policy.run_launcher_as_node else num_nodes
    launcher = info.pod_set(t.LAUNCHER)
    if launcher is not None:
        launcher.count = 1


def _num_proc_per_node(info: RuntimeInfo, policy: t.MPIMLPolicySource, job: t.TrainJob) -> int:
    """The TrainJob's value, else the runtime's, where a runtime 1 becomes the GPU count if that is larger."""
    if job.spec.trainer is not None and job.spec.trainer.num_proc_per_node is not None:
        return job.spec.trainer.num_proc_per_node
    given = 1 if policy.num_proc_per_node is None else policy.num_proc_per_node
    gpus = gpu_count(resources_per_node(info, job))
    return gpus if given == 1 and gpus > 1 else given


def _upsert_volume(pod_set: PodSet, volume: dict[str, Any]) -> None:
    pod_set.template.spec.volumes = upsert_by_name(pod_set.template.spec.volumes or [], volume)


def _upsert_mount(container: Container, mount: VolumeMount) -> None:
    """Mounts merge by mount path (upstream ``apply.UpsertVolumeMounts``)."""
    mounts = container.volume_mounts or []
    if any(m.mount_path == mount.mount_path for m in mounts):
        container.volume_mounts = [mount if m.mount_path == mount.mount_path else m for m in mounts]
    else:
        container.volume_mounts = [*mounts, mount]


def _mount_ssh_auth(pod_set: PodSet, policy: t.MPIMLPolicySource, job: t.TrainJob) -> None:
    items = [
        {"key": cfg.SSH_AUTH_PRIVATE_KEY, "path": "id_rsa", "mode": _PRIVATE_KEY_MODE},
        {"key": SSH_PUBLIC_KEY, "path": "id_rsa.pub", "mode": _PUBLIC_KEY_MODE},
        {"key": SSH_PUBLIC_KEY, "path": "authorized_keys", "mode": _PUBLIC_KEY_MODE},
    ]
    secret = {"secretName": ssh_auth_secret_name(job), "defaultMode": _SECRET_DEFAULT_MODE, "items": items}
    _upsert_volume(pod_set, {"name": SSH_AUTH_VOLUME, "secret": secret})
    container = pod_set.container(t.NODE)
    if container is not None:
        mount_path = policy.ssh_auth_mount_path or DEFAULT_SSH_AUTH_MOUNT_PATH
        _upsert_mount(container, VolumeMount(name=SSH_AUTH_VOLUME, mount_path=mount_path))


def _configure_launcher(
    info: RuntimeInfo, launcher: PodSet, policy: t.MPIMLPolicySource, job: t.TrainJob
) -> None:
    items = [{"key": HOSTFILE_KEY, "path": HOSTFILE_KEY, "mode": _HOSTFILE_MODE}]
    config_map = {"name": hostfile_config_map_name(job), "items": items}
    _upsert_volume(launcher, {"name": HOSTFILE_VOLUME, "configMap": config_map})
    container = launcher.container(t.NODE)
    if container is None:
        return
    _upsert_mount(container, VolumeMount(name=HOSTFILE_VOLUME, mount_path=HOSTFILE_DIR))
    if _implementation(policy) != OPEN_MPI:
        info.warnings.append(f"MPI: mpiImplementation {policy.mpi_implementation!r} is not supported")
        return
    upsert_env(container, open_mpi_env(policy.num_proc_per_node or 1))


def open_mpi_env(slots: int) -> list[EnvVar]:
    return [
        EnvVar(name=HOSTFILE_ENV, value=f"{HOSTFILE_DIR}/{HOSTFILE_KEY}"),
        EnvVar(name=KEEP_FQDN_ENV, value="true"),
        EnvVar(name=DEFAULT_SLOTS_ENV, value=str(slots)),
        EnvVar(name=RSH_ARGS_ENV, value="-o ConnectionAttempts=10"),
    ]


def _share_trainer_env(info: RuntimeInfo, policy: t.MPIMLPolicySource, job: t.TrainJob) -> None:
    """With the launcher as a node, ``node`` pods run trainer code too and get ``trainer.env`` (upstream does
    this in the JobSet builder; gangplane's JobSet plugin injects the trainer ancestor only)."""
    node = info.pod_set(t.NODE)
    container = node.container(t.NODE) if node else None
    if policy.run_launcher_as_node and container is not None and job.spec.trainer is not None:
        upsert_env(container, job.spec.trainer.env or [])


def hostfile(info: RuntimeInfo, policy: t.MPIMLPolicySource) -> str:
    """One ``<fqdn> slots=<n>`` line per host; the launcher first when it runs as a node."""
    if _implementation(policy) != OPEN_MPI:
        return ""
    names = [t.LAUNCHER, t.NODE] if policy.run_launcher_as_node else [t.NODE]
    hosts = [host for name in names if (pod_set := info.pod_set(name)) for host in pod_set.endpoints]
    slots = policy.num_proc_per_node or 1
    return "".join(f"{host} slots={slots}\n" for host in hosts)


def _child_meta(job: t.TrainJob, name: str) -> ObjectMeta:
    return ObjectMeta(name=name, namespace=job.metadata.namespace, owner_references=[owner_reference(job)])


def hostfile_config_map(info: RuntimeInfo, policy: t.MPIMLPolicySource, job: t.TrainJob) -> cfg.ConfigMap:
    meta = _child_meta(job, hostfile_config_map_name(job))
    return cfg.ConfigMap(metadata=meta, data={HOSTFILE_KEY: hostfile(info, policy)})


def ssh_auth_secret(job: t.TrainJob, key: ec.EllipticCurvePrivateKey) -> cfg.Secret:
    """An immutable ``kubernetes.io/ssh-auth`` Secret: SEC1 PEM private key and an authorized_keys line."""
    private = key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.TraditionalOpenSSL, ser.NoEncryption())
    public = key.public_key().public_bytes(ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH) + b"\n"
    data = {cfg.SSH_AUTH_PRIVATE_KEY: _b64(private), SSH_PUBLIC_KEY: _b64(public)}
    meta = _child_meta(job, ssh_auth_secret_name(job))
    return cfg.Secret(metadata=meta, type=cfg.SECRET_TYPE_SSH_AUTH, data=data, immutable=True)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")
