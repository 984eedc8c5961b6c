"""Local name resolution for distributed jobs: every pod runs on this host, so the pod DNS names a JobSet
gives its pods all mean 127.0.0.1, and the well-known rendezvous port (torch's 29500) must differ between jobs.

A JobSet pod is addressed as ``<jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>`` (upstream
JobSet ``GenPodName`` plus the headless Service named after ``network.subdomain``, optionally followed by
``.<namespace>[.svc[.cluster.local]]``). Torch always uses the TrainJob (= JobSet) name as subdomain, whatever
``network.subdomain`` says (``runtime/plugins/common.py`` ``node0_address``). The rewrite maps every such host
to 127.0.0.1 and every port written next to it, or held by a known port variable, to one port per
``(namespace, jobset, port)`` from a ``PortAllocator`` shared by all agents, so the pods of one job agree.

Everything but ``PortAllocator`` is pure.
"""

from __future__ import annotations

import os
import random
import re
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gangplane.api.jobset import JOBSET_NAME_LABEL

LOCALHOST = "127.0.0.1"
# Variables holding a bare port number of the job's rendezvous endpoint (Torch, envInjection, XGBoost).
PORT_VARIABLES = frozenset({"PET_MASTER_PORT", "MASTER_PORT", "DMLC_TRACKER_PORT"})

PortMap = Callable[[int], int]


@dataclass(frozen=True, slots=True)
class JobIdentity:
    """The distributed job a pod belongs to, as far as its addresses go."""

    namespace: str
    jobset: str
    subdomains: tuple[str, ...]

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.jobset


def job_identity(pod: Mapping[str, Any]) -> JobIdentity | None:
    """The JobSet of a pod (by its ``jobset-name`` label), or None for a pod outside any JobSet."""
    meta = pod.get("metadata") or {}
    jobset = (meta.get("labels") or {}).get(JOBSET_NAME_LABEL)
    if not jobset:
        return None
    subdomain = (pod.get("spec") or {}).get("subdomain") or jobset
    subdomains = tuple(dict.fromkeys((subdomain, jobset)))
    return JobIdentity(str(meta.get("namespace") or "default"), str(jobset), subdomains)


def host_pattern(job: JobIdentity) -> re.Pattern[str]:
    """Matches ``<pod host>[:port]`` for the job's pods; group ``port`` holds the port if written."""
    subdomains = "|".join(re.escape(s) for s in job.subdomains)
    namespace = re.escape(job.namespace)
    return re.compile(
        rf"(?<![-.\w]){re.escape(job.jobset)}-[a-z0-9]([-a-z0-9]*[a-z0-9])?-\d+-\d+"
        rf"\.(?:{subdomains})(?:\.{namespace}(?:\.svc(?:\.cluster\.local)?)?)?\.?"
        rf"(?::(?P<port>\d{{1,5}}))?(?![-\w])"
    )


def rewrite_text(text: str, pattern: re.Pattern[str], ports: PortMap) -> str:
    """Every job host in ``text`` becomes 127.0.0.1, its port (if any) the job's local port."""

    def local(match: re.Match[str]) -> str:
        port = match.group("port")
        return LOCALHOST if port is None else f"{LOCALHOST}:{ports(int(port))}"

    return pattern.sub(local, text)


def rewrite_env(env: Mapping[str, str], job: JobIdentity | None, ports: PortMap) -> dict[str, str]:
    """The environment a local process of ``job`` gets: hosts and rendezvous ports made local."""
    if job is None:
        return dict(env)
    hosts = _JobHosts(job, ports)
    return {name: _rewrite_value(name, value, hosts, ports) for name, value in env.items()}


def _rewrite_value(name: str, value: str, hosts: _JobHosts, ports: PortMap) -> str:
    if name in PORT_VARIABLES and value.strip().isdigit():
        return str(ports(int(value)))
    return hosts.rewrite(value)


def rewrite_args(args: list[str], job: JobIdentity | None, ports: PortMap) -> list[str]:
    """Command and args with job hosts made local (torchtune's ``--rdzv_endpoint=<host>:29500``)."""
    if job is None:
        return list(args)
    hosts = _JobHosts(job, ports)
    return [hosts.rewrite(arg) for arg in args]


class _JobHosts:
    """``rewrite_text`` for one job's texts, its pattern compiled only for a text that names the job.

    Every job host starts with ``<jobset>-``, so a text without it is left as it is without a pattern: most
    texts, and all of a job whose pods are given no host address. Each compiled pattern (one per job) stays in
    ``re``'s module cache until 512 newer ones push it out, ~1 MiB of the agents' memory once that is full."""

    def __init__(self, job: JobIdentity, ports: PortMap) -> None:
        self._job, self._ports = job, ports
        self._pattern: re.Pattern[str] | None = None

    def rewrite(self, text: str) -> str:
        if f"{self._job.jobset}-" not in text:
            return text
        if self._pattern is None:
            self._pattern = host_pattern(self._job)
        return rewrite_text(text, self._pattern, self._ports)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOCALHOST, 0))
        return int(sock.getsockname()[1])


# Linux hands out ephemeral ports from 32768 up (net.ipv4.ip_local_port_range), so a job port picked there is
# free when checked but may be taken by any outgoing connection (gloo opens many) before torchrun binds it;
# job ports therefore come from below that range.
JOB_PORTS = range(20000, 32768)


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((LOCALHOST, port))
        except OSError:
            return False
    return True


class FreeJobPorts:
    """Proposes free ports from ``JOB_PORTS`` in a seeded random order (several agent processes on one
    machine rarely propose the same one); falls back to the kernel's choice if the range seems full."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random(os.getpid())

    def __call__(self) -> int:
        for _ in range(200):
            port = self._rng.choice(JOB_PORTS)
            if _bindable(port):
                return port
        return free_port()


class PortAllocator:
    """One local port per ``(namespace, jobset, declared port)``, held while any pod of the job holds it.

    Thread-safe; share one between every agent of a process so the pods of a job agree on their ports.
    ``pick`` (injectable for tests) proposes candidate ports; a port already handed out is never reused
    while held."""

    def __init__(self, pick: Callable[[], int] | None = None) -> None:
        self._pick = pick or FreeJobPorts()
        self._ports: dict[tuple[str, str, int], int] = {}
        self._holders: dict[tuple[str, str], set[str]] = {}
        self._lock = threading.Lock()

    def port(self, job: tuple[str, str], declared: int, holder: str) -> int:
        """The local port standing for ``declared`` in ``job``; ``holder`` (a pod uid) now holds the job."""
        with self._lock:
            self._holders.setdefault(job, set()).add(holder)
            key = (*job, declared)
            if key not in self._ports:
                self._ports[key] = self._fresh_port()
            return self._ports[key]

    def _fresh_port(self) -> int:
        taken = set(self._ports.values())
        for _ in range(100):
            candidate = self._pick()
            if candidate not in taken:
                return candidate
        raise RuntimeError("no free local port found")

    def release(self, job: tuple[str, str], holder: str) -> None:
        """``holder`` is gone; the job's ports are freed when no holder remains."""
        with self._lock:
            holders = self._holders.get(job, set())
            holders.discard(holder)
            if holders:
                return
            self._holders.pop(job, None)
            for key in [k for k in self._ports if k[:2] == job]:
                del self._ports[key]

    def held(self) -> dict[tuple[str, str, int], int]:
        with self._lock:
            return dict(self._ports)

    def port_map(self, job: tuple[str, str], holder: str) -> PortMap:
        return lambda declared: self.port(job, declared, holder)
