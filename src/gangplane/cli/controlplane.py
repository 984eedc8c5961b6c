"""``gangplane up`` / ``down`` / ``status``: the control plane's lifecycle from the command line.

Registered explicitly by ``cli.main`` through ``register``; ``gangplane.cluster.launch`` starts and stops the
server, ``gangplane.server.lifecycle`` reports its status.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from gangplane.cluster import launch
from gangplane.controllers.event_ttl import parse_duration
from gangplane.server import lifecycle

_console = Console(soft_wrap=True)
_err = Console(stderr=True, soft_wrap=True)

PortOption = Annotated[int, typer.Option("--port", envvar="GANGPLANE_PORT", help="Port to listen on.")]
HostOption = Annotated[str, typer.Option("--host", help="Address to listen on (localhost by default).")]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config", help="Cluster config: the nodes (docs/nodes.md). Default: sized from this machine."
    ),
]
SlurmOption = Annotated[
    Path | None, typer.Option("--slurm-conf", help="slurm.conf of a running Slurm for the Slurm Bridge.")
]
EventTtlOption = Annotated[
    str | None,
    typer.Option(
        "--event-ttl", help="How long Events are kept after their last update (e.g. 1h, 30m). Default 1h."
    ),
]

AgentsOption = Annotated[
    str | None,
    typer.Option(
        "--agents",
        help="Where the node agents run: 'inline' (inside the API server's process, the default) or "
        "'process' (an OS process of their own, talking to the API over HTTPS).",
    ),
]
EvictionRateOption = Annotated[
    float | None,
    typer.Option(
        "--node-eviction-rate",
        min=0,
        help="Nodes per second tainted NoExecute in a zone (upstream's flag). Default 0.1.",
    ),
]
SecondaryEvictionRateOption = Annotated[
    float | None,
    typer.Option(
        "--secondary-node-eviction-rate",
        min=0,
        help="The rate in a large zone mostly down (upstream's flag). Default 0.01.",
    ),
]
GraceOption = Annotated[
    str | None,
    typer.Option(
        "--node-monitor-grace-period",
        help="How long a node's agent may go without a heartbeat before the node is Unknown and tainted "
        "(e.g. 50s, 2m; upstream's flag). Default 50s.",
    ),
]
LargeClusterOption = Annotated[
    int | None,
    typer.Option(
        "--large-cluster-size-threshold",
        min=0,
        help="A zone mostly down with at most this many nodes is tainted at rate 0. Default 50.",
    ),
]


def _state_dir() -> Path:
    return lifecycle.default_state_dir()


def up(
    port: PortOption = lifecycle.DEFAULT_PORT,
    host: HostOption = lifecycle.DEFAULT_HOST,
    config: ConfigOption = None,
    slurm_conf: SlurmOption = None,
    event_ttl: EventTtlOption = None,
    agents: AgentsOption = None,
    node_eviction_rate: EvictionRateOption = None,
    secondary_node_eviction_rate: SecondaryEvictionRateOption = None,
    large_cluster_size_threshold: LargeClusterOption = None,
    node_monitor_grace_period: GraceOption = None,
) -> None:
    """Start the control plane and the embedded cluster in the background and write a kubeconfig for it."""
    already = lifecycle.status(_state_dir())
    extra = [*(["--config", str(config.resolve())] if config else [])]
    extra += ["--slurm-conf", str(slurm_conf.resolve())] if slurm_conf else []
    for flag, duration in (
        ("--event-ttl", event_ttl),
        ("--node-monitor-grace-period", node_monitor_grace_period),
    ):
        extra += _duration_flag(flag, duration)
    if agents:
        if agents not in ("process", "inline"):
            _err.print(f"[red]gangplane up failed:[/red] --agents: {agents!r} is not 'process' or 'inline'")
            raise typer.Exit(2)
        extra += ["--agents", agents]
    for flag, value in (
        ("--node-eviction-rate", node_eviction_rate),
        ("--secondary-node-eviction-rate", secondary_node_eviction_rate),
        ("--large-cluster-size-threshold", large_cluster_size_threshold),
    ):
        extra += [flag, str(value)] if value is not None else []
    try:
        current = launch.start_background(_state_dir(), host, port, extra_args=extra)
    except RuntimeError as exc:
        _err.print(f"[red]gangplane up failed:[/red] {exc}")
        raise typer.Exit(1) from None
    verb = "already running" if already.running else "started"
    _console.print(f"[green]control plane {verb}[/green] at {current.url} (pid {current.pid})")
    _console.print(f"kubeconfig: {current.kubeconfig}")
    _console.print(f"  export KUBECONFIG={current.kubeconfig}")
    _console.print("  kubectl get namespaces")


def _duration_flag(flag: str, value: str | None) -> list[str]:
    """``[flag, value]`` for a duration given, refused here (exit 2, the flag named) rather than by the
    background process; ``[]`` when not given."""
    if not value:
        return []
    try:
        parse_duration(value)
    except ValueError as exc:
        _err.print(f"[red]gangplane up failed:[/red] {flag}: {exc}")
        raise typer.Exit(2) from None
    return [flag, value]


def down() -> None:
    """Stop the control plane; every object stays in the store for the next "gangplane up"."""
    if launch.stop(_state_dir()):
        _console.print("[green]control plane stopped[/green]")
    else:
        _console.print("control plane was not running")


def status() -> None:
    """Report whether the control plane runs and answers /readyz; exit 1 unless healthy."""
    current = lifecycle.status(_state_dir())
    colour = {"healthy": "green", "unhealthy": "yellow", "stopped": "red"}[current.state]
    _console.print(f"control plane: [{colour}]{current.state}[/{colour}]")
    if current.running:
        _console.print(f"  url:        {current.url}\n  pid:        {current.pid}")
    _console.print(f"  state dir:  {current.state_dir}\n  kubeconfig: {current.kubeconfig}")
    if not current.healthy:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``up``, ``down`` and ``status`` to the top-level CLI."""
    app.command("up")(up)
    app.command("down")(down)
    app.command("status")(status)


__all__ = ["down", "register", "status", "up"]
