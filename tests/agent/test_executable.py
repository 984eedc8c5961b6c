"""The program and working directory a container starts with, checked before the spawn in runc's words
(Go's ``exec.LookPath`` / ``findExecutable`` errors as runc's ``StartError`` message carries them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gangplane.agent import executable, sandbox
from gangplane.agent.launch import LaunchContext, PodPlace, build_launch
from gangplane.agent.process import StartError


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tool").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "tool").chmod(0o755)
    (tmp_path / "bin" / "plain").write_text("data")
    (tmp_path / "bin" / "plain").chmod(0o644)
    (tmp_path / "dir").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("tool", None),
        ("./bin/tool", None),
        ("bin/tool", None),
        ("nosuch", 'exec: "nosuch": executable file not found in $PATH'),
        ("plain", 'exec: "plain": executable file not found in $PATH'),  # LookPath skips it, as Go's
        ("./nosuch", 'exec: "./nosuch": stat ./nosuch: no such file or directory'),
        ("bin/plain", 'exec: "bin/plain": permission denied'),
        ("./dir", 'exec: "./dir": is a directory'),
        ("dir", 'exec: "dir": executable file not found in $PATH'),  # not on PATH: the cwd is not searched
    ],
    ids=lambda v: str(v),
)
def test_missing_program_in_runc_words(tree: Path, word: str, expected: str | None) -> None:
    path = os.pathsep.join([str(tree / "bin"), "/no/such/dir"])
    assert executable.missing_program(word, tree, path) == expected


def test_absolute_paths_and_an_empty_path_entry(tree: Path) -> None:
    assert executable.missing_program(str(tree / "bin" / "tool"), Path("/"), "") is None
    assert executable.missing_program("tool", tree / "bin", "") is None  # an empty entry is the cwd
    assert executable.missing_program("tool", tree, "/no/such") is not None


def test_missing_directory(tree: Path) -> None:
    assert executable.missing_directory(tree / "dir") is None
    assert executable.missing_directory(tree / "gone") == (
        f'chdir to cwd ("{tree / "gone"}") failed: no such file or directory'
    )
    assert executable.missing_directory(tree / "bin" / "tool") == (
        f'chdir to cwd ("{tree / "bin" / "tool"}") failed: not a directory'
    )


POD = {"metadata": {"name": "p", "namespace": "default", "uid": "u1"}, "spec": {}}


def _context(tree: Path, isolation: str) -> LaunchContext:
    env = {"PATH": str(tree / "bin")}
    return LaunchContext(tree / "logs", None, env, {}, lambda *_: None, False, isolation)


@pytest.mark.parametrize("isolation", [sandbox.PATH_MAPPING, sandbox.NAMESPACE])
@pytest.mark.parametrize(
    ("container", "message"),
    [
        ({"command": ["nosuch"]}, 'exec: "nosuch": executable file not found in $PATH'),
        ({"command": ["/mnt/data/plain"]}, 'exec: "/mnt/data/plain": permission denied'),
        ({"command": ["tool"], "workingDir": "/no/such/dir"}, 'chdir to cwd ("/no/such/dir") failed'),
        ({"command": ["./tool"], "workingDir": "/mnt/data"}, None),  # looked up at the volume's host side
        ({"command": ["tool"], "workingDir": "/mnt"}, None),  # made by the mount: let be
    ],
    ids=["not-on-path", "not-executable-in-a-volume", "no-working-dir", "in-a-volume", "a-mount-parent"],
)
def test_build_launch_refuses_what_cannot_start_in_either_isolation_mode(
    tree: Path, isolation: str, container: dict[str, object], message: str | None
) -> None:
    container = {"name": "c", **container, "volumeMounts": [{"name": "data", "mountPath": "/mnt/data"}]}
    place = PodPlace(tree / "sandbox", {"data": tree / "bin"})
    (tree / "sandbox").mkdir()
    if isolation == sandbox.PATH_MAPPING and container.get("workingDir") == "/mnt":
        message = 'chdir to cwd ("/mnt")'  # path mapping creates nothing: /mnt must be there
        if Path("/mnt").is_dir():
            message = None
    if message is None:
        build_launch(POD, container, _context(tree, isolation), lambda port: port, place=place)
        return
    with pytest.raises(StartError) as raised:
        build_launch(POD, container, _context(tree, isolation), lambda port: port, place=place)
    assert str(raised.value).startswith(executable.PREFIX + message)


def test_a_working_directory_is_named_as_the_container_sees_it(tree: Path) -> None:
    container = {"name": "c", "command": ["tool"], "workingDir": "/mnt/data/sub",
                 "volumeMounts": [{"name": "data", "mountPath": "/mnt/data"}]}  # fmt: skip
    place = PodPlace(tree, {"data": tree / "bin"})
    with pytest.raises(
        StartError, match=r'chdir to cwd \("/mnt/data/sub"\) failed: no such file or directory'
    ):
        build_launch(POD, container, _context(tree, sandbox.PATH_MAPPING), lambda port: port, place=place)


def test_a_name_found_before_is_looked_at_there_first_and_still_checked(tree: Path) -> None:
    (tree / "later").mkdir()
    (tree / "later" / "tool").write_text("#!/bin/sh\n")
    (tree / "later" / "tool").chmod(0o755)
    path = os.pathsep.join([str(tree / "bin"), str(tree / "later")])
    assert executable.missing_program("tool", tree, path) is None
    (tree / "bin" / "tool").unlink()  # the remembered entry lost it: found in the next one
    assert executable.missing_program("tool", tree, path) is None
    (tree / "later" / "tool").chmod(0o644)
    assert (
        executable.missing_program("tool", tree, path) == 'exec: "tool": executable file not found in $PATH'
    )
