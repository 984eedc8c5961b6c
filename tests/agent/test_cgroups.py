"""Memory limits: a container past ``limits.memory`` ends ``OOMKilled`` where this machine lets the agent create
memory cgroups (skipped elsewhere), and the parts that read cgroup files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agent.conftest import pod, python, wait_phase
from gangplane.agent import AgentPool, cgroups
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
