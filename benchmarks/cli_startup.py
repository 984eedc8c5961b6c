"""CLI start-up benchmark: wall time of ``gangplane get|describe|logs|delete`` against a running API server.

Baseline (stated target, issue #20): each command done in <= 0.3 s, as kubectl's 0.1-0.3 s; the floor is
``python -c pass`` plus typer and an HTTP client (``import typer, httpx2; httpx2.Client()``: 180 modules,
trio and h2 among them). Each command runs
``RUNS`` times in a fresh interpreter; the minimum is reported (the machine is shared, so the median mostly
measures the neighbours), with the ratio to the floor. The server is the real control-plane process
(``python -m gangplane.server``, SQLite, HTTPS) in a temporary ``$GANGPLANE_HOME``.

Measured (2 shared cores, load average 3.4, Python 3.11, 2026-12): before lazy command loading ``get --help``
took 0.85 s wall (0.55 s of imports); now every command needs 1.6-1.8x the floor's CPU time (get 0.35 s,
describe 0.36 s, logs 0.38 s, delete 0.36 s against a 0.21 s floor). On an idle core the floor is 0.13 s,
so the commands take about 0.2-0.25 s. What remains above the floor: typer's pydantic adapters and
lightkube's kubeconfig parsing (client/kubeconfig.py).
Not a timed test: ``.venv/bin/python benchmarks/cli_startup.py [RUNS]``.
"""

from __future__ import annotations

import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gangplane.cluster import launch

RUNS = 7
COMMANDS = {
    "floor (python, typer, httpx2 client)": [sys.executable, "-c", "import typer, httpx2; httpx2.Client()"],
    "gangplane get pods": [sys.executable, "-m", "gangplane", "get", "pods"],
    "gangplane get trainjobs,pods -o wide": [
        sys.executable,
        "-m",
        "gangplane",
        "get",
        "trainjobs,pods",
        "-o",
        "wide",
    ],
    "gangplane describe configmap bench": [
        sys.executable,
        "-m",
        "gangplane",
        "describe",
        "configmap",
        "bench",
    ],
    "gangplane logs ghost": [sys.executable, "-m", "gangplane", "logs", "ghost"],
    "gangplane delete configmap ghost": [sys.executable, "-m", "gangplane", "delete", "configmap", "ghost"],
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str], runs: int) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of each run; CPU time is what an idle machine's wall time would be, near enough."""
    times = []
    for _ in range(runs):
        started, cpu = time.perf_counter(), _cpu()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append((time.perf_counter() - started, _cpu() - cpu))
    return times


def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        env = {**os.environ, "GANGPLANE_HOME": str(state)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled modules are cached
        launch.start_background(state, port=_free_port(), module="gangplane.server")
        try:
            cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bench}\n"
            subprocess.run([sys.executable, "-m", "gangplane", "apply", "-f", "-"], input=cm.encode(), env=env,
                           check=True, stdout=subprocess.DEVNULL)  # fmt: skip
            results = {name: timed(argv, env, runs) for name, argv in COMMANDS.items()}
        finally:
            launch.stop(state)
    floor = min(cpu for _, cpu in next(iter(results.values())))
    print(f"{'command':40} {'min wall s':>10} {'median wall s':>13} {'min CPU s':>9} {'CPU x floor':>11}")
    for name, times in results.items():
        walls, cpus = [w for w, _ in times], [c for _, c in times]
        print(f"{name:40} {min(walls):10.3f} {statistics.median(walls):13.3f} {min(cpus):9.3f} "
              f"{min(cpus) / floor:11.2f}")  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else RUNS)
