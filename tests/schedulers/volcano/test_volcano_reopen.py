"""A kept Volcano session costs what changed: what a pass reads besides the jobs is read again only when its
own objects changed, a job's order is computed once while it stays as parsed, a changed group's pending
pods are asked of the loop, and a Queue whose counts and objects did not move is not read at close
(``reopen.py``, ``kept.py``, ``status.queue_writes_of``). That the decisions stay those of a plain session
is ``test_volcano_kept``'s property."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
from vcworld import World, node

from gangplane.schedulers.base import ClusterView
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import PODS
from gangplane.schedulers.passes import build_snapshot
from gangplane.schedulers.volcano import VolcanoConfig, VolcanoScheduler, status, vec
from gangplane.schedulers.volcano import queues as qs
from gangplane.schedulers.volcano.book import LastFilling, QueueBook, QueueDemand
from gangplane.schedulers.volcano.kept import Kept
from gangplane.schedulers.volcano.memo import Memo
from gangplane.schedulers.volcano.proportion import QueuePolicy
from gangplane.schedulers.volcano.reopen import _read, _Recent
from gangplane.schedulers.volcano.session import open_session
from gangplane.store.catalog import VOLCANO_QUEUES


def _world() -> World:
    w = World(nodes=[node("n0", gpu=4)], config=VolcanoConfig(explain=False))
    w.add_queue("a")
    w.add_queue("b", weight=2)
    w.add_job("j0", 2, queue="a")
    w.add_job("j1", 1, queue="b")
    return w


def _view(w: World, objects: Mapping[Any, Sequence[Any]]) -> ClusterView:
    pods = list(w.pods.values())
    snapshot, pending = build_snapshot(w.nodes, pods, {"volcano": VolcanoScheduler(w.config)})
    return ClusterView(w.now, snapshot, tuple(pending["volcano"]), {**objects, PODS: pods})


def test_a_pass_reads_again_only_the_kinds_of_objects_that_changed() -> None:
    w = _world()
    objects = w.objects()
    view, memo = _view(w, objects), Memo()
    first = _read(view, memo, None)
    same_view = ClusterView(view.now, view.snapshot, view.pending, {**objects}, view.changes)
    assert _read(same_view, memo, first) is first  # new lists, the same objects: nothing read
    queues = [
        {**q, "status": {**(q.get("status") or {}), "running": 1}} for q in objects[VOLCANO_QUEUES]
    ]  # a Queue status write
    written = ClusterView(view.now, view.snapshot, view.pending, {**objects, VOLCANO_QUEUES: queues})
    second = _read(written, memo, first)
    assert second is not first and second.queue_objs["a"] is queues[0]
    assert second.tree is first.tree and second.classes is first.classes
    assert all(p is q for p, q in zip(second.policies, first.policies, strict=True))  # the memo's, unchanged
    assert second.context == first.context


def test_a_queue_status_write_asks_the_memo_nothing_and_a_spec_write_that_queue_alone() -> None:
    """A Queue status write (the scheduler's own, most passes) changes nothing a policy reads: the policies,
    the malformed Queues' reasons and the context stand unasked, with the written object taken. A spec
    write asks the memo for that Queue alone (the built-in ones included keep the last pass's policies),
    and the list of policies is the last one when none changed; a malformed Queue stays aside for the
    same reason until it is written again."""
    w = _world()
    w.add_queue("bad", weight="many")
    objects = w.objects()
    view, memo = _view(w, objects), _AskedMemo()
    first = _read(view, memo, None)
    assert first.broken_queues.keys() == {"bad"} and "bad" not in first.queue_objs
    queues = list(objects[VOLCANO_QUEUES])
    queues[0] = {**queues[0], "status": {**queues[0]["status"], "running": 1}}  # a status write of Queue a
    queues[2] = {**queues[2], "status": {**queues[2]["status"], "running": 0}}  # ... and of the malformed one
    memo.asked.clear()
    second = _read(_view(w, {**objects, VOLCANO_QUEUES: queues}), memo, first)
    assert memo.asked == []
    assert second.policies is first.policies and second.queue_objs["a"] is queues[0]
    assert list(second.queue_objs) == list(first.queue_objs) and "bad" not in second.queue_objs
    assert second.broken_queues is first.broken_queues and second.context is first.context
    queues[0] = {**queues[0], "spec": {**queues[0]["spec"], "reclaimable": False}}  # a spec write of Queue a
    third = _read(_view(w, {**objects, VOLCANO_QUEUES: queues}), memo, second)
    assert memo.asked == ["a"] and not third.policies[0].reclaimable and third.queue_objs["a"] is queues[0]
    assert third.broken_queues == first.broken_queues and third.context is first.context
    queues[2] = {**queues[2], "spec": {"weight": 3}}  # the malformed Queue mended
    memo.asked.clear()
    fourth = _read(_view(w, {**objects, VOLCANO_QUEUES: queues}), memo, third)
    assert memo.asked == ["bad"] and not fourth.broken_queues
    assert [p.name for p in fourth.policies] == ["a", "b", "bad", "default", "root"]
    assert fourth.context != third.context  # the set of queues changed: every job is parsed again


class _AskedMemo(Memo):
    """A memo that notes which Queues it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def policy(self, obj: Mapping[str, Any], index: Any, parse: Any) -> Any:
        self.asked.append(obj["metadata"]["name"])
        return super().policy(obj, index, parse)


class _Untouchable(Sequence[PodInfo]):
    """A pending list that fails when it is walked or measured (the simulator's is listed whole by its
    length)."""

    def __getitem__(self, at: Any) -> Any:
        raise AssertionError("the pending pods were walked")

    def __len__(self) -> int:
        raise AssertionError("the pending pods were counted")

    def __iter__(self) -> Iterator[PodInfo]:
        raise AssertionError("the pending pods were walked")


def test_a_changed_groups_pending_pod_is_asked_of_the_loop() -> None:
    w = _world()
    pod = _view(w, w.objects()).pending[0]
    pending = _Recent(_Untouchable(), {pod.key: pod}.get)
    assert pending.get(pod.key) is pod
    assert pending.get("ns/gone") is None


def test_a_jobs_order_is_computed_once_while_it_stays_as_parsed() -> None:
    w = _world()
    view = _view(w, w.objects())
    session = open_session(view, w.config)
    job = session.jobs["ns/j0"]
    kept, computed = Kept(), []

    def order(j: Any) -> Any:
        computed.append(j.key)
        return session.fresh_order(j)

    demand = partial(
        qs.job_demand, width=len(view.snapshot.index), pods_col=view.snapshot.index.position(PODS)
    )
    kept.put(job, demand)
    assert kept.order(job, order) == kept.order(job, order) == session.fresh_order(job)
    assert computed == ["ns/j0"]
    kept.put(job, demand)  # parsed again
    kept.order(job, order)
    kept.forget_orders()  # the total changed
    kept.order(job, order)
    assert computed == ["ns/j0"] * 3


class _Counts(dict[tuple[str, str], int]):
    """Phase counts that note which queues were read."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[str] = set()

    def get(self, key: tuple[str, str], default: Any = None) -> Any:
        self.read.add(key[0])
        return super().get(key, default)


def test_a_queue_whose_counts_and_objects_did_not_move_is_not_read_at_close() -> None:
    w = _world()
    w.queues["a"]["metadata"].update(uid="uid-a", resourceVersion="1")
    w.queues["b"]["metadata"].update(uid="uid-b", resourceVersion="1")
    session = open_session(_view(w, w.objects()), w.config)
    said: dict[str, Any] = {}
    counts = _Counts()
    first = status.queue_writes_of(session, counts, said, {"a", "b"})
    assert counts.read == {"a", "b"}
    counts.read.clear()
    assert status.queue_writes_of(session, counts, said, set()) == first
    assert counts.read == set()
    assert status.queue_writes_of(session, counts, said, {"b"}) == first
    assert counts.read == {"b"}


def test_a_queue_holding_the_status_it_was_written_writes_nothing_more() -> None:
    w = _world()
    for name in ("a", "b"):
        w.queues[name]["metadata"].update(uid=f"uid-{name}", resourceVersion="1")
    session = open_session(_view(w, w.objects()), w.config)
    said: dict[str, Any] = {}
    first = status.queue_writes_of(session, _Counts(), said, {"a", "b"})
    assert {write.name for write in first} == {"a", "b"}
    for write in first:  # the writes land: new objects, new resourceVersions
        obj = w.queues[write.name]
        w.queues[write.name] = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "2"}}
        w.queues[write.name]["status"] = dict(write.status)
    session.queue_objs = {**session.queue_objs, **w.queues}
    assert status.queue_writes_of(session, _Counts(), said, set()) == []
    assert all(said[name].inputs[0] == "2" and said[name].write is None for name in ("a", "b"))


def test_a_queues_share_test_is_answered_again_only_when_its_vectors_move(monkeypatch: Any) -> None:
    """``QueueBook.may_give`` (reclaim asks it of every holding queue each pass) compares a queue's
    allocation with its share once while both are the vectors it answered for, across kept passes."""
    compared: list[int] = []
    real = vec.le
    monkeypatch.setattr(vec, "le", lambda a, b: compared.append(1) or real(a, b))
    policies = [QueuePolicy(name, np.full(2, np.inf), vec.zeros(2)) for name in ("a", "b")]
    held = np.array([3.0, 0.0])
    wanted = np.array([4.0, 0.0])  # b waits for 4: the share of each is 2
    demands = {
        "a": QueueDemand(held, held, vec.zeros(2), vec.zeros(2)),
        "b": QueueDemand(vec.zeros(2), wanted, vec.zeros(2), vec.zeros(2)),
    }
    kept, total = LastFilling(), np.array([4.0, 0.0])
    first = QueueBook(["gpu", "x"], total, policies, demands, kept=kept)
    assert first.may_give("a") and len(compared) == 1  # holds 3 of a share of 2
    second = QueueBook(["gpu", "x"], total, policies, demands, kept=kept)  # the next pass, nothing moved
    assert second.may_give("a") and second.may_give("a") and len(compared) == 1
    second.release("a", np.array([2.0, 0.0]))  # a victim taken: the allocation moved
    assert not second.may_give("a") and len(compared) == 2
