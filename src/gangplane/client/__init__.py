"""Talking to an API server: the in-process store or a remote Kubernetes API, behind the ``Store`` protocol,
plus the informer, work queue and controller loop every reconciler and scheduler shell is built on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gangplane.lazy import exports

if TYPE_CHECKING:
    from gangplane.client.controller import Controller, Manager, Reconciler, Result, controller_owner, own_key
    from gangplane.client.informer import Informer, object_key
    from gangplane.client.leader import LeaderElector, LeaseConfig
    from gangplane.client.workqueue import WorkQueue

_EXPORTS = {
    "Controller": "gangplane.client.controller",
    "Manager": "gangplane.client.controller",
    "Reconciler": "gangplane.client.controller",
    "Result": "gangplane.client.controller",
    "controller_owner": "gangplane.client.controller",
    "own_key": "gangplane.client.controller",
    "Informer": "gangplane.client.informer",
    "object_key": "gangplane.client.informer",
    "LeaderElector": "gangplane.client.leader",
    "LeaseConfig": "gangplane.client.leader",
    "WorkQueue": "gangplane.client.workqueue",
}


__getattr__ = exports(__name__, _EXPORTS)

__all__ = [
    "Controller",
    "Informer",
    "LeaderElector",
    "LeaseConfig",
    "Manager",
    "Reconciler",
    "Result",
    "WorkQueue",
    "controller_owner",
    "object_key",
    "own_key",
]
