"""``gangplane controller --kubeconfig FILE``: run the TrainJob controller against any API server.

On a real cluster the JobSet, Job and PodGroup controllers already exist, so this runs only what
``controllers.manager.build_trainjob_controller`` registers. With ``--leader-elect`` several replicas may
run; informers sync on all of them, workers run only on the one holding the Lease, and a replica that loses
the Lease exits (status 1) as controller-runtime does, to be restarted clean.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from types import FrameType
from typing import Annotated

import typer

from gangplane.cli.connect import ContextOption, KubeconfigOption, Target, err, reported
from gangplane.client.controller import Manager
from gangplane.client.leader import LeaderElector, LeaseConfig
from gangplane.clock import WallClock
from gangplane.controllers.manager import build_trainjob_controller

LEASE_NAME = "gangplane-trainjob-controller"
_log = logging.getLogger("gangplane.controller")


def identity() -> str:
    """This replica's name in the Lease: host and process, unique among live replicas."""
    return f"{socket.gethostname()}_{os.getpid()}"


def _stop_on_signals(stop: threading.Event) -> None:
    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, handler)


def _run_with_election(manager: Manager, config: LeaseConfig, stop: threading.Event) -> bool:
    """Campaign for the Lease until ``stop``; False when leadership was lost (the process should exit 1)."""
    lost = threading.Event()

    def on_stopped() -> None:
        _log.error("Leadership lost; stopping")
        lost.set()
        stop.set()

    elector = LeaderElector(
        manager.store, manager.clock, config, on_started=manager.start_workers, on_stopped=on_stopped
    )
    manager.start_informers()
    elector.start()
    _log.info("Campaigning for the lease %s/%s as %s", config.namespace, config.name, config.identity)
    stop.wait()
    elector.stop()
    return not lost.is_set()


def controller(
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    leader_elect: Annotated[
        bool, typer.Option("--leader-elect", help="Run workers only while holding the Lease.")
    ] = False,
    lease_namespace: Annotated[
        str | None,
        typer.Option("--leader-elect-namespace", help="Namespace of the Lease (default: the context's)."),
    ] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Concurrent reconciles.")] = 1,
) -> None:
    """Run the TrainJob controller against the cluster of a kubeconfig until interrupted."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    target = Target(kubeconfig, context)
    with reported(target):
        store = target.open()
    manager = Manager(store, WallClock())
    build_trainjob_controller(manager, workers=workers, served=store.served)
    stop = threading.Event()
    _stop_on_signals(stop)
    ok = True
    try:
        with reported(target):
            if leader_elect:
                config = LeaseConfig(lease_namespace or store.namespace, LEASE_NAME, identity())
                ok = _run_with_election(manager, config, stop)
            else:
                manager.start()
                _log.info("TrainJob controller started against %s", store.server)
                stop.wait()
    except TimeoutError as exc:
        err.print(f"error: {exc}", markup=False)
        ok = False
    finally:
        manager.stop()
        store.close()
    if not ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("controller")(controller)


__all__ = ["LEASE_NAME", "controller", "identity", "register"]
