"""The container supervisor: one thread for every container, exits observed, stops with a grace period,
nothing of a container left once it has ended; and ``leftovers.reap`` for what a dead control plane left."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agent.conftest import wait_for
from gangplane.agent import proctable
from gangplane.agent.leftovers import CLUSTER_ENV, cluster_id, reap
from gangplane.agent.process import ContainerProcess, Launch, group_members, start
from gangplane.agent.sandbox import MARKER_ENV
from gangplane.agent.supervisor import Supervisor
from gangplane.clock import WallClock


def _launch(tmp_path: Path, script: str, marker: str = "") -> Launch:
    env = {**os.environ, MARKER_ENV: marker} if marker else dict(os.environ)
    return Launch(["sh", "-c", script], env, tmp_path, tmp_path / f"{marker or 'c'}.log", marker=marker)


def _run(supervisor: Supervisor, launch: Launch, exits: list[ContainerProcess]) -> ContainerProcess:
    proc = start(launch, WallClock())
    supervisor.watch(proc, exits.append)
    return proc


def _members(leaders: set[int]) -> int:
    return sum(group in leaders for group in proctable.live_groups().values())


def test_a_hundred_containers_take_one_thread_and_all_stop(tmp_path: Path) -> None:
    supervisor, exits = Supervisor(WallClock()), []
    before = threading.active_count()
    procs = [_run(supervisor, _launch(tmp_path, "sleep 60; :", f"m{i}"), exits) for i in range(100)]
    leaders = {p.pid for p in procs}
    wait_for(lambda: _members(leaders) == 200, timeout=60, what="every sh and its sleep")
    assert threading.active_count() <= before + 1
    for proc in procs:
        supervisor.stop(proc, grace=5)
    assert all(p.wait(30) for p in procs)
    assert len(exits) == 100 and {p.ended.exit_code for p in procs if p.ended} == {143}
    assert _members(leaders) == 0
    supervisor.close(5)
    assert threading.active_count() <= before


def test_exit_code_and_leftovers_of_the_group_are_killed(tmp_path: Path) -> None:
    supervisor, exits = Supervisor(WallClock()), []
    proc = _run(supervisor, _launch(tmp_path, "sleep 60 & exit 3", "left"), exits)
    assert proc.wait(30)
    assert proc.ended is not None and proc.ended.exit_code == 3 and proc.ended.reason == "Error"
    assert exits == [proc] and not group_members(proc.pid)
    supervisor.close(5)


def test_sigterm_ignored_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    supervisor, exits = Supervisor(WallClock()), []
    proc = _run(supervisor, _launch(tmp_path, "trap '' TERM; echo up; sleep 60; :", "stubborn"), exits)
    wait_for(lambda: "up" in (tmp_path / "stubborn.log").read_text(), timeout=30, what="the trap to be set")
    began = time.monotonic()
    ended: list[ContainerProcess] = []
    supervisor.stop(proc, grace=0.5, then=ended.append)
    assert proc.wait(30) and ended == [proc]
    assert time.monotonic() - began >= 0.5
    assert proc.ended is not None and proc.ended.exit_code == 137
    supervisor.close(5)


def test_a_process_that_left_the_group_ends_with_its_container(tmp_path: Path) -> None:
    supervisor, exits = Supervisor(WallClock()), []
    proc = _run(supervisor, _launch(tmp_path, "setsid sleep 60 & sleep 60; :", "escaper"), exits)
    marked = lambda: proctable.carrying(MARKER_ENV, ["escaper"]).get("escaper", [])  # noqa: E731
    wait_for(lambda: len(marked()) == 3, timeout=30, what="sh, its sleep and the escaped sleep")
    supervisor.stop(proc, grace=5)
    assert proc.wait(30)
    assert proctable.carrying(MARKER_ENV, ["escaper"]) == {}
    supervisor.close(5)


def test_reap_kills_what_a_dead_control_plane_of_this_state_directory_left(tmp_path: Path) -> None:
    mine, other = tmp_path / "mine", tmp_path / "other"
    spawn = [sys.executable, "-c", "import time; time.sleep(60)"]
    ours = subprocess.Popen(spawn, env={**os.environ, CLUSTER_ENV: cluster_id(mine)}, start_new_session=True)
    theirs = subprocess.Popen(
        spawn, env={**os.environ, CLUSTER_ENV: cluster_id(other)}, start_new_session=True
    )
    try:
        wait_for(lambda: proctable.carrying(CLUSTER_ENV, [cluster_id(mine)]), timeout=30, what="the leftover")
        assert reap(mine) == 1
        assert ours.wait(10) == -9 and theirs.poll() is None
        assert reap(mine) == 0
    finally:
        theirs.kill()
        theirs.wait()


def test_a_container_started_after_close_is_killed_not_left_running(tmp_path: Path) -> None:
    supervisor = Supervisor(WallClock())
    supervisor.close(5)
    proc = start(_launch(tmp_path, "sleep 60", "late"), WallClock())
    with pytest.raises(RuntimeError, match="closed"):
        supervisor.watch(proc, lambda _: None)
    assert proc.popen.returncode == -9 and not group_members(proc.pid)


def test_group_exists_while_a_process_of_it_is_left(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & wait"], start_new_session=True)
    wait_for(lambda: len(group_members(proc.pid)) == 2)
    os.kill(proc.pid, 9)  # the leader dies; its child keeps the group
    proc.wait()
    assert proctable.group_exists(proc.pid)
    proctable.signal_group(proc.pid, 9)
    alone = subprocess.Popen(["sleep", "30"], start_new_session=True)
    assert proctable.group_exists(alone.pid)
    alone.kill()
    alone.wait()  # reaped: nothing of the group is left, not even a zombie
    assert not proctable.group_exists(alone.pid)
