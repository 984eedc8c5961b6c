"""The node-agent process: every node of a ``ClusterConfig`` (one ``AgentPool``) in an OS process of its own,
talking to the API server over HTTPS through ``KubeStore``, as kubelets run beside kube-apiserver.

``gangplane up`` starts it (``cluster/agents.py``) as ``python -m gangplane.agent.daemon`` and writes one JSON
line to its stdin: the API server's URL, its CA file, the bearer token the server issued to node agents for
this run, the state directory and the cluster config. The token travels over the pipe, never through the
environment (the pods inherit the agent's) or a file. The pipe then stays open: end of file means the
control plane is gone.

On SIGTERM, SIGINT or end of file the agents stop: every pod's process group gets SIGTERM, its grace period,
then SIGKILL; the count goes to the log (the control plane's server log) and the process exits 0. Pod logs,
pod sandboxes, image environments and the service-account signing key are files of the state directory on
this machine, shared with the API server as a node's disk is with its kubelet.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from gangplane.agent.nodes import ClusterConfig
from gangplane.agent.pool import AgentPool
from gangplane.agent.remote import NodeApi
from gangplane.client.kube import KubeStore, Unreachable
from gangplane.client.kubeconfig import token_connection
from gangplane.clock import WallClock
from gangplane.errors import NotFound
from gangplane.store.catalog import NAMESPACES

_log = logging.getLogger("gangplane.agent.daemon")

MODULE = "gangplane.agent.daemon"
SERVER_WAIT_SECONDS = 60.0  # the API server starts listening just after it starts this process


@dataclass(frozen=True, slots=True)
class Handoff:
    """What the control plane tells its agent process on start."""

    server: str
    ca: Path
    token: str
    state: Path
    config: ClusterConfig

    def dumps(self) -> str:
        fields = {"server": self.server, "ca": str(self.ca), "token": self.token, "state": str(self.state)}
        return json.dumps({**fields, "config": self.config.to_dict()}) + "\n"

    @classmethod
    def loads(cls, line: str) -> Handoff:
        data: dict[str, Any] = json.loads(line)
        config = ClusterConfig.from_dict(data["config"])
        return cls(data["server"], Path(data["ca"]), data["token"], Path(data["state"]), config)


def await_server(store: KubeStore, stop: threading.Event, timeout: float = SERVER_WAIT_SECONDS) -> bool:
    """Wait until the API server answers (any answer but a refused connection); False if it never did or
    ``stop`` was set meanwhile."""
    deadline = time.monotonic() + timeout
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            store.get(NAMESPACES, "", "default")
            return True
        except NotFound:
            return True
        except Unreachable:
            stop.wait(0.1)
    return False


def _stop_at_end_of(stream: IO[str], stop: threading.Event) -> None:
    """Set ``stop`` once nobody holds the other end of ``stream``: the control plane exited or was killed."""

    def drain() -> None:
        while stream.read(4096):
            pass
        stop.set()

    threading.Thread(target=drain, name="parent-watch", daemon=True).start()


def run(handoff: Handoff, stop: threading.Event) -> int:
    """Run the agents until ``stop`` is set; returns the exit status."""
    conn = token_connection(handoff.server, handoff.ca, handoff.token)
    store = NodeApi(conn.client(), namespace=conn.namespace)
    try:
        if not await_server(store, stop):
            _log.error("the API server at %s did not answer", handoff.server)
            return 0 if stop.is_set() else 1
        store.start_caches()
        _run_pool(AgentPool(store, WallClock(), handoff.config, handoff.state / "logs"), stop)
    finally:
        store.close()
    return 0


def _run_pool(pool: AgentPool, stop: threading.Event) -> None:
    try:
        pool.start()
        _log.info("node agents of %d nodes run in process", len(pool.agents))
        while not stop.wait(1.0):  # a timed wait: the signal handlers run on this thread
            pass
    finally:
        pool.stop()
        _log.info("stopped %d container processes on %d nodes", pool.stopped, len(pool.agents))


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _log.setLevel(logging.INFO)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda signum, frame: stop.set())
    handoff = Handoff.loads(sys.stdin.readline())
    _stop_at_end_of(sys.stdin, stop)
    sys.exit(run(handoff, stop))


if __name__ == "__main__":
    main()
