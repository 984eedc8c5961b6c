"""The control-plane process ``gangplane up`` starts: the HTTPS API server over the durable store, with the
embedded cluster's controllers and schedulers running beside it in the same process, and the node agents
either in an OS process of their own (``--agents process``: ``cluster/agents.py`` starts and supervises it;
it talks to the API over HTTPS with a token this server issues at start) or in this one (``--agents inline``).
docs/architecture.md ("Processes and threads") has the measurements behind the default.

With ``--slurm-conf`` the Slurm Bridge (``slurm-bridge-scheduler``) places pods through that Slurm, and unless
``--config`` names other nodes the cluster's nodes are Slurm's own (cluster/slurm.py; docs/slurm.md).

On SIGTERM/SIGINT the server keeps answering while the controllers and schedulers stop, then the agents stop
every process group they started (TERM, grace period, KILL) and report; only then does the server exit, so
``gangplane down`` leaves no pod process behind. At start, whatever pod process (or agent process) a crashed
control plane of the same state directory left is killed (``agent/leftovers.py``).
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import threading
import time
from pathlib import Path
from types import FrameType

from gangplane.agent.daemon import Handoff
from gangplane.agent.heartbeat import register
from gangplane.agent.leftovers import reap
from gangplane.agent.nodes import ClusterConfig, default_config, detect_host, load_config, node_specs
from gangplane.clock import WallClock
from gangplane.cluster.agents import AgentProcess
from gangplane.cluster.local import LocalCluster
from gangplane.cluster.slurm import SlurmNodeNameError, slurm_cluster_config
from gangplane.cluster.visibility import visibility_routes
from gangplane.controllers.event_ttl import DEFAULT_TTL, parse_duration
from gangplane.controllers.node_eviction import (
    LARGE_CLUSTER_SIZE_THRESHOLD,
    NODE_EVICTION_RATE,
    SECONDARY_NODE_EVICTION_RATE,
    EvictionRates,
)
from gangplane.controllers.node_health import NODE_MONITOR_GRACE_SECONDS
from gangplane.schedulers.slurm import SlurmCli, SlurmError, SubprocessRunner
from gangplane.server.lifecycle import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    default_state_dir,
    freeze_startup_heap,
    lock,
    make_server,
    open_store,
    prepare,
)
from gangplane.server.statedir import server_url
from gangplane.store.base import Store

_log = logging.getLogger(__name__)

AGENTS_PROCESS, AGENTS_INLINE = "process", "inline"
DEFAULT_AGENTS = AGENTS_INLINE  # measured: apart is slower to start pods here (docs/architecture.md)


def cluster_config(path: Path | None, slurm: SlurmCli | None = None) -> ClusterConfig:
    """The nodes: from ``path`` when given, else Slurm's nodes when a Slurm is connected, else the default
    sized from this machine (docs/nodes.md). Raises ``SlurmError`` / ``SlurmNodeNameError`` for Slurm's."""
    if path is not None:
        return load_config(path)
    if slurm is not None:
        return slurm_cluster_config(slurm.nodes())
    return default_config(detect_host())


def slurm_cli(slurm_conf: Path | None) -> SlurmCli | None:
    """Slurm's commands against the cluster of ``slurm_conf`` (``SLURM_CONF``); None without one."""
    return SlurmCli(SubprocessRunner(str(slurm_conf))) if slurm_conf is not None else None


def run(
    state_dir: Path,
    host: str,
    port: int,
    config: ClusterConfig,
    slurm: SlurmCli | None = None,
    event_ttl: float = DEFAULT_TTL,
    agents: str = DEFAULT_AGENTS,
    node_monitor_grace: float = NODE_MONITOR_GRACE_SECONDS,
    eviction_rates: EvictionRates | None = None,
) -> None:
    paths = prepare(state_dir)
    held = lock(paths)  # before the store opens: one server per state directory
    reaped = reap(paths.root)  # a crashed control plane's pod processes must not run beside new ones
    if reaped:
        _log.warning("killed %d pod processes a previous control plane left", reaped)
    store = open_store(paths)
    apart = agents == AGENTS_PROCESS
    cluster = LocalCluster(
        store,
        WallClock(),
        config,
        paths.logs,
        slurm=slurm,
        event_ttl=event_ttl,
        run_agents=not apart,
        node_monitor_grace=node_monitor_grace,
        eviction_rates=eviction_rates,
    )
    token = secrets.token_urlsafe(32)  # the node agents' credential, valid while this server runs
    agent_process = AgentProcess(Handoff(server_url(host, port), paths.cert, token, paths.root, config))
    stop = _Stopper(cluster, agent_process if apart else None)
    _exit_cleanly_on_sigterm()
    try:
        server = make_server(
            paths.root,
            store,
            host,
            port,
            metrics=cluster.metrics,
            extra_routes=visibility_routes(cluster.kueue.reconciler),
            users={token: NODE_AGENTS} if apart else None,
            drain=stop,
        )
        if apart:
            _register_nodes(store, config)  # `up` returns with its nodes; the agents refresh them
        cluster.start()
        if apart:
            agent_process.start()
        freeze_startup_heap()
        server.run()
    finally:
        stop()
        store.close()
        os.close(held)


# The node agents' user: a cluster admin, as gangplane serves no RBAC and no Node authorizer (docs/nodes.md).
NODE_AGENTS = {
    "username": "system:node-agents",
    "groups": ["system:nodes", "system:masters", "system:authenticated"],
}


def _register_nodes(store: Store, config: ClusterConfig) -> None:
    clock = WallClock()
    for spec in node_specs(config):
        register(store, clock, spec)


class _Stopper:
    """Stops, once, in this order: the controllers and schedulers (nothing creates pods any more), then the
    node agents, which stop every pod (TERM, grace period, KILL) and say how many in the server log."""

    def __init__(self, cluster: LocalCluster, agent_process: AgentProcess | None) -> None:
        self.cluster, self.agent_process = cluster, agent_process
        self._lock = threading.Lock()
        self._done = False

    def __call__(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            began = time.monotonic()
            self.cluster.stop()  # with the agents inline, they stop last, after the schedulers
            if self.agent_process is not None:
                _log.info("controllers and schedulers stopped in %.1f s", time.monotonic() - began)
                self.agent_process.stop()
                _log.info("node-agent process stopped in %.1f s", time.monotonic() - began)
            elif self.cluster.agents is not None:
                pool = self.cluster.agents
                _log.info("stopped %d container processes on %d nodes", pool.stopped, len(pool.agents))


def _exit_cleanly_on_sigterm() -> None:
    """uvicorn restores the SIGTERM handler it found and re-raises the signal once it has shut down; with
    the default handler the process would die there, before ``cluster.stop()`` runs and stops the pods'
    processes. This handler turns the signal into ``SystemExit`` so the ``finally`` below always runs."""

    def exit_now(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, exit_now)


def _eviction_flags(parser: argparse.ArgumentParser) -> None:
    """kube-controller-manager's NoExecute tainting rate flags, with its names and defaults."""
    parser.add_argument(
        "--node-eviction-rate",
        type=float,
        default=NODE_EVICTION_RATE,
        help="nodes per second tainted NoExecute in a zone (docs/nodes.md)",
    )
    parser.add_argument(
        "--secondary-node-eviction-rate",
        type=float,
        default=SECONDARY_NODE_EVICTION_RATE,
        help="the rate in a zone mostly down with more than --large-cluster-size-threshold nodes",
    )
    parser.add_argument(
        "--large-cluster-size-threshold",
        type=int,
        default=LARGE_CLUSTER_SIZE_THRESHOLD,
        help="a zone mostly down with at most this many nodes is tainted at rate 0",
    )


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m gangplane.cluster", description=__doc__)
    parser.add_argument("--state-dir", type=Path, default=None, help="$GANGPLANE_HOME or ~/.gangplane")
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--config", type=Path, default=None, help="cluster config (nodes); docs/nodes.md")
    parser.add_argument(
        "--slurm-conf",
        type=Path,
        default=None,
        help="slurm.conf of a Slurm to place slurm-bridge-scheduler pods; its nodes are the cluster's "
        "unless --config is given (docs/slurm.md)",
    )
    parser.add_argument(
        "--event-ttl",
        type=_duration,
        default=DEFAULT_TTL,
        help="keep Events this long after their last update",
    )
    parser.add_argument(
        "--agents",
        choices=[AGENTS_PROCESS, AGENTS_INLINE],
        default=DEFAULT_AGENTS,
        help="run the node agents inside this process (the default), or in a process of their own talking to "
        "the API over HTTPS (docs/architecture.md, 'Processes and threads')",
    )
    parser.add_argument(
        "--node-monitor-grace-period",
        type=_duration,
        default=NODE_MONITOR_GRACE_SECONDS,
        help="mark a node Unknown and taint it when its agent has not renewed its Lease for this long "
        "(kube-controller-manager's flag; docs/nodes.md)",
    )
    _eviction_flags(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _log.setLevel(logging.INFO)  # what start-up and shut-down did goes to the server log
    if args.slurm_conf is not None and not args.slurm_conf.is_file():
        parser.error(f"--slurm-conf {args.slurm_conf}: no such file")  # sinfo would hang, not fail
    slurm = slurm_cli(args.slurm_conf)
    try:
        config = cluster_config(args.config, slurm)
    except (SlurmError, SlurmNodeNameError) as err:
        parser.exit(2, f"error: cannot take the nodes from Slurm ({args.slurm_conf}): {err}\n")
    state = args.state_dir or default_state_dir()
    run(
        state,
        args.host,
        args.port,
        config,
        slurm,
        args.event_ttl,
        args.agents,
        args.node_monitor_grace_period,
        EvictionRates(
            args.node_eviction_rate, args.secondary_node_eviction_rate, args.large_cluster_size_threshold
        ),
    )
