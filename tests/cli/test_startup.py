"""Start-up budget of the everyday commands, and Ctrl-C at any moment.

Robust on a loaded machine: the main check is *what* a command imports (no server, simulator, API models,
numpy, torch, matplotlib, rich), which is what made start-up slow; the time bound is generous (kubectl-like
0.3 s is measured by ``benchmarks/cli_startup.py``, not asserted here).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_cluster import Cli, embedded_cluster

from gangplane.store.catalog import CONFIGMAPS

# Loaded by the server, the controllers, the simulator or ``apply``; none is needed to list or describe.
HEAVY = (
    "numpy",
    "torch",
    "matplotlib",
    "uvicorn",
    "starlette",
    "prometheus_client",
    "rich",
    "gangplane.api.serde",
    "gangplane.api.trainer",
    "gangplane.api.jobset",
    "gangplane.api.base",
    "gangplane.server.app",
    "gangplane.server.lifecycle",
    "gangplane.simulator",
    "gangplane.controllers",
    "gangplane.runtime",
    "gangplane.store.memory",
    "gangplane.store.sqlite",
)
_REPORT = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
    "sys.argv = ['gangplane', *sys.argv[1:]]\n"
    "from gangplane.cli.main import main\n"
    "main()\n"
)


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    src = str(Path(__file__).resolve().parents[2] / "src")
    return {**env, "GANGPLANE_HOME": str(home), "PYTHONPATH": src}


def _modules(args: list[str], home: Path) -> set[str]:
    done = subprocess.run([sys.executable, "-c", _REPORT, *args], env=_env(home), capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:])


@pytest.mark.parametrize(
    "args",
    [
        ["get", "trainjobs,pods", "-o", "wide"],
        ["describe", "trainjob", "x"],
        ["logs", "trainjob/x"],
        ["delete", "trainjob", "x"],
    ],
)
def test_everyday_commands_import_nothing_heavy(args: list[str], tmp_path: Path) -> None:
    loaded = _modules(args, tmp_path)  # no kubeconfig there: the command fails fast, after its imports
    assert "gangplane.cli.connect" in loaded
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == []


def test_help_of_a_command_loads_only_that_command(tmp_path: Path) -> None:
    loaded = _modules(["get", "--help"], tmp_path)
    assert "gangplane.cli.get" in loaded and "gangplane.cli.simulate" not in loaded
    assert not any(m.startswith(("numpy", "gangplane.server.app", "gangplane.api.serde")) for m in loaded)


def test_start_up_time_is_within_a_generous_bound(tmp_path: Path) -> None:
    best = min(_cpu([sys.executable, "-m", "gangplane", "get", "pods"], tmp_path) for _ in range(3))
    assert best < 2.5  # about 0.25 s on an idle core; a loose guard: the module test above is the real one


def _cpu(argv: list[str], home: Path) -> float:
    """The command's CPU seconds (user + system): unlike wall time, not stretched by a loaded machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=_env(home), capture_output=True, timeout=60, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    with embedded_cluster(tmp_path_factory.mktemp("gangplane-home")) as cluster:
        cluster.store.create(CONFIGMAPS, {"metadata": {"name": "watched", "namespace": "default"}})
        yield cluster


@pytest.mark.parametrize("after", [0.3, "output"])
def test_ctrl_c_at_any_moment_exits_130_without_a_traceback(cli: Cli, after: float | str) -> None:
    """During the command's imports or its connecting, and while watching. (Not within the interpreter's own
    first ~20 ms, before gangplane's code runs: there CPython itself reports the KeyboardInterrupt.)"""
    argv = [sys.executable, "-m", "gangplane", "get", "configmaps", "-w"]
    proc = subprocess.Popen(argv, env=_env(cli.state_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if after == "output":
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(b"NAME")  # the table is out: the watch is open
    else:
        time.sleep(float(after))
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err, err.decode()
    # -SIGINT: the signal came before the interpreter took it over; a shell reports both as 130
    assert proc.returncode in (130, -signal.SIGINT)


def test_help_is_plain_words_without_markup() -> None:
    from typer.testing import CliRunner

    from gangplane.cli.main import COMMANDS, app

    for command in ["", *COMMANDS]:
        shown = CliRunner().invoke(app, [*([command] if command else []), "--help"]).stdout
        assert "Usage" in shown
        assert "``" not in shown and ":class:" not in shown, f"gangplane {command} --help"
