"""How the node agent runs an MPI job's pods on one machine without SSH (pure; docs/mpi.md).

An OpenMPI runtime (``deepspeed-distributed``, ``mlx-distributed``) runs ``sshd`` in its ``node`` pods and
``mpirun`` in its launcher, which reaches them over SSH. On gangplane every pod is a process group on this
host, so the agent adapts two kinds of container when it starts them (the runtime and the pod stay as written):

- a JobSet pod's container whose command is ``sshd`` runs gangplane's remote-shell daemon instead
  (``rsh_server.py``), serving a Unix socket named after the pod's host; its ``tcpSocket`` readiness probe
  (sshd's port) becomes a check that the socket exists;
- every container of an MPI pod (one that mounts the job's SSH Secret, ``authorized_keys`` among its items)
  gets ``OMPI_MCA_plm_rsh_agent`` set to gangplane's remote-shell agent (``rsh.py``), which OpenMPI runs as
  ``<agent> <host> <command>`` in place of ``ssh``, plus where the sockets and the key are.

Settings a single machine needs come first, so a container's own values win: loopback for OpenMPI's TCP
transports and torch's gloo (every "host" is this machine), no shared-memory topology hole
(``rtc_hwloc_vmhole``: with several ``orted`` on one machine Debian's OpenMPI 4.1 crashes while mapping it),
and, when the agent runs as root (pods do not switch users), ``OMPI_ALLOW_RUN_AS_ROOT`` since a runtime's
``runAsUser`` is not applied.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any

from gangplane.agent.env import ConfigError
from gangplane.agent.names import job_identity

SOCKET_ENV, KEYS_ENV = "GANGPLANE_RSH_SOCKET", "GANGPLANE_RSH_KEYS"
DIR_ENV, NAMESPACE_ENV = "GANGPLANE_RSH_DIR", "GANGPLANE_RSH_NAMESPACE"
RSH_AGENT_ENV = "OMPI_MCA_plm_rsh_agent"
MODULE = "gangplane.agent.rsh"
SERVE_FLAG = "--serve"
MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the terminating NUL

SINGLE_MACHINE_ENV = {
    "OMPI_MCA_btl_tcp_if_include": "lo",
    "OMPI_MCA_oob_tcp_if_include": "lo",
    "OMPI_MCA_rtc_hwloc_vmhole": "none",
    "GLOO_SOCKET_IFNAME": "lo",  # torch's gloo would look up the pod's host name, which resolves nowhere
}
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def host_key(host: str, namespace: str) -> str:
    """``<hostname>.<subdomain>`` of a pod host name as a JobSet pod is addressed, lower case, without the
    ``.<namespace>[.svc[.cluster.local]]`` suffix or a trailing dot."""
    name = host.strip().rstrip(".").lower()
    for suffix in (f".{namespace}.svc.cluster.local", f".{namespace}.svc", f".{namespace}"):
        if name.endswith(suffix) and name.count(".") > suffix.count("."):
            return name[: -len(suffix)]
    return name


def socket_path(rsh_dir: Path, namespace: str, key: str) -> Path:
    """The daemon socket of the pod with host ``key`` (hashed: a socket path must stay under 108 bytes)."""
    digest = hashlib.sha256(f"{namespace}/{key}".encode()).hexdigest()[:24]
    return rsh_dir / f"{digest}.sock"


def pod_host(pod: Mapping[str, Any]) -> str | None:
    """The pod's own ``<hostname>.<subdomain>``, or None for a pod without a subdomain."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    subdomain = spec.get("subdomain")
    return f"{spec.get('hostname') or meta.get('name')}.{subdomain}".lower() if subdomain else None


def ssh_keys_dir(pod: Mapping[str, Any], container: Mapping[str, Any]) -> str | None:
    """Where the container mounts a Secret volume that carries ``authorized_keys`` (the MPI SSH Secret)."""
    volumes = {str(v.get("name")): v for v in (pod.get("spec") or {}).get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        secret = (volumes.get(str(mount.get("name"))) or {}).get("secret") or {}
        if any(item.get("path") == "authorized_keys" for item in secret.get("items") or []):
            return str(mount.get("mountPath"))
    return None


def is_sshd(container: Mapping[str, Any]) -> bool:
    command = container.get("command") or container.get("args") or []
    return bool(command) and PurePath(str(command[0])).name == "sshd"


def agent_command(python: str) -> list[str]:
    return [python, "-m", MODULE]


def adapt(
    pod: Mapping[str, Any], container: Mapping[str, Any], rsh_dir: Path, python: str, root: bool
) -> dict[str, Any]:
    """The container as the agent runs it (a copy); unchanged for anything but an MPI pod's container."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    host, keys = pod_host(pod), ssh_keys_dir(pod, container)
    if job_identity(pod) is None or host is None or keys is None:
        return dict(container)
    sock = str(socket_path(rsh_dir, namespace, host))
    if len(sock.encode()) > MAX_SOCKET_PATH:
        raise ConfigError(f"remote-shell socket path {sock!r} is too long for a Unix socket")
    ours = {
        RSH_AGENT_ENV: " ".join(agent_command(python)),
        DIR_ENV: str(rsh_dir),
        NAMESPACE_ENV: namespace,
        KEYS_ENV: keys,
        SOCKET_ENV: sock,
    }
    defaults = SINGLE_MACHINE_ENV | (ROOT_ENV if root else {})
    env = [*_env(defaults), *(container.get("env") or []), *_env(ours)]
    adapted = {**container, "env": env}
    if is_sshd(container):
        adapted |= {"command": [*agent_command(python), SERVE_FLAG], "args": []}
        adapted |= _probes(container, sock)
    return adapted


def _env(values: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v.replace("$", "$$")} for k, v in values.items()]


def _probes(container: Mapping[str, Any], sock: str) -> dict[str, Any]:
    """sshd's ``tcpSocket`` probes ask whether the daemon listens: the socket file exists only then."""
    out = {}
    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
        probe = container.get(kind)
        if isinstance(probe, dict) and "tcpSocket" in probe:
            given = {k: v for k, v in probe.items() if k != "tcpSocket"}
            out[kind] = {**given, "exec": {"command": ["test", "-S", sock]}}
    return out


def in_own_hostname(argv: list[str], hostname: str) -> list[str]:
    """``argv`` in a new UTS namespace whose host name is ``hostname`` (``unshare`` and ``sh`` exec in place)."""
    return ["unshare", "--uts", "--", "/bin/sh", "-c", 'hostname "$0" && exec "$@"', hostname, *argv]


def is_root() -> bool:
    return os.name == "posix" and os.geteuid() == 0
