"""Graceful deletion of pods (``store/graceful.py``), on every backend: kube-apiserver's pod strategy
(``CheckGracefulDelete``) and generic ``BeforeDelete`` rules, and the one documented difference (a node no
agent serves)."""

from __future__ import annotations

from typing import Any

import pytest

from gangplane.clock import ManualClock
from gangplane.errors import Conflict, NotFound
from gangplane.store import ResourceType
from gangplane.store.core import ObjectStore
from gangplane.store.graceful import LONGEST_GRACE, after_delete, grace_period

from .conftest import POD, pod

LEASE = ResourceType("coordination.k8s.io", "v1", "Lease", "leases", has_status=False)
NAMESPACE = ResourceType("", "v1", "Namespace", "namespaces", namespaced=False)


def served_node(store: ObjectStore, node: str = "n1") -> None:
    """A node with an agent behind it: its Lease in ``kube-node-lease``, as the agent's heartbeat writes."""
    lease = {"metadata": {"name": node, "namespace": "kube-node-lease"}, "spec": {"holderIdentity": node}}
    store.create(LEASE, lease)


def bound(name: str, node: str = "n1", grace: int | None = None, **fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}], "nodeName": node}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return pod(name, spec=spec, **fields)


def present(store: ObjectStore, name: str) -> bool:
    try:
        store.get(POD, "default", name)
    except NotFound:
        return False
    return True


@pytest.mark.parametrize(
    ("case", "pod_fields", "requested", "served", "want"),
    [
        ("spec period", {"grace": 5}, None, True, 5),
        ("default 30", {}, None, True, 30),
        ("options win", {"grace": 5}, 2, True, 2),
        ("negative counts as 1", {}, -3, True, 1),
        ("force", {"grace": 5}, 0, True, 0),
        ("unbound", {"node": ""}, None, True, 0),
        ("succeeded", {"status": {"phase": "Succeeded"}}, None, True, 0),
        ("failed", {"status": {"phase": "Failed"}}, 7, True, 0),
        ("no agent on the node", {"grace": 5}, None, False, 0),
        ("beyond a century", {"grace": 10**15}, None, True, LONGEST_GRACE),
        ("asked beyond a century", {}, 2**63 - 1, True, LONGEST_GRACE),
    ],
)
def test_grace_period_table(
    case: str, pod_fields: dict[str, Any], requested: int | None, served: bool, want: int
) -> None:
    assert grace_period(bound("p", **pod_fields), requested, served) == want, case


def test_a_second_delete_only_shortens_and_moves_the_deadline_by_the_difference() -> None:
    first = after_delete(bound("p", grace=30), None, True, 1000.0)
    assert first is not None and first["metadata"]["deletionGracePeriodSeconds"] == 30
    assert after_delete(first, 60, True, 1010.0) is first  # longer: pending, unchanged
    assert after_delete(first, None, True, 1010.0) is first
    shorter = after_delete(first, 10, True, 1010.0)
    assert shorter is not None and shorter["metadata"]["deletionGracePeriodSeconds"] == 10
    assert (
        shorter["metadata"]["deletionTimestamp"]
        == after_delete(bound("p"), 10, True, 1000.0)["metadata"][  # type: ignore[index]
            "deletionTimestamp"
        ]
    )
    assert after_delete(first, 0, True, 1010.0) is None  # grace 0: goes now


def test_a_bound_pod_on_a_served_node_is_marked_and_stays(store: ObjectStore, clock: ManualClock) -> None:
    served_node(store)
    store.create(POD, bound("a", grace=5))
    marked = store.delete(POD, "default", "a")
    meta = marked["metadata"]
    assert (meta["deletionTimestamp"], meta["deletionGracePeriodSeconds"]) == ("2026-01-01T00:00:05Z", 5)
    assert not meta.get("finalizers")
    assert store.get(POD, "default", "a") == marked
    clock.advance(2)
    again = store.delete(POD, "default", "a")  # pending: the same object, no new write
    assert again["metadata"]["resourceVersion"] == meta["resourceVersion"]


def test_a_huge_period_marks_the_pod_and_can_be_shortened(store: ObjectStore) -> None:
    # any non-negative int64 is a valid period; the deadline must still be a timestamp (not past year 9999)
    served_node(store)
    store.create(POD, bound("a", grace=10**15))
    marked = store.delete(POD, "default", "a")["metadata"]
    assert marked["deletionGracePeriodSeconds"] == LONGEST_GRACE and marked["deletionTimestamp"] < "2127"
    shortened = store.delete(POD, "default", "a", grace_period=5)["metadata"]
    assert (shortened["deletionTimestamp"], shortened["deletionGracePeriodSeconds"]) == (
        "2026-01-01T00:00:05Z",
        5,
    )


def test_the_agents_delete_with_grace_0_and_uid_removes_it(store: ObjectStore) -> None:
    served_node(store)
    uid = store.create(POD, bound("a"))["metadata"]["uid"]
    store.delete(POD, "default", "a")
    with pytest.raises(Conflict):
        store.delete(POD, "default", "a", preconditions={"uid": "other"}, grace_period=0)
    store.delete(POD, "default", "a", preconditions={"uid": uid}, grace_period=0)
    assert not present(store, "a")


def test_force_delete_removes_a_running_pod_at_once(store: ObjectStore) -> None:
    served_node(store)
    store.create(POD, bound("a"))
    store.delete(POD, "default", "a", grace_period=0)
    assert not present(store, "a")


@pytest.mark.parametrize(
    "fields",
    [{"node": ""}, {"status": {"phase": "Succeeded"}}, {"node": "agentless"}],
    ids=["unbound", "succeeded", "agentless-node"],
)
def test_pods_nothing_runs_go_at_once(store: ObjectStore, fields: dict[str, Any]) -> None:
    served_node(store)
    fields = dict(fields)  # the parameter is shared by both backends' runs
    status = fields.pop("status", None)
    created = store.create(POD, bound("a", **fields))
    if status is not None:
        store.update_status(POD, {**created, "status": status})
    store.delete(POD, "default", "a")
    assert not present(store, "a")


def test_finalizers_still_hold_a_pod_after_its_grace_0_delete(store: ObjectStore) -> None:
    served_node(store)
    store.create(POD, bound("a", finalizers=["x/keep"]))
    store.delete(POD, "default", "a")
    held = store.delete(POD, "default", "a", grace_period=0)
    assert held["metadata"]["deletionGracePeriodSeconds"] == 0
    store.patch(POD, "default", "a", {"metadata": {"finalizers": None}}, "merge")
    assert not present(store, "a")


def test_removing_the_last_finalizer_in_the_grace_period_keeps_the_pod_until_the_kubelets_delete(
    store: ObjectStore,
) -> None:
    """``ShouldDeleteDuringUpdate``: an update that empties ``finalizers`` deletes only an object whose
    ``deletionGracePeriodSeconds`` is 0 (or unset); a pod still in its grace period stays until the kubelet's
    delete with grace 0 (the Job controller removes its job-tracking finalizer as soon as the pod is counted)."""
    served_node(store)
    uid = store.create(POD, bound("a", finalizers=["batch.kubernetes.io/job-tracking"]))["metadata"]["uid"]
    store.delete(POD, "default", "a")
    store.patch(POD, "default", "a", {"metadata": {"finalizers": None}}, "merge")
    kept = store.get(POD, "default", "a")["metadata"]
    assert kept["deletionGracePeriodSeconds"] == 30 and not kept.get("finalizers")
    store.delete(POD, "default", "a", preconditions={"uid": uid}, grace_period=0)
    assert not present(store, "a")


def test_dry_run_marks_nothing(store: ObjectStore) -> None:
    served_node(store)
    store.create(POD, bound("a"))
    answer = store.delete(POD, "default", "a", dry_run=True)
    assert answer["metadata"]["deletionGracePeriodSeconds"] == 30
    assert not store.get(POD, "default", "a")["metadata"].get("deletionTimestamp")
