"""The bridge's hold on pods it failed: released once they ended and their owner had time to count them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from slurm_builders import group, job, pod, view

from gangplane.schedulers.slurm.bridge import decide
from gangplane.schedulers.slurm.model import RELEASE_AFTER, Release
from gangplane.schedulers.slurm.views import pod_view

T0 = 1_767_225_600.0


def releases(*members, now: float = T0 + RELEASE_AFTER, jobs=()):  # type: ignore[no-untyped-def]
    actions = decide(view(group("train", tuple(members), job=7), jobs=jobs, now=now))
    return [a.pod.name for a in actions if isinstance(a, Release)]


def test_a_failed_held_pod_is_released_after_the_hold() -> None:
    failed = pod("a", node="node-1", job=7, phase="Failed", terminating=True, held=True, disrupted_at=T0)
    assert releases(failed, now=T0 + RELEASE_AFTER - 0.5) == []
    assert releases(failed, now=T0 + RELEASE_AFTER) == ["a"]


def test_a_held_pod_still_running_is_kept_until_it_ends() -> None:
    stopping = pod("a", node="node-1", job=7, phase="Running", terminating=True, held=True, disrupted_at=T0)
    assert releases(stopping, now=T0 + 60) == []


def test_pods_without_the_finalizer_or_without_a_disruption_time() -> None:
    free = pod("a", node="node-1", job=7, phase="Failed", terminating=True, disrupted_at=T0)
    undated = pod("b", node="node-2", job=7, phase="Succeeded", terminating=True, held=True)
    assert releases(free, undated, now=T0) == ["b"]


def test_pods_without_a_group_are_released_too() -> None:
    loose = pod("x", node="node-1", job=7, phase="Failed", terminating=True, held=True, disrupted_at=T0)
    actions = decide(view(loose_pods=(loose,), now=T0 + RELEASE_AFTER, jobs=(job(7, state="CANCELLED"),)))
    assert [a for a in actions if isinstance(a, Release)] == [Release(loose.ref)]


def test_the_view_reads_the_finalizer_and_the_disruption_time() -> None:
    obj = {
        "metadata": {"name": "a", "namespace": "ns", "finalizers": ["scheduler.slinky.slurm.net/finalizer"]},
        "spec": {"schedulerName": "slurm-bridge-scheduler"},
        "status": {
            "phase": "Failed",
            "conditions": [
                {"type": "DisruptionTarget", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ],
        },
    }
    seen = pod_view(obj)
    assert seen.held and seen.disrupted_at == T0


@given(st.floats(min_value=0, max_value=10), st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]))
def test_only_ended_pods_past_the_hold_are_released(elapsed: float, phase: str) -> None:
    held = pod("a", node="node-1", job=7, phase=phase, terminating=True, held=True, disrupted_at=T0)
    expected = phase in ("Succeeded", "Failed") and elapsed >= RELEASE_AFTER
    assert releases(held, now=T0 + elapsed) == (["a"] if expected else [])
