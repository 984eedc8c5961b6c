"""A pod's sandbox on this host: its private directory, a scrubbed environment, a process marker, and (where
the machine allows it) a private mount namespace.

- **Directory**: every pod gets ``<state>/pods/<namespace>/<name>_<uid>/``, its containers' default working
  directory, so two pods never share files by accident and nothing lands where ``gangplane up`` ran.
- **Memory**: the service-account token volume, ``secret`` and ``projected`` volumes and an ``emptyDir`` of
  ``medium: Memory`` live in memory, as the kubelet backs them with a tmpfs (the secret and projected plugins
  wrap an ``emptyDir`` of ``medium: Memory``) so a token or a secret never reaches the node's disk:
  ``<tmpfs>/gangplane-<state id>/<node>/<namespace>/<name>_<uid>/`` (``MemoryRoot``), on ``$XDG_RUNTIME_DIR``
  or ``/dev/shm``, private to this user; where neither is usable they stay in the pod's directory. (It also
  saves the disk's inode creations: 10 per pod start for the token volume.)
- **Environment**: the agent's own variables that carry admin access (``GANGPLANE_HOME``, ``KUBECONFIG``, ...)
  are never passed on; a pod reaches the API only through what its spec asks for.
- **Marker**: each container instance carries ``GANGPLANE_CONTAINER_ID=<pod uid>/<container>``; a process
  that left the container's process group (``setsid``, a daemonizing server) still carries it, and a scan of
  ``/proc/*/environ`` finds it, so stopping a container ends all of it (the kernel does this for a PID
  namespace; this is the portable equivalent).
- **Mount namespace** (``namespace`` mode, when running as root with util-linux ``unshare`` and ``mount``
  working): the container runs under ``unshare --mount`` with its volumes bind-mounted at their
  ``mountPath`` and the control plane's credentials (token, kubeconfig, TLS key, store) covered by
  ``/dev/null``. Otherwise (``path-mapping`` mode) volumes live in the sandbox and every ``mountPath``
  prefix in the container's ``command``/``args``/``env`` is rewritten to that directory (docs/nodes.md).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MARKER_ENV = "GANGPLANE_CONTAINER_ID"
ADMIN_ENV = ("GANGPLANE_HOME", "KUBECONFIG", "GANGPLANE_TOKEN", "GANGPLANE_KUBECONFIG")
ADMIN_FILES = ("token", "kubeconfig", "tls.key", "store.db", "store.db-wal", "store.db-shm")
NAMESPACE, PATH_MAPPING = "namespace", "path-mapping"
_HOST_SERVICE_ENV = ("KUBERNETES_SERVICE_", "KUBERNETES_PORT")


def pod_dir(root: Path, pod: Mapping[str, Any]) -> Path:
    meta = pod.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
    return root / namespace / f"{name}_{meta.get('uid') or 'none'}"


MEMORY_CANDIDATES = ("XDG_RUNTIME_DIR", "/dev/shm")


class MemoryRoot:
    """One node's part of ``memory_root``: made on first use (a cluster whose pods get no token makes
    nothing there), a pod's directory removed with the pod, the node's with ``clear``."""

    def __init__(self, state_root: Path, node: str, candidates: Sequence[str] = MEMORY_CANDIDATES) -> None:
        self._name = "gangplane-" + hashlib.sha256(str(state_root.resolve()).encode()).hexdigest()[:16]
        self._node, self._candidates = node, candidates
        self._root: Path | None = None

    def pod_dir(self, pod: Mapping[str, Any]) -> Path | None:
        """The pod's directory in memory (not made yet), or None where no private tmpfs directory exists."""
        if self._root is None:
            self._root = next((r for b in self._bases() if (r := _private_dir(b / self._name))), None)
        return None if self._root is None else pod_dir(self._root / self._node, pod)

    def remove(self, pod: Mapping[str, Any]) -> None:
        if self._root is not None:
            shutil.rmtree(pod_dir(self._root / self._node, pod), ignore_errors=True)

    def clear(self, *, stopping: bool = False) -> None:
        """Remove what this node left in memory (its pods' processes are gone: a restart rewrites it). The
        other nodes of the cluster clear theirs at the same time, so any of this may already be gone."""
        for base in self._bases():
            root = base / self._name
            try:
                info = root.lstat()
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
                shutil.rmtree(root / self._node, ignore_errors=True)
                if stopping:  # not at a start: a running node may be about to make its pod's directory
                    with contextlib.suppress(OSError):
                        root.rmdir()  # the last node of the cluster takes the cluster's directory along

    def _bases(self) -> list[Path]:
        bases = [c if c.startswith("/") else os.environ.get(c, "") for c in self._candidates]
        return [Path(b) for b in bases if b and os.path.isdir(b)]


def _private_dir(path: Path) -> Path | None:
    """``path`` made (or found) as a directory only this user may enter; None if it is anything else."""
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
    return path if private else None


def scrubbed(env: Mapping[str, str]) -> dict[str, str]:
    """The agent's environment without the variables that would hand a pod the admin credentials, nor a
    surrounding cluster's ``KUBERNETES_SERVICE_*``/``KUBERNETES_PORT*`` (a pod gets this cluster's)."""
    return {k: v for k, v in env.items() if k not in ADMIN_ENV and not k.startswith(_HOST_SERVICE_ENV)}


def marker(pod_uid: str, container: str) -> str:
    return f"{pod_uid}/{container}"


def marked_processes(value: str, proc: Path = Path("/proc")) -> list[int]:
    """Live processes whose environment carries ``MARKER_ENV=value`` (zombies have no environment)."""
    wanted = f"{MARKER_ENV}={value}".encode()
    found = []
    for entry in proc.iterdir() if proc.is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if wanted in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


@functools.cache
def mode() -> str:
    """``namespace`` when this process may create mount namespaces and bind-mount in them, else
    ``path-mapping``. Checked once, by trying it."""
    if os.name != "posix" or os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("mount")):
        return PATH_MAPPING
    with tempfile.TemporaryDirectory() as tmp:  # the form ``command`` uses: util-linux 2.30 or newer
        table = Path(tmp) / "probe.mounts"
        table.write_text(_fstab_line(Path(tmp), f"{tmp}/made here", "bind,X-mount.mkdir,ro"))
        probe = ["unshare", "--mount", "--", "mount", "--all", "--fstab", str(table)]
        try:
            ok = subprocess.run(probe, capture_output=True, timeout=10, check=False).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
    return NAMESPACE if ok else PATH_MAPPING


@dataclass(frozen=True, slots=True)
class Mount:
    """One volume mount: the host path that backs it and where the container asked to see it."""

    source: Path
    target: str
    read_only: bool = False


def hidden_files(state_root: Path) -> list[Path]:
    return [state_root / name for name in ADMIN_FILES if (state_root / name).exists()]


@dataclass(frozen=True, slots=True)
class Namespace:
    """A container's private mount namespace: the mount table (``fstab`` lines, a parent before what nests
    in it) that one ``mount --all`` applies, written to ``table_path`` before the start; the file mount
    points made first; the working directory entered once everything is mounted."""

    table_path: Path
    table: str
    files: tuple[str, ...] = ()  # host paths a file is bound onto, made (empty) where missing
    workdir: str = ""


def namespace(
    mounts: Iterable[Mount], hide: Iterable[Path], table_path: Path, workdir: str = ""
) -> Namespace:
    """The namespace that binds ``mounts`` (directories made by ``mount`` itself, ``X-mount.mkdir``) and
    covers ``hide`` with ``/dev/null``."""
    ordered = sorted(mounts, key=lambda m: len(m.target.rstrip("/")))  # a parent before what nests in it
    lines = [_fstab_line(Path("/dev/null"), str(path), "bind") for path in hide]
    files: list[str] = []
    for i, m in enumerate(ordered):
        is_dir = m.source.is_dir()
        if not is_dir:  # a file is bound onto a file: made on the host side of the mounts it nests in
            files.append(map_paths(m.target, ordered[:i]))
        options = ("bind,X-mount.mkdir" if is_dir else "bind") + (",ro" if m.read_only else "")
        lines.append(_fstab_line(m.source, m.target, options))
    return Namespace(table_path, "".join(lines), tuple(files), workdir)


def _fstab_line(source: Path, target: str, options: str) -> str:
    return f"{_fstab_field(str(source))} {_fstab_field(target)} none {options} 0 0\n"


def _fstab_field(path: str) -> str:
    """A path as an ``fstab`` field: blanks, backslashes and a comment's ``#`` as octal escapes (libmount
    reads any ``\\ooo``)."""
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\#" else c for c in path)


def command(argv: Sequence[str], ns: Namespace | None, enter_cgroup: str = "") -> list[str]:
    """The words that start ``argv``: in its mount namespace under ``unshare --mount``, after the shell
    line ``enter_cgroup`` (``cgroups.enter_line``). ``unshare`` and ``sh`` exec in place, so the container
    keeps the process id (and group) the agent started; one ``mount`` process binds every volume."""
    if ns is None and not enter_cgroup:
        return [*argv]
    if ns is None:
        return ["/bin/sh", "-c", f'{enter_cgroup}\nexec "$@"', "gangplane-cgroup", *argv]
    lines = ["set -e", enter_cgroup] if enter_cgroup else ["set -e"]
    for path in ns.files:
        folder = shlex.quote(os.path.dirname(path) or ".")
        lines.append(f"[ -e {shlex.quote(path)} ] || {{ mkdir -p {folder} && : > {shlex.quote(path)}; }}")
    if ns.table:
        lines.append(f"mount --all --fstab {shlex.quote(str(ns.table_path))}")
    if ns.workdir:
        lines.append(f"cd -- {shlex.quote(ns.workdir)}")
    lines.append('exec "$@"')
    return ["unshare", "--mount", "--", "/bin/sh", "-c", "\n".join(lines), "gangplane-sandbox", *argv]


def map_paths(text: str, mounts: Iterable[Mount]) -> str:
    """Path mapping: a word that is a ``mountPath`` or lies under one points into the volume's directory
    instead (longest mountPath first, so nested mounts resolve to the innermost)."""
    for m in sorted(mounts, key=lambda m: len(m.target), reverse=True):
        target = m.target.rstrip("/") or "/"
        if text == target or text.startswith(target + "/"):
            return str(m.source) + text[len(target) :]
        text = text.replace(f"={target}/", f"={m.source}/").replace(f":{target}/", f":{m.source}/")
    return text
