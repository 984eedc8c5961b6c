"""The remote shell MPI pods use instead of SSH: the ssh-style command line, host names to sockets, how the agent
adapts an OpenMPI runtime's containers, the key check, and a real daemon serving real sessions."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric import ec

from gangplane.agent import rsh_pods as rp
from gangplane.agent.env import ConfigError
from gangplane.agent.rsh import SSH_EXIT, Invocation, UsageError, parse, run, session
from gangplane.agent.rsh_server import Log, Session, can_set_hostname, command_argv, serve
from gangplane.agent.rsh_wire import Channel, sign, verify
from gangplane.api.jobset import JOBSET_NAME_LABEL


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["host", "echo", "hi"], Invocation("host", ["echo", "hi"])),
        (["-o", "ConnectionAttempts=10", "h.s", "orted", "-mca"], Invocation("h.s", ["orted", "-mca"], 10)),
        (["-oConnectionAttempts=3", "-x", "-T", "h", "true"], Invocation("h", ["true"], 3)),
        (["-p", "2222", "-l", "mpiuser", "--", "h", "true"], Invocation("h", ["true"])),
    ],
    ids=["plain", "openmpi-rsh-args", "joined-option-and-flags", "port-user-dashdash"],
)
def test_parse_reads_an_ssh_command_line(argv: list[str], expected: Invocation) -> None:
    assert parse(argv) == expected


@pytest.mark.parametrize("argv", [[], ["-o", "X=1"], ["host"]], ids=["empty", "no-host", "no-command"])
def test_parse_refuses_what_it_cannot_run(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        parse(argv)


@pytest.mark.parametrize(
    "host",
    [
        "job-node-0-0.job",
        "job-node-0-0.job.",
        "JOB-node-0-0.job.ns",
        "job-node-0-0.job.ns.svc",
        "job-node-0-0.job.ns.svc.cluster.local",
    ],
)
def test_every_spelling_of_a_pod_host_is_one_key(host: str) -> None:
    assert rp.host_key(host, "ns") == "job-node-0-0.job"


def test_socket_paths_are_short_and_per_namespace(tmp_path: Path) -> None:
    one = rp.socket_path(tmp_path, "a", "job-node-0-0.job")
    assert one != rp.socket_path(tmp_path, "b", "job-node-0-0.job")
    assert one.parent == tmp_path and len(one.name) == len("0123456789abcdef01234567.sock")


def _mpi_pod(command: list[str], env: list[dict[str, str]] | None = None) -> tuple[dict, dict]:
    container = {
        "name": "node",
        "command": command,
        "env": env or [],
        "volumeMounts": [{"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"}],
        "readinessProbe": {"tcpSocket": {"port": 2222}, "initialDelaySeconds": 5},
    }
    items = [{"key": "ssh-publickey", "path": "authorized_keys"}]
    pod = {
        "metadata": {"name": "job-node-0-0-x", "namespace": "ns", "labels": {JOBSET_NAME_LABEL: "job"}},
        "spec": {
            "hostname": "job-node-0-0",
            "subdomain": "job",
            "containers": [container],
            "volumes": [{"name": "mpi-ssh-auth", "secret": {"secretName": "job-mpi-ssh-auth", "items": items}}],
        },
    }  # fmt: skip
    return pod, container


def _env(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container["env"]}


def test_a_worker_sshd_becomes_the_daemon_with_a_socket_probe(tmp_path: Path) -> None:
    pod, container = _mpi_pod(["/usr/sbin/sshd"], [{"name": "OMPI_MCA_btl_tcp_if_include", "value": "eth0"}])
    adapted = rp.adapt(pod, container, tmp_path, "/py", root=False)
    sock = str(rp.socket_path(tmp_path, "ns", "job-node-0-0.job"))
    assert adapted["command"] == ["/py", "-m", "gangplane.agent.rsh", "--serve"] and adapted["args"] == []
    assert adapted["readinessProbe"] == {"initialDelaySeconds": 5, "exec": {"command": ["test", "-S", sock]}}
    env = _env(adapted)
    assert env[rp.SOCKET_ENV] == sock and env[rp.KEYS_ENV] == "/home/mpiuser/.ssh"
    assert env[rp.RSH_AGENT_ENV] == "/py -m gangplane.agent.rsh"
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in env
    names = [e["name"] for e in adapted["env"]]  # the container's own value comes after gangplane's default
    assert names.index("OMPI_MCA_btl_tcp_if_include", 1) > 0 and env["OMPI_MCA_btl_tcp_if_include"] == "eth0"
    assert container["command"] == ["/usr/sbin/sshd"]  # the pod's own spec is left alone


def test_a_launcher_keeps_its_command_and_gets_the_agent(tmp_path: Path) -> None:
    pod, container = _mpi_pod(["mpirun", "hostname"])
    adapted = rp.adapt(pod, container, tmp_path, "/py", root=True)
    assert (
        adapted["command"] == ["mpirun", "hostname"]
        and adapted["readinessProbe"] == container["readinessProbe"]
    )
    assert _env(adapted)["OMPI_ALLOW_RUN_AS_ROOT"] == "1"


def test_pods_without_the_ssh_secret_are_not_touched(tmp_path: Path) -> None:
    pod, container = _mpi_pod(["/usr/sbin/sshd"])
    container = {**container, "volumeMounts": []}
    assert rp.adapt(pod, container, tmp_path, "/py", root=False) == container


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    key = ec.generate_private_key(ec.SECP521R1())
    folder = tmp_path / "keys"
    folder.mkdir()
    (folder / "id_rsa").write_bytes(
        key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.TraditionalOpenSSL, ser.NoEncryption())
    )
    public = key.public_key().public_bytes(ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH)
    (folder / "authorized_keys").write_bytes(public + b"\n")
    return folder


def test_only_the_jobs_key_verifies(keys: Path, tmp_path: Path) -> None:
    challenge = os.urandom(32)
    assert verify(challenge, sign(challenge, keys), keys)
    assert not verify(os.urandom(32), sign(challenge, keys), keys)
    other = ec.generate_private_key(ec.SECP521R1()).public_key()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "authorized_keys").write_bytes(
        other.public_bytes(ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH)
    )
    assert not verify(challenge, sign(challenge, keys), tmp_path / "other")


@pytest.fixture
def daemon(keys: Path, tmp_path: Path) -> Iterator[Path]:
    """A real daemon in a child process (it installs signal handlers), serving ``<tmp>/rsh/w.sock``."""
    sock = tmp_path / "rsh" / "w.sock"
    env = {**os.environ, rp.SOCKET_ENV: str(sock), rp.KEYS_ENV: str(keys), "HOSTNAME": "job-node-0-0"}
    log = (tmp_path / "daemon.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "gangplane.agent.rsh", "--serve"], env=env, stdout=log)
    deadline = time.monotonic() + 30
    while not sock.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the daemon did not start"
        time.sleep(0.05)
    yield sock
    proc.send_signal(signal.SIGTERM)
    proc.wait(30)
    log.close()
    assert not sock.exists()  # removed on SIGTERM


def _client_env(sock: Path, keys: Path) -> dict[str, str]:
    own = rp.socket_path(sock.parent, "ns", "job-launcher-0-0.job")
    return {
        rp.DIR_ENV: str(sock.parent),
        rp.KEYS_ENV: str(keys),
        rp.SOCKET_ENV: str(own),
        rp.NAMESPACE_ENV: "ns",
    }


def _agent(args: list[str], env: dict[str, str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "gangplane.agent.rsh", *args]
    return subprocess.run(command, env={**os.environ, **env}, input=stdin, capture_output=True, timeout=60)


def test_a_session_relays_stdio_and_the_exit_code(daemon: Path, keys: Path, tmp_path: Path) -> None:
    # the daemon's socket is named by hand here: the host's hashed name points at it
    os.symlink(daemon, rp.socket_path(daemon.parent, "ns", "job-node-0-0.job"))
    words = ["cat;", "echo", "err", ">&2;", "exit", "3"]
    done = _agent(["job-node-0-0.job.ns.svc", *words], _client_env(daemon, keys), b"piped in")
    assert (done.returncode, done.stdout, done.stderr) == (3, b"piped in", b"err\n")
    log = (tmp_path / "daemon.log").read_text()
    assert "session 1: pid" in log and "session 1: exit 3" in log


def test_a_client_without_the_key_is_refused(daemon: Path, tmp_path: Path) -> None:
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    key = ec.generate_private_key(ec.SECP521R1())
    (stranger / "id_rsa").write_bytes(
        key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.TraditionalOpenSSL, ser.NoEncryption())
    )
    os.symlink(daemon, rp.socket_path(daemon.parent, "ns", "job-node-0-0.job"))
    done = _agent(["job-node-0-0.job", "touch", str(tmp_path / "ran")], _client_env(daemon, stranger))
    assert done.returncode == SSH_EXIT and b"Permission denied" in done.stderr
    assert not (tmp_path / "ran").exists()


def test_a_lost_client_ends_the_remote_command(daemon: Path, keys: Path, tmp_path: Path) -> None:
    os.symlink(daemon, rp.socket_path(daemon.parent, "ns", "job-node-0-0.job"))
    pidfile = tmp_path / "pid"
    command = [
        sys.executable,
        "-m",
        "gangplane.agent.rsh",
        "job-node-0-0.job",
        f"echo $$ > {pidfile}; exec sleep 300",
    ]
    client = subprocess.Popen(
        command, env={**os.environ, **_client_env(daemon, keys)}, stdin=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    remote = int(pidfile.read_text())
    client.kill()  # mpirun killed its agent: the session's process group must go
    client.wait()
    while _alive(remote):
        assert time.monotonic() < deadline + 30, "the remote command outlived its client"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie has ended
    except OSError:  # gone between the two looks
        return False


def test_this_pods_own_host_runs_here_and_unknown_hosts_fail_like_ssh(tmp_path: Path, keys: Path) -> None:
    env = _client_env(tmp_path / "rsh" / "x.sock", keys)
    done = _agent(["job-launcher-0-0.job", "echo", "local"], env)
    assert (done.returncode, done.stdout) == (0, b"local\n")
    done = _agent(["nowhere.job", "true"], env)
    assert done.returncode == SSH_EXIT and b"no pod of that host" in done.stderr
    assert run(Invocation("h", ["true"]), {}) == SSH_EXIT  # outside an MPI pod


def test_a_session_in_process_relays_output_and_exit_code(
    keys: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    ours, theirs = socket.socketpair()
    log = io.StringIO()
    server = Session(1, Channel(theirs), keys, Log(log))
    thread = threading.Thread(target=server.run)
    thread.start()
    code = session(ours, ["echo", "out;", "echo", "err", ">&2;", "exit", "4"], keys)
    thread.join(30)
    assert code == 4
    out, err = capfd.readouterr()
    assert (out, err) == ("out\n", "err\n")
    assert "session 1: exit 4" in log.getvalue() and "session 1: err" in log.getvalue()


def test_serve_answers_until_sigterm_then_removes_its_socket(keys: Path, tmp_path: Path) -> None:
    sock, out = tmp_path / "d" / "s.sock", io.StringIO()
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    codes: list[int] = []

    def client() -> None:
        deadline = time.monotonic() + 30
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(str(sock))
        codes.append(session(conn, ["true"], keys))
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=client)
    thread.start()
    try:
        with pytest.raises(SystemExit):
            serve(sock, keys, out)  # signal handlers need the main thread: the client runs beside it
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
        thread.join(30)
    assert codes == [0] and not sock.exists()
    assert "standing in for sshd" in out.getvalue()


def test_commands_run_under_the_pods_host_name_when_allowed() -> None:
    argv = command_argv("hostname", {"HOSTNAME": "job-node-0-0"})
    if not can_set_hostname():
        assert argv == ["/bin/sh", "-c", "hostname"]
        return
    assert subprocess.run(argv, capture_output=True, text=True, check=True).stdout == "job-node-0-0\n"


def test_a_socket_path_too_long_for_unix_sockets_is_a_config_error(tmp_path: Path) -> None:
    pod, container = _mpi_pod(["/usr/sbin/sshd"])
    with pytest.raises(ConfigError, match="too long for a Unix socket"):
        rp.adapt(pod, container, tmp_path / ("d" * 120), "/py", root=False)
