"""gangplane's remote-shell agent: OpenMPI's ``plm_rsh_agent`` for pods on this machine (docs/mpi.md).

``python -m gangplane.agent.rsh [ssh options] HOST COMMAND...`` is what ``mpirun`` runs in place of ``ssh``
(the agent sets ``OMPI_MCA_plm_rsh_agent`` in MPI pods, ``rsh_pods.py``). ``HOST`` is a pod's name from the
hostfile (``<hostname>.<subdomain>[.<namespace>...]``); the command runs in that pod, through the daemon that
stands in for its ``sshd`` (``rsh_server.py``), with stdio relayed and its exit code returned, so the
processes belong to that pod. The agent's own pod is reached without a daemon: the command runs here, as
``ssh`` to oneself would. Exit codes follow ``ssh``: the command's, or 255 when no session could be had.

ssh options are accepted and ignored, except ``-o ConnectionAttempts=N`` (OpenMPI's runtime sets 10): the
agent tries N times, a second apart, while the pod's daemon is not up yet. ``--serve`` runs the daemon.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gangplane.agent import rsh_pods as rp
from gangplane.agent.rsh_server import command_argv, serve
from gangplane.agent.rsh_wire import Channel, Frame, WireError, sign

SSH_EXIT = 255  # ssh's exit code when it could not run the command
# ssh options that take an argument (OpenSSH ssh(1) synopsis)
_WITH_ARGUMENT = set("BbcDEeFIiJLlmOopQRSWw")


@dataclass(frozen=True, slots=True)
class Invocation:
    host: str
    words: list[str]
    attempts: int = 1


class UsageError(Exception):
    pass


def parse(argv: Sequence[str]) -> Invocation:
    """ssh's command line: options, the host, the command words."""
    attempts, i = 1, 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        flag = argv[i]
        value = flag[2:] if len(flag) > 2 else (argv[i + 1] if i + 1 < len(argv) else "")
        if flag[1:2] in _WITH_ARGUMENT:
            i += 1 if len(flag) > 2 else 2
            if flag[1] == "o" and value.lower().startswith("connectionattempts="):
                attempts = max(1, int(value.split("=", 1)[1]))
        else:
            i += 1
    i += 1 if i < len(argv) and argv[i] == "--" else 0
    if i >= len(argv):
        raise UsageError("usage: python -m gangplane.agent.rsh [ssh options] HOST COMMAND...")
    if i + 1 >= len(argv):
        raise UsageError(f"{argv[i]}: an interactive login is not supported, give a command")
    return Invocation(argv[i], list(argv[i + 1 :]), attempts)


def _connect(path: Path, attempts: int) -> socket.socket:
    for attempt in range(attempts):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
            return sock
        except OSError:
            sock.close()
            if attempt + 1 == attempts:
                raise
            time.sleep(1.0)
    raise AssertionError("unreachable")


def _relay_stdin(channel: Channel) -> None:
    with contextlib.suppress(OSError):
        while chunk := os.read(0, 65536):
            channel.send(Frame.STDIN, chunk)
        channel.send(Frame.STDIN_EOF)


def session(sock: socket.socket, words: list[str], keys_dir: Path) -> int:
    """Run ``words`` through a daemon: prove the key, relay stdio, return the remote exit code."""
    channel = Channel(sock)
    try:
        kind, challenge = channel.receive()
        if kind != Frame.CHALLENGE:
            raise WireError(f"expected a challenge, got {kind.name}")
        channel.send_json(Frame.HELLO, {"command": words, "signature": sign(challenge, keys_dir)})
        threading.Thread(target=_relay_stdin, args=(channel,), daemon=True).start()
        while True:
            kind, payload = channel.receive()
            if kind in (Frame.STDOUT, Frame.STDERR):
                _write_all(1 if kind == Frame.STDOUT else 2, payload)
            elif kind == Frame.EXIT:
                return int(payload)
    except (WireError, OSError, ValueError) as err:
        sys.stderr.write(f"gangplane-rsh: session lost: {err}\n")
        return SSH_EXIT
    finally:
        channel.close()


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def run(invocation: Invocation, env: Mapping[str, str]) -> int:
    """Run the command on ``invocation.host``: here if it is this pod, else through its daemon."""
    rsh_dir, keys, own = env.get(rp.DIR_ENV), env.get(rp.KEYS_ENV), env.get(rp.SOCKET_ENV)
    if not rsh_dir or not keys or not own:
        sys.stderr.write("gangplane-rsh: not in an MPI pod (no GANGPLANE_RSH_* variables)\n")
        return SSH_EXIT
    namespace = env.get(rp.NAMESPACE_ENV, "default")
    path = rp.socket_path(Path(rsh_dir), namespace, rp.host_key(invocation.host, namespace))
    if path == Path(own):  # this pod's own host (compared by socket: the agent rewrites pod host names)
        argv = command_argv(" ".join(invocation.words), env)
        os.execvp(argv[0], argv)
    try:
        sock = _connect(path, invocation.attempts)
    except OSError as err:
        sys.stderr.write(
            f"gangplane-rsh: connect to host {invocation.host}: no pod of that host serves a shell here "
            f"({err.strerror or err})\n"
        )
        return SSH_EXIT
    return session(sock, invocation.words, Path(keys))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == [rp.SERVE_FLAG]:
        serve(Path(os.environ[rp.SOCKET_ENV]), Path(os.environ[rp.KEYS_ENV]))
        return 0
    try:
        return run(parse(args), os.environ)
    except (UsageError, ValueError) as err:
        sys.stderr.write(f"gangplane-rsh: {err}\n")
        return SSH_EXIT


if __name__ == "__main__":
    sys.exit(main())
