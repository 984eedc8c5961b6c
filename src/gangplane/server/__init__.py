"""The embedded control plane's HTTP API: a Kubernetes-compatible server on localhost for kubectl and
client libraries, over any ``Store`` backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gangplane.lazy import exports

if TYPE_CHECKING:
    from gangplane.server.app import create_app
    from gangplane.server.lifecycle import (
        DEFAULT_HOST,
        DEFAULT_PORT,
        ServerStatus,
        default_state_dir,
        serve,
        status,
    )
    from gangplane.server.resources import RESOURCE_TYPES, Registry, Served, default_registry

_EXPORTS = {
    "create_app": "gangplane.server.app",
    "DEFAULT_HOST": "gangplane.server.lifecycle",
    "DEFAULT_PORT": "gangplane.server.lifecycle",
    "ServerStatus": "gangplane.server.lifecycle",
    "default_state_dir": "gangplane.server.lifecycle",
    "serve": "gangplane.server.lifecycle",
    "status": "gangplane.server.lifecycle",
    "RESOURCE_TYPES": "gangplane.server.resources",
    "Registry": "gangplane.server.resources",
    "Served": "gangplane.server.resources",
    "default_registry": "gangplane.server.resources",
}


__getattr__ = exports(__name__, _EXPORTS)

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "RESOURCE_TYPES",
    "Registry",
    "Served",
    "ServerStatus",
    "create_app",
    "default_registry",
    "default_state_dir",
    "serve",
    "status",
]
