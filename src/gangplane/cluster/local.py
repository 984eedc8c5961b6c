"""``LocalCluster``: everything a real cluster runs besides the API server, in this process.

- the controllers (TrainJob, JobSet, Job, KAI pod-grouper, namespace lifecycle, PV/PVC binding, each
  namespace's default ServiceAccount and root CA) on one ``Manager``;
- the embedded Kueue (TrainJobs labelled ``kueue.x-k8s.io/queue-name``), with Kueue's metrics;
- the scheduler loop with every embedded scheduler, routed by ``spec.schedulerName``;
- one node agent per configured node, running bound pods as local process groups (unless ``run_agents`` is
  false: ``gangplane up --agents process`` runs them in a process of their own, ``cluster/agents.py``);
- the Slurm Bridge (``slurm-bridge-scheduler``), when given a real Slurm to talk to;
- Event expiry after ``event_ttl`` seconds (kube-apiserver's ``--event-ttl``).

Start order: nodes register first (so the schedulers see capacity), then controllers and schedulers. Stop
order is the reverse of what could create work: controllers and schedulers first (nothing recreates pods),
then the agents, which stop every process group they started.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry

from gangplane.agent.nodes import ClusterConfig
from gangplane.agent.pool import AgentPool
from gangplane.client.controller import Manager
from gangplane.clock import Clock
from gangplane.cluster.namespaces import namespace_controller
from gangplane.controllers.event_ttl import DEFAULT_TTL, EventExpiry
from gangplane.controllers.manager import build_controllers
from gangplane.controllers.node_eviction import EvictionRates
from gangplane.controllers.node_health import NODE_MONITOR_GRACE_SECONDS
from gangplane.controllers.podgrouper import build_podgrouper_controller
from gangplane.controllers.pv_controller import build_pv_controllers
from gangplane.controllers.serviceaccounts import build_serviceaccounts_controller, ca_file
from gangplane.schedulers.kueue import build_kueue_controller
from gangplane.schedulers.loop import SchedulerLoop
from gangplane.schedulers.registry import SchedulerRegistry, default_registry
from gangplane.schedulers.slurm import SlurmCli, build_slurm_bridge
from gangplane.store.base import Store


class LocalCluster:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        config: ClusterConfig,
        logs_dir: Path,
        *,
        schedulers: SchedulerRegistry | None = None,
        workdir: Path | None = None,
        scheduler_period: float = 1.0,
        slurm: SlurmCli | None = None,
        event_ttl: float = DEFAULT_TTL,
        run_agents: bool = True,
        node_monitor_grace: float = NODE_MONITOR_GRACE_SECONDS,
        eviction_rates: EvictionRates | None = None,
    ) -> None:
        self.store, self.clock = store, clock
        self.metrics = CollectorRegistry()
        self.manager = Manager(store, clock)
        self.kueue = build_kueue_controller(store, clock, self.metrics)
        controllers = build_controllers(
            self.manager,
            positions=self.kueue.reconciler,
            node_monitor_grace=node_monitor_grace,
            eviction_rates=eviction_rates,
        )
        trainjobs = controllers[0]  # "N workloads ahead"
        self.kueue.reconciler.on_position_changed = trainjobs.enqueue
        build_podgrouper_controller(self.manager)  # KAI's pod-grouper; a real cluster runs KAI's own
        namespace_controller(self.manager)
        build_pv_controllers(self.manager, logs_dir.parent / "claims")  # PVC/PV binding, local provisioning
        build_serviceaccounts_controller(
            self.manager, ca_file(logs_dir.parent / "tls.crt")
        )  # default SA, root CA
        self.kueue.register(self.manager)
        self.scheduler = SchedulerLoop(
            store, clock, (schedulers or default_registry()).build(), period=scheduler_period
        )
        # without them here, the node agents run in a process of their own (cluster/agents.py)
        self.agents = AgentPool(store, clock, config, logs_dir, workdir=workdir) if run_agents else None
        self.expiry = EventExpiry(store, clock, event_ttl)  # kube-apiserver's --event-ttl
        self.slurm = build_slurm_bridge(store, clock, slurm, manager=self.manager) if slurm else None
        self._running: list[str] = []

    def start(self, timeout: float = 30.0) -> None:
        if self.agents is not None:
            self.agents.start(timeout)
            self._running.append("agents")
        self.manager.start(timeout)
        self._running.append("manager")
        self.scheduler.start(timeout)
        self._running.append("scheduler")
        self.expiry.start()
        self._running.append("expiry")
        if self.slurm is not None:
            self.slurm.start()
            self._running.append("slurm")

    def stop(self) -> None:
        for part in reversed(self._running):
            getattr(self, part).stop()
        self._running.clear()

    @contextlib.contextmanager
    def running(self) -> Iterator[LocalCluster]:
        try:
            self.start()
            yield self
        finally:
            self.stop()


__all__ = ["LocalCluster"]
