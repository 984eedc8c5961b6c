"""Small helpers shared by plugins."""

from __future__ import annotations

from collections.abc import Collection

from gangplane.api import trainer as t
from gangplane.api.core import Container, ContainerPort, EnvVar, ResourceRequirements
from gangplane.api.jobset import COMPLETION_INDEX
from gangplane.api.meta import OwnerReference
from gangplane.errors import CauseType, FieldError
from gangplane.runtime.info import PodSet, RuntimeInfo

# Upstream ``constants.ContainerTrainerPort``: torch's master, JAX's coordinator and XGBoost's tracker port.
TRAINER_PORT = 29500


def owner_reference(job: t.TrainJob) -> OwnerReference:
    """The controller reference every child of a TrainJob carries."""
    return OwnerReference(
        api_version=t.API_VERSION,
        kind=t.TRAINJOB_KIND,
        name=job.metadata.name or "",
        uid=job.metadata.uid or "",
        controller=True,
        block_owner_deletion=True,
    )


def completion_index_env(name: str) -> EnvVar:
    """An env var holding the pod's Indexed-Job completion index (the node rank)."""
    field_path = f"metadata.annotations['{COMPLETION_INDEX}']"
    return EnvVar(name=name, value_from={"fieldRef": {"fieldPath": field_path}})


def node0_address(job: t.TrainJob) -> str:
    """The rank-0 trainer pod; its subdomain is the TrainJob name whatever ``network.subdomain`` says."""
    name = job.metadata.name or ""
    return f"{name}-{t.NODE}-0-0.{name}"


def reserved_env_errors(job: t.TrainJob, reserved: Collection[str]) -> list[FieldError]:
    """One error per ``trainer.env`` entry whose name the ML policy sets itself."""
    return [
        FieldError(f"spec.trainer.env[{i}].name", CauseType.INVALID, "must not have reserved envs", var.name)
        for i, var in enumerate((job.spec.trainer.env if job.spec.trainer else None) or [])
        if var.name in reserved
    ]


def apply_trainer_num_nodes(pod_set: PodSet, job: t.TrainJob) -> None:
    """``trainer.numNodes`` overrides the count as given: no ``max(·, 1)``, so 0 gives 0 (upstream)."""
    if job.spec.trainer is not None and job.spec.trainer.num_nodes is not None:
        pod_set.count = job.spec.trainer.num_nodes


def resources_per_node(info: RuntimeInfo, job: t.TrainJob) -> ResourceRequirements | None:
    """``trainer.resourcesPerNode`` as given, else those of the ``node`` container of the first pod set named
    ``node`` or of trainer ancestry (upstream ``runtime.ExtractResourcePerNodeFromRuntime``)."""
    if job.spec.trainer is not None and job.spec.trainer.resources_per_node is not None:
        return job.spec.trainer.resources_per_node
    for pod_set in info.pod_sets:
        container = pod_set.container(t.NODE)
        is_trainer = pod_set.name == t.NODE or pod_set.ancestor == t.Ancestor.TRAINER
        if is_trainer and container is not None and container.resources is not None:
            return container.resources
    return None


def upsert_container_port(container: Container, port: int, protocol: str | None = None) -> None:
    """Add ``port`` unless the container already exposes it (upstream ``apply.UpsertPort``)."""
    ports = container.ports or []
    if not any(p.container_port == port for p in ports):
        added = (
            ContainerPort(container_port=port)
            if protocol is None
            else ContainerPort(container_port=port, protocol=protocol)
        )
        container.ports = [*ports, added]
