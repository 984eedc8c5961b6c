"""The pass reads a scheduler's pending pods only as the scheduler does: ``ClusterView.pending`` is a
sequence that may be lazy, and the check that each binding names a pending pod asks ``Changes.pending`` by
key where the caller can answer, so a pass over a scheduler that keeps its own state never lists them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from gangplane.schedulers.base import Binding, Changes, ClusterView, CycleResult
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.passes import build_snapshot, run_pass
from schedulers.kube_builders import node, pod

NAME = "keeper"


class _Unlisted(Sequence[PodInfo]):
    """Pending pods that fail the test when listed, indexed or counted."""

    def __getitem__(self, at: Any) -> Any:
        raise AssertionError("the pending pods were read")

    def __iter__(self) -> Iterator[PodInfo]:
        raise AssertionError("the pending pods were listed")

    def __len__(self) -> int:
        raise AssertionError("the pending pods were counted")


class _Binds:
    """Binds one pod key to ``n0`` without reading ``view.pending``."""

    name = NAME
    watches = ()

    def __init__(self, key: str) -> None:
        self.key = key

    def group_of(self, obj: Mapping[str, Any]) -> str | None:
        return None

    def cycle(self, view: ClusterView) -> CycleResult:
        return CycleResult(bindings=[Binding(self.key, "n0")])


def _pending_pod() -> tuple[Any, PodInfo]:
    nodes = [node("n0", cpu="4")]
    snapshot, pending = build_snapshot(nodes, [pod("p", scheduler=NAME)], {NAME: _Binds("ml/p")})
    return snapshot, pending[NAME][0]


def _changes(pending: Mapping[str, PodInfo]) -> Changes:
    return Changes(frozenset(), lambda group: (), lambda rt, key: None, pending.get)


def test_a_binding_is_checked_by_key_without_listing_the_pending_pods() -> None:
    snapshot, waiting = _pending_pod()
    passed = run_pass(
        0.0, snapshot, {NAME: _Unlisted()}, {}, {NAME: _Binds("ml/p")}, {NAME: _changes({"ml/p": waiting})}
    )
    assert [b.pod_key for b in passed.bindings()] == ["ml/p"]
    assert snapshot.location("ml/p") is not None  # counted for the schedulers after it


def test_a_binding_of_a_pod_the_keyed_lookup_does_not_know_is_refused() -> None:
    snapshot, _ = _pending_pod()
    with pytest.raises(ValueError, match="not a pending pod"):
        run_pass(0.0, snapshot, {NAME: _Unlisted()}, {}, {NAME: _Binds("ml/p")}, {NAME: _changes({})})


def test_without_a_keyed_lookup_the_pending_sequence_is_searched() -> None:
    snapshot, waiting = _pending_pod()
    passed = run_pass(0.0, snapshot, {NAME: [waiting]}, {}, {NAME: _Binds("ml/p")})
    assert [b.pod_key for b in passed.bindings()] == ["ml/p"]
    with pytest.raises(ValueError, match="not a pending pod"):
        run_pass(0.0, snapshot, {NAME: []}, {}, {NAME: _Binds("ml/p")})
