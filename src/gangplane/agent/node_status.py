"""The Node ``status`` a kubelet reports (``pkg/kubelet/nodestatus/setters.go``), from this host's facts.

``host_facts`` reads the host once (machine id, boot id, kernel, OS image, architecture); ``node_status`` is
pure over them: every ``nodeInfo`` field (clients such as the official Python ``kubernetes`` package refuse
a Node without them), ``addresses``, ``capacity``/``allocatable`` (nothing reserved for system daemons),
the pressure conditions and ``Ready`` with the kubelet's reasons and messages, and ``daemonEndpoints``
(port 0: no kubelet API is served; logs come through the API server's ``pods/log``).
"""

from __future__ import annotations

import functools
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gangplane

# The Kubernetes version the API server reports (``server/discovery.py`` ``KUBERNETES_VERSION``).
KUBELET_VERSION = f"v1.32.0+gangplane-{gangplane.__version__}"
RUNTIME_VERSION = f"gangplane://{gangplane.__version__}"
_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x"}

# (type, status, reason, message) as the kubelet's setters write them.
PRESSURE_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)
READY = ("Ready", "True", "KubeletReady", "kubelet is posting ready status")


@dataclass(frozen=True, slots=True)
class HostFacts:
    machine_id: str
    system_uuid: str
    boot_id: str
    kernel_version: str
    os_image: str
    architecture: str


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _os_image() -> str:
    for line in _read("/etc/os-release").splitlines():
        key, _, value = line.partition("=")
        if key == "PRETTY_NAME":
            return value.strip().strip('"')
    return platform.platform()


@functools.cache
def host_facts() -> HostFacts:
    machine_id = _read("/etc/machine-id") or _read("/var/lib/dbus/machine-id")
    return HostFacts(
        machine_id=machine_id,
        system_uuid=_read("/sys/class/dmi/id/product_uuid") or machine_id,
        boot_id=_read("/proc/sys/kernel/random/boot_id"),
        kernel_version=platform.release(),
        os_image=_os_image(),
        architecture=_ARCH.get(platform.machine(), platform.machine()),
    )


def node_info(facts: HostFacts) -> dict[str, str]:
    return {
        "architecture": facts.architecture,
        "bootID": facts.boot_id,
        "containerRuntimeVersion": RUNTIME_VERSION,
        "kernelVersion": facts.kernel_version,
        "kubeProxyVersion": "",  # deprecated upstream, and there is no kube-proxy here
        "kubeletVersion": KUBELET_VERSION,
        "machineID": facts.machine_id,
        "operatingSystem": "linux",
        "osImage": facts.os_image,
        "systemUUID": facts.system_uuid,
    }


def conditions(now: str) -> list[dict[str, str]]:
    return [
        {
            "type": t,
            "status": s,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
            "reason": r,
            "message": m,
        }
        for t, s, r, m in (*PRESSURE_CONDITIONS, READY)
    ]


def node_status(
    name: str, address: str, capacity: dict[str, str], facts: HostFacts, now: str
) -> dict[str, Any]:
    return {
        "capacity": dict(capacity),
        "allocatable": dict(capacity),
        "conditions": conditions(now),
        "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
        "nodeInfo": node_info(facts),
        "images": [],
    }
