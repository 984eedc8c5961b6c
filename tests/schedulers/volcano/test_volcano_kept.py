"""A Volcano scheduler that keeps its session across passes (``kept.py``, fed ``ClusterView.changes``)
decides exactly as the plain session built from every object (``open_session`` + every job visited).

Random small worlds run for many cycles with jobs arriving over time, gangs finishing and leaving (their
PodGroup and pods deleted, as the simulator's shell releases a job), and victims evicted and coming back as
new pods. Objects carry a resourceVersion that changes with their content; the changes handed to the kept
scheduler are the groups whose PodGroup or pods got a new resourceVersion or went away, as the simulator's
shell hands them. Every cycle both see the same view and must return the same result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import test_volcano_memo as memo
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st
from test_volcano_properties import jobs_strategy
from vcworld import World, node

from gangplane.schedulers.base import Changes, ClusterView, CycleResult
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.volcano import VolcanoConfig, VolcanoScheduler
from gangplane.schedulers.volcano.book import SharePolicy
from gangplane.schedulers.volcano.scheduler import ACTIONS, close
from gangplane.schedulers.volcano.session import group_of, open_session
from gangplane.store.base import ResourceType
from gangplane.store.catalog import PODS, VOLCANO_PODGROUPS, VOLCANO_QUEUES

Obj = dict[str, Any]


class Plain:
    """The session as built before it was kept: every object parsed, every job visited."""

    name = "volcano"
    watches = VolcanoScheduler.watches

    def __init__(self, config: VolcanoConfig) -> None:
        self.config = config

    def group_of(self, pod: Mapping[str, Any]) -> str | None:
        return group_of(pod)

    def cycle(self, view: ClusterView) -> CycleResult:
        session = open_session(view, self.config)
        for action in self.config.actions:
            ACTIONS[action](session)
        return close(session, view)


class Driver(memo.Driver):
    """Stamps the world as a store would and hands the kept scheduler what changed since its last cycle."""

    def __init__(self, world: World, config: VolcanoConfig) -> None:
        super().__init__(world, config)
        self.seen: dict[str, tuple[str, ...]] = {}  # group key -> resourceVersions of its PodGroup and pods

    def cycle(self) -> CycleResult:
        objects, pending, snapshot = self.sync()
        changes = self._changes(objects, pending["volcano"])
        return self.same_decisions(
            objects, pending, snapshot, [(self.kept, {"volcano": changes}), (Plain(self.config), None)]
        )

    def _changes(self, objects: Mapping[ResourceType, Sequence[Obj]], pending: Sequence[PodInfo]) -> Changes:
        """Groups whose PodGroup or pods got a new resourceVersion or went away (objects stamped by their
        place in a list may be reported changed when an earlier one goes: more than changed is harmless),
        and the pending pods by key, as the simulator's shell answers them."""
        groups = {_key(g): g for g in objects[VOLCANO_PODGROUPS]}
        queues = {q["metadata"]["name"]: q for q in objects[VOLCANO_QUEUES]}
        members: dict[str, list[Obj]] = {}
        for pod in sorted(objects[PODS], key=_key):
            members.setdefault(group_of(pod), []).append(pod)
        now = {
            key: tuple(_rv(o) for o in ([groups[key]] if key in groups else []) + members.get(key, []))
            for key in set(groups) | set(members)
        }
        changed = {key for key in set(now) | set(self.seen) if now.get(key) != self.seen.get(key)}
        self.seen = now

        def get(rt: ResourceType, key: str) -> Obj | None:
            return groups.get(key) if rt == VOLCANO_PODGROUPS else queues.get(key.rpartition("/")[2])

        waiting = {p.key: p for p in pending}
        return Changes(frozenset(changed), lambda key: members.get(key, []), get, waiting.get)


def _key(obj: Obj) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def _rv(obj: Obj) -> str:
    return str(obj["metadata"]["resourceVersion"])


def _finish_and_leave(w: World, ages: dict[str, int], life: int) -> None:
    """Pods that ran ``life`` cycles succeed; a gang whose pods all succeeded leaves the next cycle."""
    done = {
        g
        for g in {group_of(p) for p in w.pods.values()}
        if all(p["status"]["phase"] == "Succeeded" for p in w.pods.values() if group_of(p) == g)
    }
    for key in [k for k, p in w.pods.items() if group_of(p) in done]:
        del w.pods[key]
    for key in done:
        w.groups.pop(key, None)
    memo._finish(w, ages, life)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_nodes=st.integers(1, 3),
    cap=st.one_of(st.none(), st.integers(2, 12)),
    jobs=jobs_strategy,
    arrivals=st.lists(st.integers(0, 10), min_size=8, max_size=8),
    share=st.sampled_from(list(SharePolicy)),
    overcommit=st.sampled_from([None, 1.0, 1.2]),
    life=st.integers(2, 8),
)
def test_a_kept_session_decides_as_a_plain_one(
    n_nodes: int,
    cap: int | None,
    jobs: list[tuple[int, int, str, int, bool, bool]],
    arrivals: list[int],
    share: SharePolicy,
    overcommit: float | None,
    life: int,
) -> None:
    config = VolcanoConfig(explain=False, share_policy=share, overcommit_factor=overcommit)
    w = World(nodes=[node(f"n{i}", gpu=4) for i in range(n_nodes)], config=config)
    w.add_queue("a", **({"capability": {"nvidia.com/gpu": str(cap)}} if cap is not None else {}))
    w.add_queue(
        "b", weight=2, **({"deserved": {"nvidia.com/gpu": "4"}} if share == SharePolicy.CAPACITY else {})
    )
    w.add_queue("c")
    driver = Driver(w, config)
    ages: dict[str, int] = {}
    evicted = 0
    for at in range(4 * len(jobs) + 8):
        for i, (size, gpu, queue, prio, _topology, minres) in enumerate(jobs):
            if arrivals[i] == at:
                w.add_job(f"j{i}", size, gpu=gpu, queue=queue, priority=prio, min_resources=minres)
        evicted += len(driver.cycle().evictions)
        w.resubmit_evicted()
        _finish_and_leave(w, ages, life)
    target(float(evicted))  # steer the search towards worlds where preempt and reclaim evict


def test_preempt_then_reclaim_in_one_pass_decides_as_a_plain_session() -> None:
    """Preempt evicts a low-priority gang; in the same pass reclaim must see those pods terminating (the
    kept indexes hold only what was parsed, the session's own evictions come from what it touched)."""
    config = VolcanoConfig(explain=False, overcommit_factor=None)
    w = World(nodes=[node("n0", gpu=4)], config=config)
    w.add_queue("a")
    w.add_queue("b")
    driver = Driver(w, config)
    w.add_job("j0", 4, gpu=1, queue="a", priority=0)
    driver.cycle()
    assert len(w.bound("j0")) == 4
    w.add_job("j1", 2, gpu=1, queue="a", priority=2, min_resources=False)  # admitted though a is full
    w.add_job("j2", 2, gpu=1, queue="b", priority=0)
    first = driver.cycle()
    assert {e.reason for e in first.evictions} == {"Preempted"}
    for _ in range(3):
        driver.cycle()
        w.resubmit_evicted()


def test_a_groups_status_write_is_taken_without_parsing_the_group_again(monkeypatch: Any) -> None:
    """After a pass, the groups it wrote a status to come back changed: a group whose pods and spec are as
    parsed takes the new phase and object without being parsed again (a bound gang's pods moved: its tasks
    are built again, its PodGroup is not parsed, ``reopen._pods_moved``); the decisions stay a plain
    session's (``Driver.cycle`` compares them)."""
    from gangplane.schedulers.volcano import reopen

    config = VolcanoConfig(explain=False, overcommit_factor=None)
    w = World(nodes=[node("n0", gpu=4)], config=config)
    w.add_job("running", 4, gpu=1)
    w.add_job("waiting", 2, gpu=1)
    driver = Driver(w, config)
    first = driver.cycle()
    assert {b.pod_key for b in first.bindings} == {f"ns/running-{i}" for i in range(4)}
    parsed: list[str] = []
    real = reopen._job
    monkeypatch.setattr(reopen, "_job", lambda *a: parsed.append(a[2]["metadata"]["name"]) or real(*a))
    driver.cycle()
    assert parsed == []
    assert w.phase("waiting") == "Pending" and not w.bound("waiting")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=jobs_strategy,
    edits=st.lists(
        st.tuples(st.integers(0, 20), st.sampled_from(["weight", "malformed", "mended", "closed", "opened"])),
        max_size=6,
    ),
)
def test_queues_edited_between_passes_decide_as_a_plain_session(
    jobs: list[tuple[int, int, str, int, bool, bool]], edits: list[tuple[int, str]]
) -> None:
    """A Queue's spec changed, made malformed or mended, or its state (in its status) closed or opened
    between passes: the kept session reads again only the Queues that are new objects and not a status
    write alone (``reopen._read``) and still decides as a plain one."""
    config = VolcanoConfig(explain=False)
    w = World(nodes=[node("n0", gpu=4), node("n1", gpu=4)], config=config)
    for name in ("a", "b", "c"):
        w.add_queue(name)
    driver, ages = Driver(w, config), dict[str, int]()
    for at in range(24):
        for i, (size, gpu, queue, prio, _topology, minres) in enumerate(jobs):
            if i == at:
                w.add_job(f"j{i}", size, gpu=gpu, queue=queue, priority=prio, min_resources=minres)
        for when, edit in edits:
            if when == at and edit in ("closed", "opened"):
                w.queues["a"]["status"] = {**w.queues["a"].get("status", {}), "state": edit.capitalize()}
            elif when == at:
                spec = w.queues["b" if edit == "weight" else "c"]["spec"]
                spec["weight"] = {"weight": spec["weight"] + 1 if isinstance(spec["weight"], int) else 2,
                                  "malformed": "many", "mended": 1}[edit]  # fmt: skip
        driver.cycle()
        w.resubmit_evicted()
        _finish_and_leave(w, ages, 3)


def test_a_waiting_gangs_own_status_write_is_settled_as_it_comes_back(monkeypatch: Any) -> None:
    """A gang that cannot fit gets its Unschedulable status written; the next pass reads that write back and
    settles it without computing the status again (``status.Wrote``), deciding as a plain session
    (``Driver.cycle`` compares the writes too)."""
    from gangplane.schedulers.volcano import status

    config = VolcanoConfig(explain=False, overcommit_factor=None)
    w = World(nodes=[node("n0", gpu=4)], config=config)
    w.add_job("running", 4, gpu=1)
    w.add_job("waiting", 2, gpu=1)
    driver = Driver(w, config)
    back: list[str] = []
    real = status._came_back
    monkeypatch.setattr(
        status, "_came_back", lambda s, job, *a: real(s, job, *a) and not back.append(job.name)
    )
    first = driver.cycle()
    assert {x.name for x in first.status_writes if x.rt == VOLCANO_PODGROUPS} == {"running", "waiting"}
    assert back == []
    second = driver.cycle()
    assert "waiting" in back and "waiting" not in {x.name for x in second.status_writes}
    assert w.phase("waiting") == "Pending"
