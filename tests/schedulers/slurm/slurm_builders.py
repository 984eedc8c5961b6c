"""Short builders for the Slurm Bridge core's views (tests only)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gangplane.api.scheduling.coscheduling import POD_GROUP_LABEL
from gangplane.api.scheduling.slurm import SCHEDULER_NAME, SLURM_NODE_NAME_LABEL
from gangplane.schedulers.slurm.cli import SlurmJob, SlurmNode
from gangplane.schedulers.slurm.commands import SlurmCli, SubprocessRunner
from gangplane.schedulers.slurm.model import (
    BridgeView,
    ConditionView,
    GroupView,
    PodView,
    Ref,
    job_comment,
)
from waiting import wait_for

GIB = 1024**3


def pod(name: str, *, ns: str = "ns", node: str = "", job: int | None = None, **fields: Any) -> PodView:
    defaults: dict[str, Any] = {"cpu_millis": 1500, "memory_bytes": GIB, "gpus": 1}
    return PodView(ref=Ref(ns, name, f"uid-{name}"), node_name=node, job_id=job, **{**defaults, **fields})


def pods(count: int, prefix: str = "train", **fields: Any) -> tuple[PodView, ...]:
    return tuple(pod(f"{prefix}-{i}", **fields) for i in range(count))


def group(
    name: str = "train",
    members: tuple[PodView, ...] = (),
    *,
    min_member: int | None = None,
    job: int | None = None,
    annotations: dict[str, str] | None = None,
    condition: ConditionView | None = None,
    deleting: bool = False,
) -> GroupView:
    return GroupView(
        ref=Ref("ns", name, f"uid-{name}"),
        min_member=len(members) if min_member is None else min_member,
        pods=members,
        annotations=annotations or {},
        job_id=job,
        condition=condition,
        deleting=deleting,
    )


def job(
    job_id: int, owner: str = "train", state: str = "RUNNING", nodes: tuple[str, ...] = (), **fields: Any
) -> SlurmJob:
    nodelist = ",".join(nodes)
    return SlurmJob(
        job_id=job_id,
        name=f"ns/{owner}",
        state=state,
        nodelist=nodelist,
        node_count=len(nodes),
        comment=job_comment("ns", owner, f"uid-{owner}") if owner else "",
        nodes=nodes,
        **fields,
    )


def slurm_nodes(
    count: int = 4, *, cpus: int = 4, memory_mb: int = 16384, gpus: int = 2
) -> tuple[SlurmNode, ...]:
    return tuple(
        SlurmNode(f"n{i}", ("slurm-bridge",), cpus, memory_mb, gpus, "idle") for i in range(1, count + 1)
    )


def view(*groups: GroupView, jobs: tuple[SlurmJob, ...] = (), **fields: Any) -> BridgeView:
    base = BridgeView(
        groups=groups,
        jobs=jobs,
        slurm_nodes=slurm_nodes(),
        node_names={f"n{i}": f"node-{i}" for i in range(1, 5)},
    )
    return replace(base, **fields)


# -- store objects (camelCase wire dicts) ---------------------------------------------------------------------


def pod_object(
    name: str, group_name: str, *, ns: str = "ns", cpu: str = "1", memory: str = "1Gi", gpus: int = 1
) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory, **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {POD_GROUP_LABEL: group_name}},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "containers": [{"name": "trainer", "image": "busybox", "resources": {"requests": requests}}],
        },
        "status": {"phase": "Pending"},
    }


def pod_group_object(
    name: str, min_member: int, *, ns: str = "ns", annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations or {}},
        "spec": {"minMember": min_member},
    }


def node_object(name: str, slurm_name: str | None = None) -> dict[str, Any]:
    labels = {SLURM_NODE_NAME_LABEL: slurm_name} if slurm_name else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "status": {}}


def wait_until(check: Callable[[], object], timeout: float = 20.0, what: str = "condition") -> object:
    """``waiting.wait_for`` with the Slurm tests' default timeout."""
    return wait_for(check, timeout, what, interval=0.05)


@dataclass(frozen=True)
class LocalSlurm:
    state_dir: Path
    slurm_conf: str

    def cli(self) -> SlurmCli:
        return SlurmCli(SubprocessRunner(self.slurm_conf))

    def run(self, *argv: str) -> str:
        env = {**os.environ, "SLURM_CONF": self.slurm_conf}
        return subprocess.run(argv, env=env, capture_output=True, text=True, check=True, timeout=30).stdout
