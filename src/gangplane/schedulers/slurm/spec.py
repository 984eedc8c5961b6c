"""Sizing a group's Slurm job from its pods and annotations, and telling when it can never fit. Pure.

slurm-bridge's rules (reference slurm.md §A4, ``submitJob``): one task per node and one node per pod, so
``nodes = #pods`` (coscheduling: ``min = minMember``, ``max = #pods``); CPUs per task, memory per node and
GPUs per node are the maxima over the pods' requests; precedence defaults < derived from pods < the
``slurmjob.slinky.slurm.net/*`` annotations on the PodGroup. ``user-id`` and ``group-id`` are not applied:
``sbatch --uid`` needs the bridge to run as root and a local account (documented gap).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from gangplane.api.quantity import parse
from gangplane.api.scheduling.slurm import SlurmJobAnnotation as A
from gangplane.schedulers.slurm.cli import JobSpec, SlurmNode, gpu_count
from gangplane.schedulers.slurm.model import GroupView, PodView, job_comment

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
_MIB = 1024 * 1024
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})  # Go strconv.ParseBool
_DURATION = re.compile(r"^(\d+[smhdw])+$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def slurm_time(value: str) -> str:
    """The ``timelimit`` annotation as ``sbatch --time``: minutes, a duration (``90m``, ``1h30m``, rounded up
    to whole minutes) or a Slurm time passed through."""
    if _DURATION.match(value):
        seconds = sum(int(n) * _UNIT_SECONDS[u] for n, u in re.findall(r"(\d+)([smhdw])", value))
        return str(max(1, math.ceil(seconds / 60)))
    return value


def _cpus(millis: int) -> int:
    return max(1, math.ceil(millis / 1000))


def _megabytes(num_bytes: int) -> int:
    return math.ceil(num_bytes / _MIB)


def _annotation_int(annotations: Mapping[str, str], key: str) -> int | None:
    value = annotations.get(key, "")
    return int(value) if value.isdigit() else None


def _derived(pods: Sequence[PodView]) -> tuple[int, int, int]:
    """CPUs per task, MB per node, GPUs per node: maxima over the pods."""
    cpus = _cpus(max((p.cpu_millis for p in pods), default=0))
    memory = _megabytes(max((p.memory_bytes for p in pods), default=0))
    return cpus, memory, max((p.gpus for p in pods), default=0)


def _node_range(group: GroupView, count: int) -> tuple[int, int]:
    """``min-nodes`` never below the gang minimum: Slurm would start fewer nodes than pods the gang needs
    and the job would run (and finish) short of members — gangplane's rule; slurm-bridge passes it as is."""
    notes = group.annotations
    gang = min(max(group.min_member, 1), count)
    low = max(_annotation_int(notes, A.MIN_NODES) or gang, gang)
    high = _annotation_int(notes, A.MAX_NODES) or count
    return low, max(low, high)


def _overrides(notes: Mapping[str, str], cpus: int, memory: int, gpus: int) -> tuple[int, int, str]:
    if A.CPU_PER_TASK in notes:
        cpus = math.ceil(parse(notes[A.CPU_PER_TASK]))
    if A.MEM_PER_NODE in notes:
        memory = _megabytes(math.ceil(parse(notes[A.MEM_PER_NODE])))
    gres = notes.get(A.GRES) or (f"gpu:{gpus}" if gpus else "")
    return cpus, memory, gres


def job_spec(group: GroupView, pods: Sequence[PodView], default_partition: str) -> JobSpec:
    """The hold job for ``pods`` (the group's pending pods), one node per pod."""
    notes = group.annotations
    cpus, memory, gres = _overrides(notes, *_derived(pods))
    low, high = _node_range(group, len(pods))
    priority = _annotation_int(notes, A.PRIORITY)
    return JobSpec(
        name=notes.get(A.JOB_NAME) or str(group.ref),
        comment=job_comment(group.ref.namespace, group.ref.name, group.ref.uid),
        min_nodes=low,
        max_nodes=high,
        cpus_per_task=cpus,
        mem_per_node_mb=memory,
        gres=gres,
        partition=notes.get(A.PARTITION) or default_partition,
        account=notes.get(A.ACCOUNT, ""),
        qos=notes.get(A.QOS, ""),
        time_limit=slurm_time(notes[A.TIME_LIMIT]) if A.TIME_LIMIT in notes else "",
        exclusive=notes.get(A.EXCLUSIVE, "true") not in _FALSE,
        reservation=notes.get(A.RESERVATION, ""),
        constraints=notes.get(A.CONSTRAINTS, ""),
        licenses=notes.get(A.LICENSES, ""),
        wckey=notes.get(A.WCKEY, ""),
        priority=priority,
    )


def _shape(spec: JobSpec) -> str:
    parts = [f"{spec.cpus_per_task} CPUs"]
    if spec.mem_per_node_mb:
        parts.append(f"{spec.mem_per_node_mb} MB memory")
    if gpu_count(spec.gres):
        parts.append(f"{gpu_count(spec.gres)} GPUs")
    return ", ".join(parts)


def _fits(node: SlurmNode, spec: JobSpec) -> bool:
    return (
        node.cpus >= spec.cpus_per_task
        and node.memory_mb >= spec.mem_per_node_mb
        and node.gpus >= gpu_count(spec.gres)
    )


def never_fits(spec: JobSpec, nodes: Sequence[SlurmNode]) -> str | None:
    """Why ``spec`` can never be allocated in its partition, whatever else runs; None if it could (or if
    Slurm reported no nodes, so nothing can be judged). Node state is ignored: a down node may return."""
    if not nodes:
        return None
    members = [n for n in nodes if spec.partition in n.partitions]
    if not members:
        known = sorted({p for n in nodes for p in n.partitions})
        return f"partition {spec.partition} does not exist (Slurm has: {', '.join(known)})"
    if spec.min_nodes > len(members):
        return f"requested {spec.min_nodes} nodes; partition {spec.partition} has {len(members)}"
    fitting = sum(_fits(n, spec) for n in members)
    if fitting < spec.min_nodes:
        return (
            f"requested {spec.min_nodes} nodes with {_shape(spec)} each; only {fitting} of partition "
            f"{spec.partition}'s {len(members)} nodes have that much"
        )
    return None


__all__ = ["GPU_RESOURCES", "job_spec", "never_fits", "slurm_time"]
