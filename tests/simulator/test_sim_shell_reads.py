"""The shell answers a scheduler's reads by what changed: a job's pods in key order are sorted once per pod
list, and a type the shell does not hold is answered absent without raising ``KeyError`` (both are asked
every pass of a replay)."""

from __future__ import annotations

from typing import Any

import pytest
from sim_builders import jobs

import gangplane.simulator.policies.shell as shell
from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.policies import PolicyOptions, default_registry
from gangplane.store.catalog import HYPERNODES, PODS


def _shell(name: str) -> Any:
    cluster = uniform_cluster(2, 8)
    policy = default_registry()[name](cluster, PolicyOptions())
    assert isinstance(policy, shell.GroupShell)
    return policy


@pytest.mark.parametrize("name", ["volcano", "kai"])
def test_a_jobs_members_are_sorted_once_per_pod_list(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Twelve members: name order (``j0-10`` before ``j0-2``) is not member order, so a sort is needed,
    once, and again only after the job's pods were written (bound)."""
    policy = _shell(name)
    (job,) = jobs((0, 12, 1, 10))
    policy.submit(job, 0.0)
    sorts: list[int] = []
    monkeypatch.setattr(shell, "sorted", lambda *a, **k: sorts.append(1) or sorted(*a, **k), raising=False)
    group = f"{shell.NAMESPACE}/j{job.id}"
    names = [[p["metadata"]["name"] for p in policy._members(group)] for _ in range(3)]
    assert names == [sorted(f"j{job.id}-{i}" for i in range(12))] * 3
    assert len(sorts) == 1
    policy._members(group).clear()  # a caller's copy: the shell's order stands
    assert len(policy._members(group)) == 12
    policy.schedule(0.0)  # binds the gang: new pod objects
    bound = policy._members(group)
    assert [p["metadata"]["name"] for p in bound] == names[0]
    assert all((p.get("spec") or {}).get("nodeName") for p in bound)
    assert policy._members("other/j0") == [] and policy._members(f"{shell.NAMESPACE}/j999") == []


def test_an_absent_type_is_answered_without_raising(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = _shell("volcano")
    lists = shell._LazyLists(policy)
    raised: list[object] = []
    real = shell._LazyLists.__getitem__

    def counting(self: Any, rt: Any) -> Any:
        try:
            return real(self, rt)
        except KeyError:
            raised.append(rt)
            raise

    monkeypatch.setattr(shell._LazyLists, "__getitem__", counting)
    assert lists.get(HYPERNODES) is None and lists.get(HYPERNODES, ()) == ()
    assert HYPERNODES not in lists and PODS in lists
    assert lists.get(PODS) == []
    assert raised == []
    with pytest.raises(KeyError):
        lists[HYPERNODES]
