"""The embedded control plane's HTTP API: a Kubernetes-compatible server on localhost for kubectl and
client libraries, over any ``Store`` backend."""

from gangplane.server.app import create_app
from gangplane.server.lifecycle import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    ServerStatus,
    default_state_dir,
    serve,
    start_background,
    status,
    stop,
)
from gangplane.server.resources import RESOURCE_TYPES, Registry, Served, default_registry

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
    "start_background",
    "status",
    "stop",
]
