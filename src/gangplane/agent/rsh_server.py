"""The remote-shell daemon a worker pod runs in place of ``sshd`` (``rsh_pods.py``, docs/mpi.md).

It is the pod's container, so everything it starts belongs to the pod: the pod's sandbox directory, its
environment (trainer variables, volumes, the process marker the agent kills by), its log. Each session runs
the client's command as ``sh -c '<words joined>'`` (what ``sshd`` hands the user's shell) in a process group
of its own (as root also in a UTS namespace named after the pod, ``command_argv``), with stdio relayed over
the socket (``rsh_wire.py``) and the command's stderr also copied to the pod's log. A session whose client
goes away (``mpirun`` ended or was killed) has its process group ended: SIGTERM, then SIGKILL after
``KILL_GRACE`` seconds. SIGTERM to the daemon (pod deletion) ends every session the same way and removes the
socket.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, TextIO

from gangplane.agent.rsh_pods import in_own_hostname
from gangplane.agent.rsh_wire import CHALLENGE_BYTES, Channel, Frame, WireError, verify

KILL_GRACE = 2.0
DRAIN_SECONDS = 10.0  # how long output may keep flowing after the command exits (a child holding the pipe)


class Log:
    """Lines into the pod's log (the daemon's stdout), one writer at a time."""

    def __init__(self, out: TextIO) -> None:
        self.out, self._lock = out, threading.Lock()

    def line(self, text: str) -> None:
        with self._lock:
            self.out.write(f"gangplane-rsh: {text}\n")
            self.out.flush()


class Session:
    """One client connection: authenticate, run the command, relay stdio, report the exit code."""

    def __init__(self, number: int, channel: Channel, keys_dir: Path, log: Log) -> None:
        self.number, self.channel, self.keys_dir, self.log = number, channel, keys_dir, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.over = False

    def run(self) -> None:
        try:
            words = self._authenticate()
            if words is not None:
                self._execute(" ".join(words))
        except (WireError, OSError, ValueError) as err:
            self.log.line(f"session {self.number}: {err}")
            self.end()
        finally:
            self.channel.close()
            self.over = True

    def _authenticate(self) -> list[str] | None:
        challenge = os.urandom(CHALLENGE_BYTES)
        self.channel.send(Frame.CHALLENGE, challenge)
        kind, payload = self.channel.receive()
        hello: dict[str, Any] = json.loads(payload) if kind == Frame.HELLO else {}
        words = hello.get("command")
        if not isinstance(words, list) or not verify(challenge, str(hello.get("signature")), self.keys_dir):
            self.log.line(f"session {self.number}: refused (the client holds no key of this job)")
            self.channel.send(Frame.STDERR, b"Permission denied (publickey).\r\n")
            self.channel.send_json(Frame.EXIT, 255)
            return None
        return [str(w) for w in words]

    def _execute(self, command: str) -> None:
        self.proc = proc = subprocess.Popen(
            command_argv(command, os.environ),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0,
        )  # fmt: skip
        self.log.line(f"session {self.number}: pid {proc.pid}: {command}")
        assert proc.stdout is not None and proc.stderr is not None
        pumps = [
            _thread(self._pump, proc.stdout, Frame.STDOUT),
            _thread(self._pump, proc.stderr, Frame.STDERR),
        ]
        _thread(self._feed, proc)
        code = proc.wait()
        for pump in pumps:
            pump.join(DRAIN_SECONDS)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError, ValueError):
                pipe.close()  # type: ignore[union-attr]
        status = 128 - code if code < 0 else code
        self.log.line(f"session {self.number}: exit {status}")
        self.channel.send_json(Frame.EXIT, status)

    def _pump(self, pipe: IO[bytes], kind: Frame) -> None:
        with contextlib.suppress(OSError):
            while chunk := os.read(pipe.fileno(), 65536):
                self.channel.send(kind, chunk)
                if kind == Frame.STDERR:
                    self.log.line(f"session {self.number}: {chunk.decode(errors='replace').rstrip()}")

    def _feed(self, proc: subprocess.Popen[bytes]) -> None:
        """Client input to the command; the connection's end (before ``EXIT``) ends the command."""
        assert proc.stdin is not None
        try:
            while True:
                kind, payload = self.channel.receive()
                if kind == Frame.STDIN:
                    proc.stdin.write(payload)
                    proc.stdin.flush()
                elif kind == Frame.STDIN_EOF:
                    proc.stdin.close()
        except (WireError, OSError, ValueError):
            if proc.poll() is None:
                self.log.line(f"session {self.number}: client gone, ending pid {proc.pid}")
                self.end()

    def end(self) -> None:
        """SIGTERM the command's process group, SIGKILL it after ``KILL_GRACE`` seconds."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(KILL_GRACE)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)


@functools.cache
def can_set_hostname() -> bool:
    """Whether this process may give a command its own UTS namespace (root with util-linux ``unshare``)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = ["unshare", "--uts", "--", "/bin/sh", "-c", "hostname gangplane-probe"]
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        return subprocess.run(probe, capture_output=True, timeout=10, check=False).returncode == 0
    return False


def command_argv(command: str, env: Mapping[str, str]) -> list[str]:
    """``sh -c command``, with the pod's host name (``HOSTNAME``) as the system's where it can be set: on a
    cluster ``gethostname`` in a pod is the pod's, and MPI libraries tell nodes apart by it (DeepSpeed's
    local ranks, ``MPI_Get_processor_name``)."""
    argv = ["/bin/sh", "-c", command]
    host = env.get("HOSTNAME")
    return in_own_hostname(argv, host) if host and can_set_hostname() else argv


def _thread(target: Any, *args: Any) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def listen(path: Path) -> socket.socket:
    """A listening socket at ``path`` (a stale one left by a killed daemon is replaced), owner-only."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    os.chmod(path, 0o600)
    sock.listen(64)
    return sock


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(0)


def serve(path: Path, keys_dir: Path, out: TextIO = sys.stdout) -> None:
    """Accept sessions until SIGTERM/SIGINT/SIGHUP; then end them all and remove the socket."""
    log, sessions = Log(out), list[Session]()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _terminate)
    listener = listen(path)
    log.line(f"listening on {path} (standing in for sshd; keys from {keys_dir})")
    try:
        for number in itertools.count(1):
            conn, _ = listener.accept()
            session = Session(number, Channel(conn), keys_dir, log)
            sessions = [s for s in sessions if not s.over] + [session]
            _thread(session.run)
    finally:
        listener.close()
        path.unlink(missing_ok=True)
        for session in sessions:
            session.end()
