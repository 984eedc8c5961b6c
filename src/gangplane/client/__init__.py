"""Talking to an API server: the in-process store or a remote Kubernetes API, behind the ``Store`` protocol,
plus the informer, work queue and controller loop every reconciler and scheduler shell is built on."""

from gangplane.client.controller import Controller, Manager, Reconciler, Result, controller_owner, own_key
from gangplane.client.informer import Informer, object_key
from gangplane.client.leader import LeaderElector, LeaseConfig
from gangplane.client.workqueue import WorkQueue

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
