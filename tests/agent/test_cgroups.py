"""Memory limits: a container past ``limits.memory`` ends ``OOMKilled`` where this machine lets the agent create
memory cgroups (skipped elsewhere), and the parts that read cgroup files."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from agent.conftest import pod, python, wait_for, wait_phase
from gangplane.agent import AgentPool, cgroups, sandbox
from gangplane.agent.launch import memory_limit
from gangplane.store.catalog import PODS
from gangplane.store.memory import MemoryStore


def test_oom_kill_counters_of_both_versions(tmp_path: Path) -> None:
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert cgroups.oom_killed(tmp_path)
    (tmp_path / "memory.events").unlink()
    (tmp_path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    assert not cgroups.oom_killed(tmp_path)


def test_memory_limit_in_bytes() -> None:
    assert memory_limit({"resources": {"limits": {"memory": "64Mi"}}}) == 64 * 2**20
    assert memory_limit({"resources": {"requests": {"memory": "1Gi"}}}) is None


@pytest.mark.skipif(
    cgroups.detect() is None, reason="this machine does not let the agent create memory cgroups"
)
def test_a_container_past_its_memory_limit_is_oom_killed(
    store: MemoryStore, make_pool: Callable[..., AgentPool]
) -> None:
    make_pool()
    hog = python("main", "x = bytearray(512 * 2**20); print(len(x))",
                 resources={"limits": {"memory": "64Mi"}})  # fmt: skip
    store.create(PODS, pod("hog", hog, restartPolicy="Never"))
    done = wait_phase(store, "hog", "Succeeded", "Failed", timeout=20)
    terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (done["status"]["phase"], terminated["exitCode"], terminated["reason"]) == (
        "Failed",
        137,
        "OOMKilled",
    )


# The cgroup code is file I/O only: these tests run it against directory trees shaped like cgroupfs, so the v2
# path is exercised on machines (like CI's) whose /sys/fs/cgroup is v1. What a fake tree cannot show is the
# kernel's side: enforcement of memory.max, the oom_kill counter, and delegation rules (docs/nodes.md).


def v2_tree(root: Path, controllers: str = "cpuset cpu io memory hugetlb pids rdma misc") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text("\n")
    return root


def test_v2_gets_a_gangplane_parent_with_the_memory_controller_delegated(tmp_path: Path) -> None:
    root = v2_tree(tmp_path / "v2")
    found = cgroups.find(root, tmp_path / "no-v1")
    assert found == cgroups.MemoryCgroups(root / "gangplane", 2)
    assert (root / "cgroup.subtree_control").read_text() == "+memory"
    assert (root / "gangplane" / "cgroup.subtree_control").read_text() == "+memory"
    container = found.create("pod-uid_main_1", 64 * 2**20)
    assert container == root / "gangplane" / "pod-uid_main_1"
    assert (container / "memory.max").read_text() == str(64 * 2**20)
    assert (container / "memory.swap.max").read_text() == "0"
    assert not (container / "memory.limit_in_bytes").exists()
    tracking = found.create("pod-uid_sidecar_2", None)  # tracking only: a new cgroup's memory.max is max
    assert not (tracking / "memory.max").exists() and (tracking / "memory.swap.max").read_text() == "0"


def test_v2_with_memory_already_delegated_is_left_as_it_is(tmp_path: Path) -> None:
    root = v2_tree(tmp_path / "v2")
    (root / "cgroup.subtree_control").write_text("cpu memory\n")
    assert cgroups.find(root, tmp_path / "no-v1") is not None
    assert (root / "cgroup.subtree_control").read_text() == "cpu memory\n"


def test_v2_without_the_memory_controller_falls_back_to_v1_then_to_none(tmp_path: Path) -> None:
    v2 = v2_tree(tmp_path / "v2", controllers="cpu io pids")
    v1 = tmp_path / "v1-memory"
    v1.mkdir()
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    found = cgroups.find(v2, v1)
    assert found == cgroups.MemoryCgroups(v1 / "gangplane", 1)
    assert (found.create("c", 1024) / "memory.limit_in_bytes").read_text() == "1024"
    assert not (found.create("d", None) / "memory.limit_in_bytes").exists()  # a new cgroup is unlimited
    assert cgroups.find(v2, tmp_path / "absent") is None
    assert cgroups.find(tmp_path / "absent-v2", tmp_path / "absent-v1") is None


def test_the_entered_process_writes_its_own_pid_then_execs_in_place(tmp_path: Path) -> None:
    """``enter_line``'s shell writes ``$$`` into ``cgroup.procs`` (what moves it into a real cgroup) and
    execs the container's argv with that same pid, so the members, ``kill_all`` and removal see it."""
    group = tmp_path / "gangplane" / "c"
    group.mkdir(parents=True)
    argv = sandbox.command(
        [sys.executable, "-c", "import os, time; print(os.getpid()); time.sleep(30)"],
        None,
        cgroups.enter_line(group),
    )
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        printed = int(child.stdout.readline())
        assert printed == child.pid and cgroups.members(group) == [child.pid]
        cgroups.kill_all(group)
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    (group / "cgroup.procs").unlink()
    cgroups.remove(group)
    assert not group.exists()


@pytest.mark.skipif(
    cgroups.detect() is None, reason="this machine does not let the agent create memory cgroups"
)
def test_a_child_that_drops_the_marker_and_escapes_its_group_still_dies_with_its_pod(
    store: MemoryStore, make_pool: Callable[..., AgentPool], tmp_path: Path
) -> None:
    """The environment marker cannot catch a process that clears its environment; the container's cgroup
    (made for every container where the machine allows) still lists it."""
    make_pool()
    pidfile = tmp_path / "hidden.pid"
    code = ("import subprocess, sys, time; "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], start_new_session=True, "
            "env={}); "
            f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(300)")  # fmt: skip
    store.create(PODS, pod("hider", python("main", code), terminationGracePeriodSeconds=1))
    hidden = int(wait_for(lambda: pidfile.exists() and pidfile.read_text(), what="the hidden child"))
    assert sandbox.MARKER_ENV.encode() not in Path(f"/proc/{hidden}/environ").read_bytes()
    store.delete(PODS, "default", "hider")
    wait_for(lambda: not psutil.pid_exists(hidden) or psutil.Process(hidden).status() == "zombie",
             timeout=15, what="the hidden child to end")  # fmt: skip
