"""Docs are tests: run the shell blocks that README.md and docs/*.md mark runnable, page by page, as written.

Markers (docs/contributing.md has the reader's version):

- a fenced block whose info string is ``sh runnable`` (or ``bash runnable``) is run; ``needs=slurm`` or
  ``needs=kubectl`` after it names a prerequisite: without it the block is left out (the transcript says so),
  and a page none of whose blocks can run is skipped with the reason;
- a comment line right after a command states what its output (stdout and stderr together) shows:
  ``# expect: REGEX`` is checked once (Python ``re.search``, multi-line); ``# eventually: REGEX`` re-runs the
  command every half second until it exits 0 and its output matches, for at most ``EVENTUALLY_S`` seconds.

Each page's blocks run in order in one bash session (``set -o pipefail``; ``cd`` and ``export`` carry over)
in the repository root, with an environment of its own: ``HOME`` and ``GANGPLANE_HOME`` (``~/.gangplane``) in
the scratch directory, a fresh ``TMPDIR`` (removed afterwards), free ports in ``GANGPLANE_PORT`` (read by
``gangplane up``) and the local Slurm's ``GANGPLANE_SLURM_*_PORT``, and the repository's ``.venv/bin`` first
on ``PATH``. Any non-zero exit or expectation that does not hold fails the page. ``gangplane down`` (and
``scripts/slurm/stop.sh`` for a Slurm the page left running under its ``TMPDIR``) always runs at the end.

By hand: ``python tests/docs/runbook.py [--list] [PAGE ...]``.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from docblocks import REPO, Block, Expect, Step, blocks, listing, runnable_pages, steps

from gangplane.server import lifecycle

EVENTUALLY_S = float(os.environ.get("GANGPLANE_DOCS_EVENTUALLY_S", "90"))
STEP_TIMEOUT_S = 300.0
_DONE = "__runbook_done__"


class DocsFailure(AssertionError):
    """A step of a page failed: which line, what ran, what it printed."""


@dataclass
class Result:
    rc: int
    output: str


class Shell:
    """One bash session; each command's output goes to a file, then a marker line says it ended."""

    def __init__(self, cwd: Path, env: dict[str, str], scratch: Path) -> None:
        self._scratch, self._count = scratch, 0
        self._proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._send("set -o pipefail\n")

    def run(self, command: str, timeout: float = STEP_TIMEOUT_S) -> Result:
        # A file per command: a daemon the command started may still hold the previous one open.
        self._count += 1
        out = self._scratch / f"step-{self._count}.out"
        self._send(f"{{ {command}\n}} >{out} 2>&1 </dev/null\necho {_DONE} $?\n")
        rc = self._wait_done(timeout)
        return Result(rc, out.read_text(errors="replace") if out.exists() else "")

    def _send(self, text: str) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(text.encode())
        self._proc.stdin.flush()

    def _wait_done(self, timeout: float) -> int:
        assert self._proc.stdout is not None
        fd, seen, deadline = self._proc.stdout.fileno(), b"", time.monotonic() + timeout
        while (match := re.search(rb"__runbook_done__ (\d+)\n", seen)) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                return 124
            ready, _, _ = select.select([fd], [], [], left)
            chunk = os.read(fd, 4096) if ready else b""
            if ready and not chunk:
                return -1  # the shell ended (a command ran `exit`)
            seen += chunk
        return int(match[1])

    def close(self) -> None:
        if self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_port_block(size: int) -> int:
    """A base port with base..base+size all free (the local Slurm's nodes listen on base + i)."""
    for _ in range(50):
        base = free_port()
        with ExitStack() as held:
            try:
                for port in range(base, base + size + 1):
                    held.enter_context(socket.socket()).bind(("127.0.0.1", port))
            except OSError:
                continue
            return base
    raise RuntimeError(f"no block of {size + 1} free ports")


def venv_bin(root: Path = REPO) -> Path:
    local = root / ".venv" / "bin"
    return local if (local / "gangplane").exists() else Path(sys.executable).parent


def page_env(root: Path, scratch: Path) -> dict[str, str]:
    """The page's own HOME, GANGPLANE_HOME, TMPDIR and ports; the repository's venv first on PATH."""
    home = scratch / "home"
    home.mkdir(parents=True, exist_ok=True)
    # TMPDIR short, in the system's temporary directory: a local Slurm started under it puts Unix sockets
    # there, whose paths must fit in 108 bytes.
    tmp = tempfile.mkdtemp(prefix="gpdocs-")
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "GANGPLANE_TOKEN", "SLURM_CONF")}
    pythonpath = os.pathsep.join(p for p in (str(root / "src"), env.get("PYTHONPATH", "")) if p)
    env.update(
        HOME=str(home),
        GANGPLANE_HOME=str(home / ".gangplane"),
        TMPDIR=tmp,
        PATH=f"{venv_bin(root)}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=pythonpath,
        GANGPLANE_PORT=str(free_port()),
        GANGPLANE_SLURM_CTLD_PORT=str(free_port()),
        GANGPLANE_SLURM_SLURMD_PORT=str(free_port_block(8)),
    )
    return env


def block_missing(block: Block) -> str | None:
    """Why the block cannot run here, or None."""
    for need in block.needs:
        if need not in _NEEDS:
            raise ValueError(
                f"{block.page}:{block.line}: unknown prerequisite needs={need} (known: {sorted(_NEEDS)})"
            )
        why = _NEEDS[need]()
        if why:
            return f"{block.page}:{block.line}: {why}"
    return None


def missing_needs(page: Path, root: Path = REPO) -> str | None:
    """Why none of the page's runnable blocks can run here, or None when some can."""
    reasons = [block_missing(b) for b in blocks(page, root) if b.runnable]
    return "; ".join(r for r in reasons if r) if reasons and all(reasons) else None


def _slurm_missing() -> str | None:
    if shutil.which("slurmctld") is None and not Path("/usr/sbin/slurmctld").exists():
        return "Slurm is not installed (scripts/slurm/install.sh, run by .ci/run as root)"
    if os.geteuid() != 0:
        return "the local Slurm (scripts/slurm/start.sh) needs root"
    return None


def _kubectl_missing() -> str | None:
    return None if shutil.which("kubectl") else "kubectl is not installed"


def _openmpi_missing() -> str | None:
    return None if shutil.which("mpirun") else "OpenMPI is not installed (docs/mpi.md, Setup)"


_NEEDS = {"slurm": _slurm_missing, "kubectl": _kubectl_missing, "openmpi": _openmpi_missing}


def run_page(
    page: Path, scratch: Path, root: Path = REPO, progress: Callable[[str], None] | None = None
) -> list[str]:
    """Run every runnable block of the page in order; the transcript, or DocsFailure at the first failure."""
    env = page_env(root, scratch)
    shell = Shell(root, env, scratch)
    transcript: list[str] = []
    try:
        for block in (b for b in blocks(page, root) if b.runnable):
            skipped = block_missing(block)
            done = (
                [f"skipped {skipped}"] if skipped else (_run_step(shell, block.page, s) for s in steps(block))
            )
            for line in done:
                transcript.append(line)
                if progress:
                    progress(line)
    finally:
        shell.close()
        _clean_up(root, env)
    return transcript


def _run_step(shell: Shell, page: str, step: Step) -> str:
    started = time.monotonic()
    result = shell.run(step.command)
    waits = [e for e in step.expects if e.kind == "eventually"]
    deadline = started + EVENTUALLY_S
    while waits and not _holds(result, waits) and time.monotonic() < deadline:
        time.sleep(0.5)
        result = shell.run(step.command)
    first, *more = step.command.splitlines()
    where = f"{page}:{step.line}: `{first}{' ...' if more else ''}`"
    if result.rc != 0:
        raise DocsFailure(f"{where} exited {result.rc}{_tail(result.output)}")
    for expect in step.expects:
        if not re.search(expect.pattern, result.output, re.MULTILINE):
            waited = f" within {EVENTUALLY_S:.0f} s" if expect.kind == "eventually" else ""
            raise DocsFailure(
                f"{where}: output never matched{waited} /{expect.pattern}/ ({page}:{expect.line})"
                f"{_tail(result.output)}"
            )
    return f"{where} ({time.monotonic() - started:.1f} s)"


def _holds(result: Result, expects: list[Expect]) -> bool:
    return result.rc == 0 and all(re.search(e.pattern, result.output, re.MULTILINE) for e in expects)


def _tail(output: str, lines: int = 40) -> str:
    kept = output.rstrip().splitlines()[-lines:]
    return "\n  | " + "\n  | ".join(kept) if kept else " (no output)"


def _clean_up(root: Path, env: dict[str, str]) -> None:
    """Stop what a failed page may have left: its control plane and any local Slurm under its TMPDIR."""
    if lifecycle.status(Path(env["GANGPLANE_HOME"])).running:
        gangplane = str(venv_bin(root) / "gangplane")
        subprocess.run([gangplane, "down"], env=env, cwd=root, capture_output=True, timeout=120, check=False)
    for conf in Path(env["TMPDIR"]).glob("**/etc/slurm.conf"):
        state = conf.parent.parent
        subprocess.run(
            [str(root / "scripts" / "slurm" / "stop.sh"), str(state)],
            env=env,
            capture_output=True,
            timeout=120,
            check=False,
        )
    shutil.rmtree(env["TMPDIR"], ignore_errors=True)


def main(argv: list[str]) -> int:
    if "--list" in argv:
        print("\n".join(listing()))
        return 0
    chosen = [Path(a).resolve() for a in argv] or runnable_pages()
    for page in chosen:
        why = missing_needs(page)
        if why:
            print(f"skipped {why}")
            continue
        with tempfile.TemporaryDirectory(prefix="gangplane-docs-") as scratch:
            try:
                run_page(page, Path(scratch), progress=lambda line: print(line, flush=True))
            except DocsFailure as failure:
                print(f"FAILED {failure}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
