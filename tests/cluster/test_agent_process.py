"""``AgentProcess``: the node agents' OS process is handed its credential on stdin (never in its
environment), restarted when it dies, and stopped with SIGTERM and waited for. A stand-in command plays the
agent process here (the real one is exercised end to end in tests/e2e/test_agent_process.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gangplane.agent.daemon import Handoff
from gangplane.agent.leftovers import CLUSTER_ENV, cluster_id
from gangplane.agent.nodes import ClusterConfig, NodeGroup
from gangplane.cluster.agents import AgentProcess
from waiting import wait_for

# Records its handoff and environment, then exits (``die``) or waits for SIGTERM and says so. The handler is
# installed before the record: the test stops it as soon as the record appears (a TERM before it killed it).
STAND_IN = """
import json, os, signal, sys, time
from pathlib import Path
out = Path(sys.argv[1])
signal.signal(signal.SIGTERM, lambda *a: ((out / "stopped").write_text("yes"), sys.exit(0)))
line = sys.stdin.readline()
record = {"handoff": line, "env": os.environ.get("GANGPLANE_CLUSTER"), "sid": os.getsid(0) == os.getpid(),
          "leaked": any("secret-token" in value for value in os.environ.values())}
with (out / "starts").open("a") as f:
    f.write(json.dumps(record) + "\\n")
if (out / "die").exists():
    sys.exit(3)
while True:
    time.sleep(0.05)
"""


def _handoff(state: Path) -> Handoff:
    config = ClusterConfig(node_groups=[NodeGroup(name="n", count=2, capacity={"cpu": "2", "memory": "1Gi"})])
    return Handoff("https://127.0.0.1:1", state / "tls.crt", "secret-token", state, config)


def _process(tmp_path: Path) -> AgentProcess:
    command = [sys.executable, "-c", STAND_IN, str(tmp_path)]
    return AgentProcess(_handoff(tmp_path), stop_timeout=10, command=command)


def _starts(tmp_path: Path) -> list[str]:
    path = tmp_path / "starts"
    return path.read_text().splitlines() if path.exists() else []


def test_handoff_travels_on_stdin_and_stop_waits_for_the_process(tmp_path: Path) -> None:
    agents = _process(tmp_path)
    agents.start()
    wait_for(lambda: len(_starts(tmp_path)) == 1, 20.0)
    started = json.loads(_starts(tmp_path)[0])
    assert Handoff.loads(started["handoff"]) == _handoff(tmp_path)
    assert not started["leaked"], "the pods inherit the agents' environment: the token must not be in it"
    assert started["env"] == cluster_id(tmp_path), f"the {CLUSTER_ENV} marker lets a reap find a stray one"
    assert started["sid"], "a session of its own: a reap of its group never reaches the server"
    agents.stop()
    assert (tmp_path / "stopped").read_text() == "yes"
    assert agents.pid is None and agents.restarts == 0


def test_a_dying_agent_process_is_restarted_until_stopped(tmp_path: Path) -> None:
    (tmp_path / "die").write_text("")
    agents = _process(tmp_path)
    agents.start()
    wait_for(lambda: len(_starts(tmp_path)) >= 2, 20.0)  # died, restarted after its back-off
    (tmp_path / "die").unlink()
    wait_for(lambda: agents.pid is not None and len(_starts(tmp_path)) >= 3, 20.0)
    agents.stop()
    assert agents.restarts >= 2
    assert (tmp_path / "stopped").exists()
