"""Volcano gang and victim rules: ``minTaskMember`` at bind, ``volcano.sh/preemptable``, ``preemptionPolicy``."""

from __future__ import annotations

from vcworld import World, node

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.volcano import VolcanoConfig
from gangplane.schedulers.volcano.actions.victims import NOT_ELIGIBLE, PREEMPTABLE

NO_OVERCOMMIT = VolcanoConfig(overcommit_factor=1.0)


def _roles(w: World, job: str, roles: dict[str, int], gpu: dict[str, int]) -> None:
    """Label the job's pods with task roles in pod order; ``gpu`` overrides a role's GPU request."""
    keys = sorted(k for k in w.pods if k.startswith(f"ns/{job}-"))
    names = [role for role, count in roles.items() for _ in range(count)]
    for key, role in zip(keys, names, strict=True):
        w.pods[key]["metadata"]["annotations"][vc.TASK_SPEC_KEY] = role
        requests = w.pods[key]["spec"]["containers"][0]["resources"]["requests"]
        requests["nvidia.com/gpu"] = str(gpu.get(role, 1))


def test_gang_short_of_its_master_binds_nothing() -> None:
    # minMember 2 is met by two workers, but minTaskMember wants a master, and no node can hold it.
    w = World(nodes=[node("n0", gpu=4)], config=NO_OVERCOMMIT)
    w.add_job("j", 3, min_member=2, min_resources=False)
    w.groups["ns/j"]["spec"]["minTaskMember"] = {"master": 1, "worker": 1}
    _roles(w, "j", {"worker": 2, "master": 1}, gpu={"master": 8})
    result = w.cycle()
    assert w.bound("j") == []
    assert "minTaskMember not met: role 'master' needs 1 more" in next(
        p.message for p in result.pending if p.group == "ns/j"
    )


def test_gang_keeps_the_master_when_trimming_to_the_minimum() -> None:
    # Room for all three; the gang minimum is 2 and the kept pair must include the master.
    w = World(nodes=[node("n0", gpu=8)], config=NO_OVERCOMMIT)
    w.add_job("j", 3, min_member=2, min_resources=False)
    w.groups["ns/j"]["spec"]["minTaskMember"] = {"master": 1}
    _roles(w, "j", {"worker": 2, "master": 1}, gpu={})
    w.cycle()
    assert len(w.bound("j")) == 3 and w.pods["ns/j-2"]["spec"].get("nodeName")


def _contended(low_annotations: dict[str, str], high_spec: dict[str, str]) -> World:
    w = World(nodes=[node("n0")], config=NO_OVERCOMMIT)
    w.add_job("low", 2, gpu=4, priority=1, min_resources=False)
    for i in range(2):
        w.pods[f"ns/low-{i}"]["metadata"]["annotations"].update(low_annotations)
    w.run(1)
    w.add_job("high", 2, gpu=4, priority=10, min_resources=False)
    for i in range(2):
        w.pods[f"ns/high-{i}"]["spec"].update(high_spec)
    return w


def test_preemptable_false_pods_are_never_victims() -> None:
    w = _contended({PREEMPTABLE: "false"}, {})
    result = w.cycle()
    assert result.evictions == [] and w.bound("high") == []


def test_preemptable_label_spelling_of_go_parse_bool() -> None:
    w = _contended({PREEMPTABLE: "F"}, {})
    assert w.cycle().evictions == []
    w = _contended({PREEMPTABLE: "true"}, {})
    assert len(w.cycle().evictions) == 2


def test_preemption_policy_never_preemptor_only_waits() -> None:
    w = _contended({}, {"preemptionPolicy": "Never"})
    result = w.cycle()
    assert result.evictions == []
    assert NOT_ELIGIBLE in next(p.message for p in result.pending if p.group == "ns/high")


def test_queue_room_is_checked_on_the_tasks_the_nodes_can_take() -> None:
    # The queue deserves the whole cluster (8 GPUs). The first task in task order asks 8 GPUs, more than
    # any node has; it must not use up the queue's room for the two that fit (upstream checks Allocatable
    # per task as it allocates it; issue #16: the check ran on a prefix of the tasks before placement).
    w = World(nodes=[node("n0", gpu=4), node("n1", gpu=4)], config=NO_OVERCOMMIT)
    w.add_job("j", 3, min_member=2, min_resources=False)
    w.pods["ns/j-0"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "8"
    w.cycle()
    assert len(w.bound("j")) == 2 and not w.pods["ns/j-0"]["spec"].get("nodeName")
