"""``gangplane rsh``: the MPI remote shell as a command; its arguments reach the agent untouched."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gangplane.agent import rsh_pods as rp
from gangplane.cli.main import app


def test_outside_an_mpi_pod_it_fails_like_ssh(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (rp.DIR_ENV, rp.KEYS_ENV, rp.SOCKET_ENV):
        monkeypatch.delenv(name, raising=False)
    done = CliRunner().invoke(app, ["rsh", "-o", "ConnectionAttempts=1", "job-node-0-0.job", "true"])
    assert done.exit_code == 255 and "not in an MPI pod" in done.output


def test_options_after_the_host_belong_to_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = rp.socket_path(tmp_path, "default", "me.job")
    monkeypatch.setenv(rp.DIR_ENV, str(tmp_path))
    monkeypatch.setenv(rp.KEYS_ENV, str(tmp_path))
    monkeypatch.setenv(rp.SOCKET_ENV, str(own))
    monkeypatch.setattr("os.execvp", lambda file, argv: (_ for _ in ()).throw(SystemExit(argv[-1])))
    done = CliRunner().invoke(app, ["rsh", "-x", "me.job", "ls", "--help"])
    assert done.exit_code == 1 and done.exception is not None and "ls --help" in str(done.exception)
