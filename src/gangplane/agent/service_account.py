"""A pod's way to the API, as the kubelet gives it: the service-account token volume and the ``kubernetes``
Service's variables.

Kubernetes' ServiceAccount admission adds a projected ``kube-api-access-*`` volume (token, ``ca.crt``,
``namespace``) mounted read-only at ``/var/run/secrets/kubernetes.io/serviceaccount`` in every container,
unless ``automountServiceAccountToken`` is false on the pod (or, when the pod does not say, on its
ServiceAccount); the kubelet adds ``KUBERNETES_SERVICE_HOST``/``PORT`` for the ``kubernetes`` Service
(``pkg/kubelet/envvars``). Here the node agent does both when the pod starts, so the official clients'
in-cluster configuration (``load_incluster_config()``, ``rest.InClusterConfig``) works in a pod:

- the token is ``api/serviceaccount_token.py``'s, signed with the key derived from the control plane's admin
  token, bound to the pod (and the ServiceAccount's uid when it exists); the same token every time it is
  written for one pod; a projected ``serviceAccountToken`` source gets one for its ``audience``
  (``token_source``);
- ``ca.crt`` is the API server's certificate, ``namespace`` the pod's namespace;
- host and port come from the control plane's kubeconfig in its state directory.

A cluster with no API server (an in-process test cluster: no token or kubeconfig in its state directory)
gives pods neither. The stored pod spec does not show the volume (docs/nodes.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from gangplane.agent.env import ObjectReader
from gangplane.agent.volumes import (
    CONFIGMAP_MODE,
    SECRET_MODE,
    SERVICE_ACCOUNT_MOUNT,
    SERVICE_ACCOUNT_VOLUME,
    TokenSource,
    write_atomically,
)
from gangplane.api import serviceaccount_token as sat
from gangplane.clock import parse_rfc3339

__all__ = [
    "SERVICE_ACCOUNT_MOUNT",
    "SERVICE_ACCOUNT_VOLUME",
    "ApiAccess",
    "ApiEndpoint",
    "service_account_dir",
]
_WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "::": "::1"}


@dataclass(frozen=True, slots=True)
class ApiAccess:
    """Where pods reach the API server, what they trust, and the key their tokens are signed with."""

    host: str
    port: int
    ca_pem: bytes
    key: bytes

    def env(self) -> dict[str, str]:
        """The ``kubernetes`` Service's variables, as the kubelet writes them for every container."""
        host, port = self.host, str(self.port)
        url = f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"
        tcp = f"KUBERNETES_PORT_{port}_TCP"
        return {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port,
                "KUBERNETES_SERVICE_PORT_HTTPS": port, "KUBERNETES_PORT": url, tcp: url,
                f"{tcp}_PROTO": "tcp", f"{tcp}_PORT": port, f"{tcp}_ADDR": host}  # fmt: skip


def load_access(state_root: Path) -> ApiAccess | None:
    """The control plane's endpoint from its state directory (None while it has no kubeconfig yet, or
    none at all)."""
    try:
        config = yaml.safe_load((state_root / "kubeconfig").read_text())
        url = urlsplit(str(config["clusters"][0]["cluster"]["server"]))
        admin = (state_root / "token").read_text().strip()
        ca_pem = (state_root / "tls.crt").read_bytes()
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError):
        return None
    if not admin or url.hostname is None or url.port is None:
        return None
    host = _WILDCARD_HOSTS.get(url.hostname, url.hostname)
    return ApiAccess(host, url.port, ca_pem, sat.signing_key(admin))


class ApiEndpoint:
    """``load_access`` once it succeeds (the agent starts before the server writes its kubeconfig)."""

    def __init__(self, state_root: Path | None) -> None:
        self._root = state_root
        self._found: ApiAccess | None = None

    def get(self) -> ApiAccess | None:
        if self._found is None and self._root is not None:
            self._found = load_access(self._root)
        return self._found


def account_name(pod: Mapping[str, Any]) -> str:
    spec = pod.get("spec") or {}
    return str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")


def automount(pod: Mapping[str, Any], account: Mapping[str, Any] | None) -> bool:
    """The pod's ``automountServiceAccountToken`` wins; unset, the ServiceAccount's; unset there too, true."""
    given = (pod.get("spec") or {}).get("automountServiceAccountToken")
    if given is None and account is not None:
        given = account.get("automountServiceAccountToken")
    return given is not False


def binding(pod: Mapping[str, Any], account: Mapping[str, Any] | None) -> sat.Binding:
    meta = pod.get("metadata") or {}
    sa_uid = str(((account or {}).get("metadata") or {}).get("uid") or "")
    namespace = str(meta.get("namespace") or "default")
    return sat.Binding(
        namespace, account_name(pod), str(meta.get("name") or ""), str(meta.get("uid")), sa_uid
    )


def pod_token(pod: Mapping[str, Any], account: Mapping[str, Any] | None, access: ApiAccess,
              audience: str = sat.API_AUDIENCE) -> str:  # fmt: skip
    """The pod's token for ``audience``: the same whenever it is asked for (issued at the pod's creation,
    ``jti`` derived from the binding), so refreshing a volume does not rewrite it."""
    bound = binding(pod, account)
    created = str((pod.get("metadata") or {}).get("creationTimestamp") or "")
    issued = parse_rfc3339(created) if created else 0.0
    return sat.issue(access.key, bound, issued, sat.token_id(access.key, bound, audience), audience)


def token_source(pod: Mapping[str, Any], read: ObjectReader, access: ApiAccess | None) -> TokenSource | None:
    """What a projected ``serviceAccountToken`` source of this pod gets (None: no API server to mint for)."""
    if access is None:
        return None
    account = read("serviceaccounts", namespace_of(pod), account_name(pod))
    return lambda audience: pod_token(pod, account, access, audience or sat.API_AUDIENCE)


def namespace_of(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("namespace") or "default")


def service_account_dir(
    pod: Mapping[str, Any], sandbox: Path, read: ObjectReader, access: ApiAccess | None
) -> Path | None:
    """The pod's token volume in its sandbox (rewritten only when its content changes), or None when the pod
    gets none (no API server, or automount turned off)."""
    account = read("serviceaccounts", namespace_of(pod), account_name(pod))
    if access is None or not automount(pod, account):
        return None
    folder = sandbox / "serviceaccount"
    files = {
        "token": (pod_token(pod, account, access).encode(), SECRET_MODE),
        "ca.crt": (access.ca_pem, CONFIGMAP_MODE),
        "namespace": (namespace_of(pod).encode(), CONFIGMAP_MODE),
    }
    write_atomically(folder, files)
    return folder


def service_account_volume(
    pod: Mapping[str, Any], sandbox: Path, read: ObjectReader, access: ApiAccess | None
) -> dict[str, Path]:
    """The token volume among the pod's volumes (empty when it gets none)."""
    folder = service_account_dir(pod, sandbox, read, access)
    return {} if folder is None else {SERVICE_ACCOUNT_VOLUME: folder}
