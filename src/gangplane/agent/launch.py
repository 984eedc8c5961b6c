"""From a pod's container to the ``Launch`` of a local process (pure apart from the reader it is given).

The container's variables are resolved (``env.py``), the JobSet's pod hosts and rendezvous ports made local
(``names.py``), ``command``/``args`` expanded and rewritten the same way, and the result layered over the
agent's base environment (less its admin variables) with the pod's ``HOSTNAME``, the container's process
marker, the control plane's marker (``leftovers.CLUSTER_ENV``) and, on nodes that own real GPUs, the
container's ``CUDA_VISIBLE_DEVICES`` (empty for a container that asked for none, so it sees no GPU). The
pod's sandbox is the default working directory and its volumes appear at their ``mountPath`` (``sandbox.py``).
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gangplane.agent import sandbox
from gangplane.agent.env import ObjectReader, argv, container_env
from gangplane.agent.executable import PREFIX, missing_directory, missing_program
from gangplane.agent.leftovers import CLUSTER_ENV, cluster_id
from gangplane.agent.names import PortMap, job_identity, rewrite_args, rewrite_env
from gangplane.agent.nodes import GPU_RESOURCE
from gangplane.agent.process import Launch, StartError
from gangplane.agent.volumes import container_mounts
from gangplane.api.quantity import parse

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


@dataclass(frozen=True, slots=True)
class LaunchContext:
    """What the node contributes to every launch."""

    logs_dir: Path
    workdir: Path | None  # the working directory of a container without ``workingDir`` (None: the sandbox)
    base_env: Mapping[str, str]
    allocatable: Mapping[str, str]
    read: ObjectReader
    real_gpus: bool  # the node owns physical devices (set CUDA_VISIBLE_DEVICES)
    isolation: str = sandbox.PATH_MAPPING  # sandbox.NAMESPACE or sandbox.PATH_MAPPING
    state_root: Path | None = None  # the control plane's state directory (its admin files are hidden)


@dataclass(frozen=True, slots=True)
class PodPlace:
    """Where one pod lives on this host: its sandbox directory and its volumes' host paths."""

    sandbox: Path
    volumes: Mapping[str, Path]
    # Variables the node adds under the container's own: the API server's KUBERNETES_SERVICE_* (kubelet)
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    tables: Path | None = None  # where its containers' mount tables go (None: beside their logs)


def build_launch(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    ctx: LaunchContext,
    ports: PortMap,
    gpus: Sequence[int] = (),
    place: PodPlace | None = None,
) -> Launch:
    """The process for ``container`` of ``pod``; raises ``env.ConfigError`` when a reference is missing.
    With a ``place`` the container gets its pod's sandbox and volumes (``sandbox.py``)."""
    job = job_identity(pod)
    env = rewrite_env(container_env(pod, container, ctx.read, ctx.allocatable), job, ports)
    words = rewrite_args(argv(container, env), job, ports)
    meta = pod.get("metadata") or {}
    extra = {"HOSTNAME": str((pod.get("spec") or {}).get("hostname") or meta.get("name") or "")}
    if ctx.real_gpus:
        extra["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in gpus)
    if ctx.state_root is not None:  # `up` and `down` find what this control plane left running by it
        extra[CLUSTER_ENV] = cluster_id(ctx.state_root)
    name = str(container["name"])
    marker = sandbox.marker(str(meta.get("uid") or ""), name)
    working = str(container.get("workingDir") or "")
    default = ctx.workdir or (place.sandbox if place else Path.cwd())
    node_env = place.env if place else {}
    launch = Launch(
        argv=words,
        env={**sandbox.scrubbed(ctx.base_env), **node_env, **extra, **env, sandbox.MARKER_ENV: marker},
        cwd=Path(working) if working else default,
        log_path=log_path(ctx.logs_dir, pod, name),
        marker=marker,
        fallback_to_logs=container.get("terminationMessagePolicy") == "FallbackToLogsOnError",
    )
    return _placed(launch, container, ctx, place, default) if place is not None else launch


def _placed(
    launch: Launch, container: Mapping[str, Any], ctx: LaunchContext, place: PodPlace, default: Path
) -> Launch:
    """The launch with its volumes: bind-mounted in a mount namespace, or with mountPaths mapped."""
    mounts = container_mounts(container, place.volumes)
    working = str(container.get("workingDir") or "")
    _check_startable(launch, mounts, working, made=ctx.isolation == sandbox.NAMESPACE)
    if ctx.isolation == sandbox.NAMESPACE:
        hidden = sandbox.hidden_files(ctx.state_root) if ctx.state_root else []
        table = mount_table_path(launch, place, str(container["name"]))
        ns = sandbox.namespace(mounts, hidden, table, working)
        return dataclasses.replace(launch, namespace=ns, cwd=default)
    env = {k: sandbox.map_paths(v, mounts) for k, v in launch.env.items()}
    cwd = Path(sandbox.map_paths(working, mounts)) if working else default
    words = [sandbox.map_paths(w, mounts) for w in launch.argv]
    return dataclasses.replace(launch, argv=words, env=env, cwd=cwd)


def mount_table_path(launch: Launch, place: PodPlace, container: str) -> Path:
    """In the pod's memory directory (a dotted name is no volume's directory), else beside the log."""
    return place.tables / f"{container}.mounts" if place.tables else launch.log_path.with_suffix(".mounts")


def _check_startable(launch: Launch, mounts: Sequence[sandbox.Mount], working: str, *, made: bool) -> None:
    """Inside the wrappers a missing program or working directory would be the shell's exit 127 (or 2);
    find it first so it is a ``StartError`` as runc reports it (``executable.py``). Mounted paths are
    looked up at their host side; a working directory that mount points create (``made``: the namespace's
    mount script makes them) is let be, as what it holds is not there yet."""
    if made and working and any(m.target.startswith(working.rstrip("/") + "/") for m in mounts):
        return
    cwd = Path(sandbox.map_paths(working, mounts)) if working else launch.cwd
    reason = missing_directory(cwd, working)
    if reason is None and launch.argv:
        word = launch.argv[0]
        reason = missing_program(word, cwd, launch.env.get("PATH", ""), sandbox.map_paths(word, mounts))
    if reason is not None:
        raise StartError(PREFIX + reason)


def log_path(logs_dir: Path, pod: Mapping[str, Any], container: str) -> Path:
    """``<logs_dir>/<namespace>/<pod>/<container>.log``, where the API server's ``pods/log`` reads; names
    that are not Kubernetes names (and could leave ``logs_dir``) are refused."""
    meta = pod.get("metadata") or {}
    parts = (str(meta.get("namespace") or "default"), str(meta.get("name") or ""), container)
    for part in parts:
        if not _NAME.match(part):
            raise StartError(f"invalid name {part!r} for a log path")
    return logs_dir.joinpath(*parts[:2], f"{container}.log")


def memory_limit(container: Mapping[str, Any]) -> int | None:
    """``resources.limits.memory`` in bytes (None: unlimited)."""
    value = ((container.get("resources") or {}).get("limits") or {}).get("memory")
    return None if value is None else int(parse(str(value)))


def gpu_request(container: Mapping[str, Any]) -> int:
    """``nvidia.com/gpu`` from limits, else requests (extended resources must have them equal)."""
    resources = container.get("resources") or {}
    for given in (resources.get("limits") or {}, resources.get("requests") or {}):
        if GPU_RESOURCE in given:
            return int(parse(given[GPU_RESOURCE]))
    return 0


def container_gpus(pod: Mapping[str, Any], devices: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """The pod's devices dealt to its containers: regular containers get disjoint slices in order; init
    containers run before them and may reuse the first ones (kubelet device manager)."""
    spec = pod.get("spec") or {}
    out: dict[str, tuple[int, ...]] = {}
    for c in spec.get("initContainers") or []:
        out[str(c["name"])] = tuple(devices[: gpu_request(c)])
    offset = 0
    for c in spec.get("containers") or []:
        wanted = gpu_request(c)
        out[str(c["name"])] = tuple(devices[offset : offset + wanted])
        offset += wanted
    return out


def pod_gpus(pod: Mapping[str, Any]) -> int:
    """GPUs the pod needs at once: the regular containers' sum, or the largest init container."""
    spec = pod.get("spec") or {}
    regular = sum(gpu_request(c) for c in spec.get("containers") or [])
    return max([regular, *(gpu_request(c) for c in spec.get("initContainers") or [])])


class DevicePool:
    """The node's physical GPUs and which pod (uid) holds which. Thread-safe."""

    def __init__(self, devices: Sequence[int]) -> None:
        self._free = list(devices)
        self._held: dict[str, tuple[int, ...]] = {}
        self._lock = threading.Lock()

    def allocate(self, holder: str, count: int) -> tuple[int, ...] | None:
        """``count`` devices for ``holder`` (the same ones again if it holds some), or None if too few."""
        with self._lock:
            if holder in self._held:
                return self._held[holder]
            if count > len(self._free):
                return None
            taken, self._free = tuple(self._free[:count]), self._free[count:]
            self._held[holder] = taken
            return taken

    def release(self, holder: str) -> None:
        with self._lock:
            self._free = sorted([*self._free, *self._held.pop(holder, ())])

    def available(self) -> int:
        with self._lock:
            return len(self._free)
