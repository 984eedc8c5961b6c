"""The node agents as a supervised OS process of their own (``agent/daemon.py``), as kubelets are processes
apart from kube-apiserver: their container supervision and per-pod work no longer share the API server's GIL.

``AgentProcess`` starts ``python -m gangplane.agent.daemon`` in a session of its own (so a terminal's
Ctrl-C, or a reap of its process group, never reaches the API server), hands it the server's URL, CA and the
node agents' bearer token over its stdin, and restarts it if it dies: what the dead one left running is
reaped first (``agent/leftovers.py``; its pods' statuses then say ``ContainerStatusUnknown`` and their
controllers replace them, as after a control-plane crash). It carries the state directory's
``GANGPLANE_CLUSTER`` marker, so ``up`` after a crash and ``down`` after a kill reap a stray one too.

``stop`` sends SIGTERM (the agents stop every pod: TERM, grace period, KILL) and waits for the process; one
that does not exit within ``stop_timeout`` is killed and its pods reaped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Sequence

from gangplane.agent.daemon import MODULE, Handoff
from gangplane.agent.leftovers import CLUSTER_ENV, cluster_id, reap

_log = logging.getLogger(__name__)

# The agents' pods get their grace period (5 s at most when stopping, the agents' stop_grace_seconds) and
# the agents then wait for every process; this leaves room for hundreds of pods on a loaded machine.
STOP_TIMEOUT = 25.0
RESTART_DELAYS = (0.5, 1.0, 2.0, 5.0, 10.0)  # back-off between restarts of a process that keeps dying


class AgentProcess:
    def __init__(
        self,
        handoff: Handoff,
        *,
        stop_timeout: float = STOP_TIMEOUT,
        command: Sequence[str] = (sys.executable, "-m", MODULE),
    ) -> None:
        self.handoff, self.stop_timeout, self.command = handoff, stop_timeout, list(command)
        self.restarts = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._process: subprocess.Popen[str] | None = None
        self._watcher: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def start(self) -> None:
        with self._lock:
            self._process = self._spawn()
        self._watcher = threading.Thread(target=self._supervise, name="agent-process", daemon=True)
        self._watcher.start()

    def _spawn(self) -> subprocess.Popen[str]:
        env = {**os.environ, CLUSTER_ENV: cluster_id(self.handoff.state)}
        process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            env=env,
            text=True,
            start_new_session=True,
        )
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it died at once: the supervisor sees the exit
            process.stdin.write(self.handoff.dumps())
            process.stdin.flush()
        return process  # stdin stays open: its end of file tells the agents the control plane is gone

    def _supervise(self) -> None:
        attempt = 0
        while True:
            process = self._process
            assert process is not None
            status = process.wait()
            if self._stopping.is_set():
                return
            delay = RESTART_DELAYS[min(attempt, len(RESTART_DELAYS) - 1)]
            _log.warning("the node-agent process exited with %s; restarting it in %.1f s", status, delay)
            reaped = reap(self.handoff.state)
            if reaped:
                _log.warning("killed %d pod processes the node-agent process left", reaped)
            if self._stopping.wait(delay):
                return
            with self._lock:
                if self._stopping.is_set():
                    return
                _close(process)
                self._process = self._spawn()
                self.restarts += 1
            attempt += 1

    def stop(self) -> None:
        """SIGTERM the agent process and wait for it (SIGKILL and a reap after ``stop_timeout``)."""
        with self._lock:
            self._stopping.set()
            process = self._process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        try:
            process.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            _log.warning("the node-agent process did not stop in %.0f s; killing it", self.stop_timeout)
            process.kill()
            process.wait()
            reap(self.handoff.state)
        _close(process)
        if self._watcher is not None:
            self._watcher.join()


def _close(process: subprocess.Popen[str]) -> None:
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()


__all__ = ["RESTART_DELAYS", "STOP_TIMEOUT", "AgentProcess"]
