"""The control-plane process ``gangplane up`` starts: the HTTPS API server over the durable store, with the
embedded cluster (controllers, schedulers, node agents) running beside it in the same process.

On SIGTERM/SIGINT uvicorn returns; the cluster then stops its controllers and schedulers and its agents stop
every process group they started, so ``gangplane down`` leaves no pod process behind.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from gangplane.agent.nodes import ClusterConfig, default_config, detect_host, load_config
from gangplane.clock import WallClock
from gangplane.cluster.local import LocalCluster
from gangplane.server.lifecycle import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    default_state_dir,
    load_admission,
    make_server,
    open_store,
    prepare,
)


def cluster_config(path: Path | None) -> ClusterConfig:
    """The nodes: from ``path`` when given, else the default sized from this machine (docs/nodes.md)."""
    return load_config(path) if path is not None else default_config(detect_host())


def run(
    state_dir: Path, host: str, port: int, config: ClusterConfig, admission_ref: str | None = None
) -> None:
    paths = prepare(state_dir)
    store = open_store(paths, load_admission(admission_ref) if admission_ref else None)
    cluster = LocalCluster(store, WallClock(), config, paths.logs)
    try:
        server = make_server(paths.root, store, host, port, metrics=cluster.metrics)
        cluster.start()
        server.run()
    finally:
        cluster.stop()
        store.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m gangplane.cluster", description=__doc__)
    parser.add_argument("--state-dir", type=Path, default=None, help="$GANGPLANE_HOME or ~/.gangplane")
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--config", type=Path, default=None, help="cluster config (nodes); docs/nodes.md")
    parser.add_argument("--admission", default=None, help="module:attribute of an Admission callable")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run(
        args.state_dir or default_state_dir(),
        args.host,
        args.port,
        cluster_config(args.config),
        args.admission,
    )
