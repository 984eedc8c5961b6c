"""Connection settings from a kubeconfig, read with lightkube: server URL, CA, token or client certificate.

lightkube resolves the context, the cluster's CA (file or inline data), bearer tokens, token files, exec
plugins and client certificates, and builds the ``httpx2`` arguments; this module only adds what a
long-running, multi-threaded store needs (a connection pool without a cap, so open watches never starve
ordinary requests) and keeps lightkube's types out of the rest of gangplane.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from lightkube.config.client_adapter import ConnectionParams
from lightkube.config.kubeconfig import KubeConfig
from lightkube.config.models import User
from lightkube.core.exceptions import ConfigError

from gangplane.errors import GangplaneError

DEFAULT_TIMEOUT = 30.0


class KubeconfigError(GangplaneError):
    """A kubeconfig that is missing, unreadable or names an unknown context."""


@dataclass(frozen=True, slots=True)
class Connection:
    """Where to reach an API server and as whom: the ``httpx2.Client`` arguments and the context's namespace."""

    server: str
    namespace: str
    context: str
    client_args: dict[str, Any]

    def client(self, transport: httpx2.BaseTransport | None = None) -> httpx2.Client:
        limits = httpx2.Limits(max_connections=None, max_keepalive_connections=32)
        args = {**self.client_args, "limits": limits}
        if transport is not None:
            args["transport"] = transport
        return httpx2.Client(**args)


def load_connection(
    path: str | Path | None = None, context: str | None = None, *, timeout: float = DEFAULT_TIMEOUT
) -> Connection:
    """The connection of ``context`` (default: the current one) in the kubeconfig at ``path`` (default: the
    in-cluster service account, then ``$KUBECONFIG``, then ``~/.kube/config``, as lightkube resolves it)."""
    try:
        config = KubeConfig.from_file(path) if path is not None else KubeConfig.from_env()
        single = config.get(context_name=context)
        if single is None:
            raise ConfigError("no current context set")
        if single.user is None:  # lightkube asserts a user exists; a context without one is anonymous
            single = single._replace(user=User())
        params = ConnectionParams(timeout=httpx2.Timeout(timeout))
        args = params.httpx_params(single)
    except ConfigError as exc:
        raise KubeconfigError(f"kubeconfig {path or '(default)'}: {exc}") from None
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise KubeconfigError(f"kubeconfig {path or '(default)'}: {type(exc).__name__}: {exc}") from None
    return Connection(single.cluster.server, single.namespace, single.context_name, args)


def token_connection(
    server: str, ca_file: Path, token: str, *, timeout: float = DEFAULT_TIMEOUT
) -> Connection:
    """A connection to ``server`` (trusting the CA in ``ca_file``) as the holder of bearer ``token``: a
    kubeconfig that never touches the disk, for a process handed its credential by the one that started it."""
    context = "in-memory"
    conf = {
        "clusters": [{"name": context, "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
        "users": [{"name": context, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
    }
    single = KubeConfig.from_dict(conf).get()
    assert single is not None  # the one context above is the current one
    args = ConnectionParams(timeout=httpx2.Timeout(timeout)).httpx_params(single)
    return Connection(server, single.namespace, context, args)


__all__ = ["DEFAULT_TIMEOUT", "Connection", "KubeconfigError", "load_connection", "token_connection"]
