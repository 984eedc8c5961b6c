"""Every container process of this agent process, supervised by one thread.

A thread per container (to wait for its exit, then another to stop it) meant 800 running pods were 1,600
threads, and each exit or stop scanned ``/proc`` on its own. Here one loop does it all:

- exits arrive as readable ``pidfd``s on one selector (``os.waitid`` polling where pidfds are missing); a
  pidfd is readable once the process is a zombie, so the group id cannot be reused before the group is
  killed - the main process is reaped only after ``SIGKILL`` went to its group;
- ``stop`` sends ``SIGTERM`` to the container's group and to the processes that may have left the group:
  its cgroup's members (``cgroups.py``), or without a cgroup those carrying its marker (``sandbox.py``),
  and sets a deadline after which the group gets ``SIGKILL``;
- a container has ended once nothing of its group and none of those processes is alive; what all
  the ending containers wait on is read from ``/proc`` once per tick (``proctable.py``), not once each,
  and only while some ending group still has a process (the kernel says so for a signal 0 to the group).

Callbacks (``on_exit``, ``then``) run on the loop thread and must be quick (enqueue a key, release a port).
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import logging
import os
import selectors
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gangplane.agent import cgroups, proctable
from gangplane.agent.pod_state import termination
from gangplane.agent.process import ContainerProcess, log_tail
from gangplane.agent.sandbox import MARKER_ENV
from gangplane.clock import Clock

_log = logging.getLogger(__name__)

TICK = 0.05  # seconds between /proc checks while containers are ending (and for pids without a pidfd)
GONE_TIMEOUT = 5.0  # seconds to wait for SIGKILLed group members and marked processes to vanish

Callback = Callable[[ContainerProcess], None]


@dataclass(slots=True)
class _Watch:
    proc: ContainerProcess
    on_exit: Callback
    fd: int | None = None
    then: list[Callback] = field(default_factory=list)


@dataclass(slots=True)
class _Ending:
    """A container whose main process has exited and been reaped, waiting for the rest of it to go."""

    watch: _Watch
    code: int
    finished: float
    oom: bool
    marked: set[int]
    deadline: float


class Supervisor:
    """Watches container processes for exit and stops them, on one thread started with the first watch."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._incoming: list[_Watch] = []
        self._stops: list[tuple[ContainerProcess, float, Callback | None]] = []
        self._watches: dict[int, _Watch] = {}  # by pid, while the main process runs
        self._ending: list[_Ending] = []
        self._kills: list[tuple[float, int, ContainerProcess]] = []  # (deadline, n, proc): SIGKILL then
        self._kill_count = 0
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._thread: threading.Thread | None = None
        self._closed = False

    # -- requests (any thread) ------------------------------------------------------------------------------
    def watch(self, proc: ContainerProcess, on_exit: Callback) -> None:
        """Supervise ``proc``: ``on_exit`` runs once its process, its group and its marked processes are gone."""
        with self._lock:
            if self._closed:  # started while its agent stopped: it must not run unsupervised
                proctable.signal_group(proc.pid, signal.SIGKILL)
                proc.popen.wait()
                raise RuntimeError("the supervisor is closed")
            self._incoming.append(_Watch(proc, on_exit))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="container-supervisor", daemon=True)
                self._thread.start()
        self._wake()

    def stop(self, proc: ContainerProcess, grace: float, then: Callback | None = None) -> None:
        """SIGTERM the container now, SIGKILL its group after ``grace`` seconds (real time) if its main process
        still runs; returns at once (``proc.wait()`` blocks). ``then`` runs once it has ended."""
        proc.stopping = True
        if not proc.alive():
            if then is not None:
                then(proc)
            return
        with self._lock:
            self._stops.append((proc, grace, then))
        self._wake()

    def close(self, timeout: float | None = None) -> None:
        """Let the loop end once nothing is supervised any more (stop the containers first)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._wake()
        if thread is not None:
            thread.join(timeout)

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_w, b"x")

    # -- the loop -------------------------------------------------------------------------------------------
    def _loop(self) -> None:
        try:
            while self._turn():
                pass
        finally:
            self._selector.close()
            for fd in (self._wake_r, self._wake_w):
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _turn(self) -> bool:
        ready = self._selector.select(self._timeout())
        with contextlib.suppress(BlockingIOError, OSError):
            os.read(self._wake_r, 4096)
        with self._lock:
            incoming, self._incoming = self._incoming, []
            stops, self._stops = self._stops, []
            closed = self._closed
        for watch in incoming:
            self._register(watch)
        self._apply_stops(stops)
        exited = [w for key, _ in ready if isinstance(w := key.data, _Watch)] + self._polled_exits()
        self._fire_kills()
        self._begin_ending(exited)
        if self._ending:
            self._settle()
        with self._lock:
            idle = not (self._watches or self._ending or self._incoming or self._stops)
        return not (closed and idle)

    def _timeout(self) -> float:
        if self._ending or any(w.fd is None for w in self._watches.values()):
            return TICK
        if self._kills:
            return max(0.0, min(1.0, self._kills[0][0] - time.monotonic()))
        return 1.0

    def _register(self, watch: _Watch) -> None:
        pid = watch.proc.pid
        self._watches[pid] = watch
        try:
            watch.fd = os.pidfd_open(pid)
        except (AttributeError, OSError):  # no pidfds here: polled with waitid each tick
            return
        self._selector.register(watch.fd, selectors.EVENT_READ, watch)

    def _polled_exits(self) -> list[_Watch]:
        exited = []
        for watch in self._watches.values():
            if watch.fd is None and _has_exited(watch.proc.pid):
                exited.append(watch)
        return exited

    def _apply_stops(self, stops: list[tuple[ContainerProcess, float, Callback | None]]) -> None:
        running = []
        for proc, grace, then in stops:
            watch = self._watches.get(proc.pid)
            if watch is None or watch.proc is not proc:  # it already ended (or is ending)
                if then is not None:
                    self._after(proc, then)
                continue
            if then is not None:
                watch.then.append(then)
            proctable.signal_group(proc.pid, signal.SIGTERM)
            self._kill_count += 1
            heapq.heappush(self._kills, (time.monotonic() + grace, self._kill_count, proc))
            running.append(proc)
        marked = _escaped(running)
        proctable.signal_all([pid for pids in marked.values() for pid in pids], signal.SIGTERM)

    def _after(self, proc: ContainerProcess, then: Callback) -> None:
        """``then`` once ``proc`` has ended: now, or when its ending settles."""
        for ending in self._ending:
            if ending.watch.proc is proc:
                ending.watch.then.append(then)
                return
        _call(then, proc)

    def _fire_kills(self) -> None:
        now = time.monotonic()
        while self._kills and self._kills[0][0] <= now:
            proc = heapq.heappop(self._kills)[2]
            watch = self._watches.get(proc.pid)
            if watch is not None and watch.proc is proc:  # not a later process that reused the pid
                proctable.signal_group(proc.pid, signal.SIGKILL)

    def _begin_ending(self, exited: list[_Watch]) -> None:
        """The main processes exited: kill what is left of their groups, reap them, kill marked processes."""
        fresh = []
        for watch in exited:
            proc = watch.proc
            del self._watches[proc.pid]
            if watch.fd is not None:
                self._selector.unregister(watch.fd)
                os.close(watch.fd)
            proctable.signal_group(proc.pid, signal.SIGKILL)
            code = proc.popen.wait()
            oom = proc.cgroup is not None and cgroups.oom_killed(proc.cgroup)
            fresh.append(_Ending(watch, code, self._clock.now(), oom, set(), time.monotonic() + GONE_TIMEOUT))
        marked = _escaped([e.watch.proc for e in fresh])
        for ending in fresh:
            ending.marked = set(marked.get(ending.watch.proc.pid, ()))
            proctable.signal_all(ending.marked, signal.SIGKILL)  # what escaped the group ends with it too
        self._ending.extend(fresh)

    def _settle(self) -> None:
        """Finish the endings whose group and marked processes are gone (or that waited long enough). The
        kernel answers first for a group with no process left at all (``killpg(pgid, 0)``): only when some
        ending still has one (perhaps a zombie) or marked processes is ``/proc`` read."""
        left = []
        for ending in self._ending:
            if ending.marked or proctable.group_exists(ending.watch.proc.pid):
                left.append(ending)
            else:
                self._finish(ending)
        self._ending = left
        if not left:
            return
        live = proctable.live_groups()
        groups, now = set(live.values()), time.monotonic()
        waiting = []
        for ending in self._ending:
            ending.marked &= live.keys()
            if (ending.watch.proc.pid in groups or ending.marked) and now < ending.deadline:
                waiting.append(ending)
            else:
                self._finish(ending)
        self._ending = waiting

    def _finish(self, ending: _Ending) -> None:
        watch, proc = ending.watch, ending.watch.proc
        signum = -ending.code if ending.code < 0 else None
        exit_code = 128 + signum if signum is not None else ending.code
        ended = termination(exit_code, ending.finished, proc.started_at, signum)
        if ending.oom and exit_code == 128 + signal.SIGKILL:
            ended = dataclasses.replace(ended, reason="OOMKilled")
        if proc.cgroup is not None:
            cgroups.remove(proc.cgroup)
        if exit_code != 0 and proc.log_on_error is not None:
            ended = dataclasses.replace(ended, message=log_tail(proc.log_on_error))
        proc.ended = ended
        proc.mark_done()
        for callback in [watch.on_exit, *watch.then]:
            _call(callback, proc)


def _escaped(procs: list[ContainerProcess]) -> dict[int, list[int]]:
    """pid -> the processes of each container that may have left its group: its cgroup's members (which a
    process cannot leave by ``setsid`` or by rewriting its environment), else, for a container with no
    cgroup, those carrying its marker, found in one ``/proc`` pass for all of them (each reads every
    process's environment, far more than a cgroup's list)."""
    found = {p.pid: cgroups.members(p.cgroup) for p in procs if p.cgroup is not None}
    unmarked = [p for p in procs if p.cgroup is None and p.marker]
    by_marker = proctable.carrying(MARKER_ENV, {p.marker for p in unmarked})
    return found | {p.pid: by_marker.get(p.marker, []) for p in unmarked}


def _has_exited(pid: int) -> bool:
    """The process is a zombie (observed without reaping it) or gone."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None
    except ChildProcessError:
        return True


def _call(callback: Callback, proc: ContainerProcess) -> None:
    try:
        callback(proc)
    except Exception:  # one bad callback must not stop the supervision of every other container
        _log.exception("container supervisor callback failed for pid %s", proc.pid)


__all__ = ["GONE_TIMEOUT", "Supervisor"]
