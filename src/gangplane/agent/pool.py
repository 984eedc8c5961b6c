"""Every node of a ``ClusterConfig`` as one ``NodeAgent`` in this process, sharing one ``PortAllocator``.

``start`` registers all nodes before any agent runs pods; ``stop`` stops every agent, and with it every
process group they started, so nothing is left behind when the embedded cluster shuts down. One
``Supervisor`` (one thread) watches and stops the containers of every node.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gangplane.agent.agent import NodeAgent
from gangplane.agent.images_build import EnvironmentCache, cache_dir
from gangplane.agent.images_prepare import ImageEnvironments
from gangplane.agent.names import PortAllocator
from gangplane.agent.nodes import ClusterConfig, node_specs
from gangplane.agent.supervisor import Supervisor
from gangplane.clock import Clock
from gangplane.store.base import Store

_STOPPERS = 32  # agents stopped at once: each only waits for its processes, which the supervisor stops


class AgentPool:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        config: ClusterConfig,
        logs_dir: Path,
        *,
        ports: PortAllocator | None = None,
        workdir: Path | None = None,
        base_env: Mapping[str, str] | None = None,
        heartbeat_seconds: float = 10.0,
        stop_grace_seconds: float = 5.0,
        isolation: str | None = None,
    ) -> None:
        self.ports = ports or PortAllocator()
        self.images = ImageEnvironments(config.images, EnvironmentCache(cache_dir(logs_dir.parent)))
        self.supervisor = Supervisor(clock)
        self.agents = [
            NodeAgent(
                store,
                clock,
                spec,
                logs_dir,
                self.ports,
                workdir=workdir,
                base_env=base_env,
                heartbeat_seconds=heartbeat_seconds,
                stop_grace_seconds=stop_grace_seconds,
                isolation=isolation,
                images=self.images,
                supervisor=self.supervisor,
            )
            for spec in node_specs(config)
        ]
        self._started: list[NodeAgent] = []
        self.stopped = 0  # container processes the last ``stop`` stopped

    def start(self, timeout: float = 30.0) -> None:
        for agent in self.agents:
            agent.start(timeout)
            self._started.append(agent)

    def stop(self) -> None:
        """Stop every agent in parallel (each waits out its processes' grace period)."""
        started, self._started = self._started, []
        self.images.close()
        if started:
            with ThreadPoolExecutor(max_workers=min(len(started), _STOPPERS)) as executor:
                self.stopped = sum(executor.map(lambda agent: agent.stop(), started))
        self.supervisor.close()

    def agent(self, node: str) -> NodeAgent:
        return next(a for a in self.agents if a.node.name == node)

    def __enter__(self) -> AgentPool:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
