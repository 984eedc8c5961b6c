"""kube-scheduler's VolumeBinding PreFilter in the default scheduler, and the claim QueueingHint."""

from typing import Any

import pytest

from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.volume_binding import BIND_COMPLETED, UNBOUND_IMMEDIATE, Claims, claim_now_usable
from gangplane.store.catalog import PERSISTENT_VOLUME_CLAIMS, PODS, STORAGE_CLASSES
from gangplane.store.memory import MemoryStore
from schedulers.kube_builders import pod
from schedulers.test_scheduler_loop import _synced
from waiting import wait_for


def claim(name: str, *, bound: bool = False, cls: str = "", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml"}
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if cls:
        spec["storageClassName"] = cls
    if bound:
        spec["volumeName"] = f"pv-{name}"
        meta["annotations"] = {BIND_COMPLETED: "yes"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def storage_class(name: str, mode: str) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": "example.com/x", "volumeBindingMode": mode}  # fmt: skip


def with_claims(name: str, *claims: str) -> dict[str, Any]:
    volumes = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    return pod(name, volumes=volumes)


def info(*claims: str) -> PodInfo:
    return PodInfo(key="ml/p", namespace="ml", name="p", uid="u", requests=(), claims=claims)  # type: ignore[arg-type]


CLASSES = [storage_class("late", "WaitForFirstConsumer"), storage_class("now", "Immediate")]
# volume_binding.go PreFilter / binder.go GetPodVolumeClaims cases: (pod's claims, cluster's claims) -> refusal
REFUSALS = {
    "no claims": ((), [], None),
    "claim not found": (("data",), [], 'persistentvolumeclaim "data" not found'),
    "claim being deleted": (("data",), [claim("data", bound=True, deleting=True)],
                            'persistentvolumeclaim "data" is being deleted'),
    "bound claim": (("data",), [claim("data", bound=True)], None),
    "unbound claim without class is immediate": (("data",), [claim("data")], UNBOUND_IMMEDIATE),
    "unbound claim of an Immediate class": (("data",), [claim("data", cls="now")], UNBOUND_IMMEDIATE),
    "unbound claim of an unknown class is immediate": (("data",), [claim("data", cls="gone")], UNBOUND_IMMEDIATE),
    "unbound WaitForFirstConsumer claim passes": (("data",), [claim("data", cls="late")], None),
    "missing reported before unbound": (("a", "b"), [claim("a")], 'persistentvolumeclaim "b" not found'),
}  # fmt: skip


@pytest.mark.parametrize(("names", "claims", "want"), REFUSALS.values(), ids=REFUSALS.keys())
def test_refusal(names: tuple[str, ...], claims: list[dict[str, Any]], want: str | None) -> None:
    assert Claims.of(claims, CLASSES).refusal(info(*names)) == want


def test_hint_requeues_on_claim_added_or_bound_only() -> None:
    assert claim_now_usable(claim("a"), None)
    assert claim_now_usable(claim("a", bound=True), claim("a"))
    assert not claim_now_usable(claim("a"), claim("a"))
    assert not claim_now_usable(claim("a", bound=True), claim("a", bound=True))


def _condition(store: MemoryStore, name: str) -> dict[str, Any]:
    conditions = store.get(PODS, "ml", name).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodScheduled"), {})


def test_pod_waits_for_its_claim_then_binds_when_it_is_bound(one_node) -> None:
    store, loop = one_node
    store.create(STORAGE_CLASSES, storage_class("now", "Immediate"))
    store.create(PODS, with_claims("p", "data"))
    store.create(PODS, pod("plain"))
    loop.start_informers()
    wait_for(_synced(loop, store), 5.0)
    loop.run_once()
    assert store.get(PODS, "ml", "plain")["spec"].get("nodeName") == "n0"
    cond = _condition(store, "p")
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"] == 'persistentvolumeclaim "data" not found'
    store.create(
        PERSISTENT_VOLUME_CLAIMS, claim("data", cls="now")
    )  # added, unbound: requeued, still refused
    wait_for(lambda: loop.informers[PERSISTENT_VOLUME_CLAIMS].get("ml", "data") is not None, 5.0)
    loop.run_once()
    assert _condition(store, "p")["message"] == UNBOUND_IMMEDIATE
    bound = store.get(PERSISTENT_VOLUME_CLAIMS, "ml", "data")
    bound["spec"]["volumeName"] = "pv-data"
    bound["metadata"]["annotations"] = {BIND_COMPLETED: "yes"}
    store.update(PERSISTENT_VOLUME_CLAIMS, bound)
    wait_for(
        lambda: bool(
            (loop.informers[PERSISTENT_VOLUME_CLAIMS].get("ml", "data") or {})
            .get("spec", {})
            .get("volumeName")
        ),
        5.0,
    )
    loop.run_once()
    assert store.get(PODS, "ml", "p")["spec"].get("nodeName") == "n0"
