"""Whether a container's program can start, decided before it is spawned, in runc's words.

The agent starts a container through wrappers (the mount namespace's ``unshare`` and the ``sh`` that enters
the memory cgroup and mounts the volumes, ``sandbox.command``), and an ``exec`` that fails inside them is the
shell's exit 127 (126, or 2 for a ``cd``): the same as a program that ran and exited so. runc looks the
program up inside the container before its exec (``libcontainer/standard_init_linux.go``, Go's ``exec.LookPath``), and a
failure there is the container's ``StartError`` (exit 128) with runc's error as the message. So the agent
looks first, from the host side of the container's mounts, and says what runc says:

- a name without ``/`` not on ``PATH``: ``exec: "x": executable file not found in $PATH``;
- a path that is missing: ``exec: "./x": stat ./x: no such file or directory``; a directory:
  ``exec: "/d": is a directory``; a file without execute permission: ``exec: "/f": permission denied``.

A missing working directory differs on purpose: runc creates it in the container's root filesystem
(``MkdirAll`` of the cwd in ``prepareRootfs``), but a container here runs on the host's, where the agent
creates nothing outside the pod's sandbox; it is a ``StartError`` naming the directory (docs/nodes.md).
Checked once: a program removed between the check and the exec is still the shell's 127.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

PREFIX = "unable to start container process: "  # runc's, before the reason
_FOUND_LIMIT = 256
# (PATH, name) -> the PATH entry it was found in last; looked at first, still checked (a start is not
# refused on its word, and one found in another entry is as startable). Plain dict operations: thread-safe.
_found: dict[tuple[str, str], str] = {}


def missing_program(word: str, cwd: Path, path: str, host: str | None = None) -> str | None:
    """Why ``word`` (the container's argv[0]) cannot be executed from ``cwd`` with ``PATH`` ``path``
    (runc's wording, without ``PREFIX``), or None when it can. Paths given with a ``/`` are taken from
    ``cwd`` as they are, at ``host`` where a volume maps them; bare names are searched on ``PATH`` only
    (Go's ``LookPath``), starting where the name was found last (one ``stat`` for the usual ``sh``)."""
    if "/" in word:
        reason = _not_executable(os.path.join(cwd, host or word), word)
        return None if reason is None else f"exec: {_quoted(word)}: {reason}"
    known = _found.get((path, word))
    if known is not None and _not_executable(os.path.join(cwd, known, word), word) is None:
        return None
    for folder in path.split(os.pathsep):
        if _not_executable(os.path.join(cwd, folder or ".", word), word) is None:
            if len(_found) >= _FOUND_LIMIT:
                _found.clear()
            _found[(path, word)] = folder or "."
            return None
    return f"exec: {_quoted(word)}: executable file not found in $PATH"


def missing_directory(cwd: Path, shown: str = "") -> str | None:
    """Why ``cwd`` cannot be the working directory (runc's ``chdir`` wording, naming it ``shown``, the
    container's path, where given), or None when it can."""
    if cwd.is_dir():
        return None
    reason = "not a directory" if cwd.exists() else "no such file or directory"
    return f"chdir to cwd ({_quoted(shown or str(cwd))}) failed: {reason}"


def spawn_failure(word: str, err: OSError) -> str:
    """The spawn of ``word`` itself failed (no wrapper was in between): the same wording."""
    return f"exec: {_quoted(word)}: {(err.strerror or str(err)).lower()}"


def _not_executable(target: str, word: str) -> str | None:
    """Go's ``findExecutable``: a stat error, a directory, or no execute permission (None: executable)."""
    try:
        mode = os.stat(target).st_mode
    except OSError as err:
        return f"stat {word}: {(err.strerror or 'error').lower()}"
    if stat.S_ISDIR(mode):
        return "is a directory"
    return None if os.access(target, os.X_OK) else "permission denied"


def _quoted(text: str) -> str:
    """Go's ``strconv.Quote`` for the names that occur (a JSON string, non-ASCII kept)."""
    return json.dumps(text, ensure_ascii=False)
