"""The Kubernetes core shapes gangplane reads: pod templates, containers, resources, pods and nodes.

All are open models: fields gangplane does not model (probes, security contexts, ...) are kept and written
back unchanged. Lists that Kubernetes merges by key (containers by name, env by name) are typed; shapes
gangplane only copies (volumes, affinity) stay plain dicts.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gangplane.api.base import OpenModel
from gangplane.api.meta import ObjectMeta
from gangplane.api.quantity import ResourceList


class EnvVar(OpenModel):
    name: str
    value: str | None = None
    value_from: dict[str, Any] | None = None


class ResourceRequirements(OpenModel):
    requests: ResourceList | None = None
    limits: ResourceList | None = None


class ContainerPort(OpenModel):
    container_port: int
    name: str | None = None
    protocol: str | None = None


class VolumeMount(OpenModel):
    name: str
    mount_path: str


class Container(OpenModel):
    name: str
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[EnvVar] | None = None
    env_from: list[dict[str, Any]] | None = None
    resources: ResourceRequirements | None = None
    ports: list[ContainerPort] | None = None
    volume_mounts: list[VolumeMount] | None = None
    working_dir: str | None = None
    restart_policy: str | None = None  # "Always" on an init container makes it a sidecar


class Toleration(OpenModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class Taint(OpenModel):
    key: str
    value: str | None = None
    effect: str


class PodSpec(OpenModel):
    containers: list[Container] = []
    init_containers: list[Container] | None = None
    volumes: list[dict[str, Any]] | None = None
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[Toleration] | None = None
    scheduler_name: str | None = None
    priority_class_name: str | None = None
    priority: int | None = None
    restart_policy: str | None = None
    overhead: ResourceList | None = None
    scheduling_gates: list[dict[str, Any]] | None = None
    service_account_name: str | None = None
    termination_grace_period_seconds: int | None = None
    node_name: str | None = None
    hostname: str | None = None
    subdomain: str | None = None


class PodTemplateSpec(OpenModel):
    metadata: ObjectMeta | None = None
    spec: PodSpec = PodSpec()


class Pod(OpenModel):
    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = ObjectMeta()
    spec: PodSpec = PodSpec()
    status: dict[str, Any] | None = None


class NodeSpec(OpenModel):
    unschedulable: bool | None = None
    taints: list[Taint] | None = None


class NodeStatus(OpenModel):
    capacity: ResourceList | None = None
    allocatable: ResourceList | None = None
    conditions: list[dict[str, Any]] | None = None


class Node(OpenModel):
    api_version: str = "v1"
    kind: str = "Node"
    # factories: pydantic deep-copies a model default for every object that leaves it out (a Node POST
    # without spec), several times dearer than building a new one
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus | None = None
