"""Building and caching the virtual environments images map to (the shell around ``images.py``).

An environment lives under ``<cache>/<key>``, ``key`` hashing its recipe (``images.env_key``); the cache is
``$GANGPLANE_ENV_CACHE``, else ``<gangplane home>/envs``. Creation is

- **locked**: a thread lock per key in this process and an ``flock`` on ``<cache>/<key>.lock`` across
  processes, so two pods (or two clusters sharing the cache) never build the same environment twice;
- **atomic**: the venv is built in ``<cache>/builds/<key>-<random>`` and published by renaming a symlink onto
  ``<cache>/<key>`` (a venv cannot be moved: its scripts name their interpreter by absolute path), so a
  reader sees a finished environment or none; a failed or interrupted build leaves nothing published;
- **logged**: pip's output goes to ``<cache>/<key>.log`` and each line to a callback.

``inherit``: a ``gangplane-base.pth`` in the new environment's site-packages lists gangplane's own, after the
environment's own, so what gangplane has (torch, numpy) is importable and satisfies pip, and is not
installed again.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import os
import secrets
import shutil
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TextIO

from gangplane.agent.images import BaseInterpreter, ImageEnvironment, env_key

CACHE_ENV = "GANGPLANE_ENV_CACHE"
PTH_NAME = "gangplane-base.pth"
RECIPE_NAME = "gangplane-env.txt"

LineSink = Callable[[str], None]


class BuildError(Exception):
    """Creating an environment failed; the message says which step and ends with pip's last lines."""


def cache_dir(state_dir: Path, environ: Mapping[str, str] | None = None) -> Path:
    given = (os.environ if environ is None else environ).get(CACHE_ENV)
    return Path(given).expanduser() if given else state_dir / "envs"


def this_interpreter() -> BaseInterpreter:
    paths = sysconfig.get_paths()
    site = tuple(dict.fromkeys([paths["purelib"], paths["platlib"]]))
    return BaseInterpreter(sys.executable, sys.version.split()[0], site, _pip_installs_elsewhere())


def _pip_installs_elsewhere() -> bool:
    """Whether this interpreter's pip can install into another one (``pip --python``, pip 22.3+); pip is run,
    never imported, so only its installed version is read."""
    try:
        version = importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        return False
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) >= (22, 3)


class EnvironmentCache:
    """The built environments under one cache directory. Thread- and process-safe."""

    def __init__(self, root: Path, base: BaseInterpreter | None = None) -> None:
        self.root = root
        self.base = base or this_interpreter()
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._running: set[subprocess.Popen[str]] = set()
        self._closed = False

    def key(self, rule: ImageEnvironment) -> str:
        return env_key(rule, self.base)

    def path(self, rule: ImageEnvironment) -> Path:
        return self.root / self.key(rule)

    def log_path(self, rule: ImageEnvironment) -> Path:
        return self.root / f"{self.key(rule)}.log"

    def published(self, rule: ImageEnvironment) -> Path | None:
        """The environment when it is built (its interpreter exists behind the published link)."""
        path = self.path(rule)
        return path if (path / "bin" / "python").exists() else None

    def ensure(self, rule: ImageEnvironment, on_line: LineSink = lambda _: None) -> Path:
        """The rule's environment, built first if it is not yet (blocking); raises ``BuildError``."""
        found = self.published(rule)
        if found is not None:
            return found
        key = self.key(rule)
        with self._key_lock(key), self._file_lock(key):
            found = self.published(rule)  # another thread or process built it while we waited
            if found is not None:
                return found
            self._sweep(key)
            return self._build(rule, key, on_line)

    def close(self) -> None:
        """Stop every build in progress (the agent is shutting down); later builds fail at once."""
        with self._guard:
            self._closed = True
            running = list(self._running)
        for proc in running:
            with contextlib.suppress(OSError):
                proc.kill()

    # -- building -------------------------------------------------------------------------------------------
    def _sweep(self, key: str) -> None:
        """Remove what builds of ``key`` left when their process died mid-way (under the key's lock, and with
        nothing published, none of them is in use)."""
        for left in (self.root / "builds").glob(f"{key}-*"):
            shutil.rmtree(left, ignore_errors=True)

    def _build(self, rule: ImageEnvironment, key: str, on_line: LineSink) -> Path:
        builds = self.root / "builds"
        builds.mkdir(parents=True, exist_ok=True)
        target = builds / f"{key}-{secrets.token_hex(4)}"
        try:
            with self.log_path(rule).open("w") as log:
                sink = _tee(log, on_line)
                self._create(rule, target, sink)
                self._install(rule, target, sink)
            (target / RECIPE_NAME).write_text(rule.model_dump_json(by_alias=True, exclude_none=True) + "\n")
            _publish(target, self.root / key)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        return self.root / key

    def _borrows_pip(self, rule: ImageEnvironment) -> bool:
        """gangplane's pip installs into the new environment, which then needs none of its own: seconds
        saved on every build (``ensurepip`` is the slowest part of ``python -m venv``)."""
        return self.base.has_pip and rule.python is None

    def _create(self, rule: ImageEnvironment, target: Path, sink: LineSink) -> None:
        python = rule.python or self.base.executable
        sink(f"creating a virtual environment with {python}")
        flags = ["--without-pip"] if self._borrows_pip(rule) else []
        self._run([python, "-m", "venv", *flags, str(target)], sink, "creating the virtual environment")
        if rule.inherits():
            site = _site_packages(target)
            (site / PTH_NAME).write_text("".join(f"{p}\n" for p in self.base.site_packages))

    def _install(self, rule: ImageEnvironment, target: Path, sink: LineSink) -> None:
        sink(f"installing {' '.join(rule.packages)}")
        python = str(target / "bin" / "python")
        pip = (
            [self.base.executable, "-m", "pip", "--python", python]
            if self._borrows_pip(rule)
            else [python, "-m", "pip"]
        )
        pip += ["install", "--disable-pip-version-check"]
        self._run([*pip, *rule.pip_args, *rule.packages], sink, f"pip install {' '.join(rule.packages)}")

    def _run(self, argv: list[str], sink: LineSink, step: str) -> None:
        tail: list[str] = []
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        with self._process(argv, env) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                sink(line.rstrip("\n"))
                tail = [*tail[-9:], line.rstrip("\n")]
            code = proc.wait()
        if code != 0:
            last = " | ".join(t.strip() for t in tail if t.strip()) or "no output"
            raise BuildError(f"{step} exited with code {code}: {last}")

    @contextlib.contextmanager
    def _process(self, argv: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
        with self._guard:
            if self._closed:
                raise BuildError("the node agent is stopping")
            try:
                proc = subprocess.Popen(
                    argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
                )
            except OSError as err:
                raise BuildError(f"cannot run {argv[0]}: {err}") from err
            self._running.add(proc)
        try:
            yield proc
        finally:
            with self._guard:
                self._running.discard(proc)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()

    @contextlib.contextmanager
    def _file_lock(self, key: str) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _key_lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())


def _tee(log: TextIO, on_line: LineSink) -> LineSink:
    def sink(line: str) -> None:
        log.write(line + "\n")
        log.flush()
        on_line(line)

    return sink


def _site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python*/site-packages"))
    if not found:
        raise BuildError(f"the new environment {venv} has no lib/python*/site-packages")
    return found[0]


def _publish(build: Path, link: Path) -> None:
    """Point ``link`` at ``build`` atomically: a fresh symlink renamed over the old name (never half there)."""
    temporary = link.with_name(f".{link.name}.{secrets.token_hex(4)}")
    os.symlink(build, temporary)
    try:
        os.replace(temporary, link)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise


__all__ = ["CACHE_ENV", "BuildError", "EnvironmentCache", "cache_dir", "this_interpreter"]
