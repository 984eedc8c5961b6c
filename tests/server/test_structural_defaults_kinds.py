"""The CRDs' structural defaults on every served custom kind that declares some, applied at the store's
admission as kube-apiserver applies them (what ``kubectl get -o yaml`` shows after applying a minimal object
on a cluster): before this, the ones marked below were lost."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gangplane.server.admission import TrainerAdmission
from gangplane.server.lifecycle import ensure_default_namespace
from gangplane.server.resources import default_registry
from gangplane.store import MemoryStore
from gangplane.store.base import ResourceType

_PORTS = [{"containerPort": 80}]
_POD = {"spec": {"containers": [{"name": "node", "image": "busybox", "ports": _PORTS}]}}
_ANCESTOR = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
_RJOB = {"name": "node", "template": {"metadata": {"labels": _ANCESTOR}, "spec": {"template": _POD}}}
_RUNTIME_SPEC = {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": [_RJOB]}}}
_RUNTIME_PORT = ("spec", "template", "spec", "replicatedJobs", 0, "template", "spec", "template", "spec",
                 "containers", 0, "ports", 0, "protocol")  # fmt: skip
_PREEMPTION = {
    "borrowWithinCohort": {"policy": "Never"},
    "reclaimWithinCohort": "Never",
    "withinClusterQueue": "Never",
}
_FUNGIBILITY = {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
_QUOTA = {
    "coveredResources": ["cpu"],
    "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1}]}],
}

# (plural, group/version, minimal object, {path: the default a cluster stores})
KINDS: list[tuple[str, str, dict[str, Any], dict[tuple[Any, ...], Any]]] = [
    ("clustertrainingruntimes", "trainer.kubeflow.org/v1alpha1",
     {"metadata": {"name": "rt"}, "spec": _RUNTIME_SPEC},
     {_RUNTIME_PORT: "TCP"}),
    ("trainingruntimes", "trainer.kubeflow.org/v1alpha1",
     {"metadata": {"name": "rt", "namespace": "default"}, "spec": _RUNTIME_SPEC},
     {_RUNTIME_PORT: "TCP"}),
    ("trainjobs", "trainer.kubeflow.org/v1alpha1",
     {"metadata": {"name": "tj", "namespace": "default"}, "spec": {"runtimeRef": {"name": "rt"}}},
     {("spec", "suspend"): False, ("spec", "managedBy"): "trainer.kubeflow.org/trainjob-controller",
      ("spec", "runtimeRef", "kind"): "ClusterTrainingRuntime"}),
    ("jobsets", "jobset.x-k8s.io/v1alpha2",
     {"metadata": {"name": "js", "namespace": "default"}, "spec": {"replicatedJobs": [
         {"name": "w", "template": {"spec": {"template": _POD}}}]}},
     {("spec", "replicatedJobs", 0, "replicas"): 1, ("spec", "replicatedJobs", 0, "groupName"): "default",
      ("spec", "replicatedJobs", 0, "template", "spec", "template", "spec", "containers", 0, "ports", 0,
       "protocol"): "TCP"}),
    ("clusterqueues", "kueue.x-k8s.io/v1beta2",
     {"metadata": {"name": "cq"}, "spec": {"resourceGroups": [_QUOTA]}},
     {("spec", "queueingStrategy"): "BestEffortFIFO", ("spec", "stopPolicy"): "None",
      ("spec", "preemption"): _PREEMPTION, ("spec", "flavorFungibility"): _FUNGIBILITY}),
    ("localqueues", "kueue.x-k8s.io/v1beta2",
     {"metadata": {"name": "lq", "namespace": "default"}, "spec": {"clusterQueue": "cq"}},
     {("spec", "stopPolicy"): "None"}),
    ("workloads", "kueue.x-k8s.io/v1beta2",
     {"metadata": {"name": "wl", "namespace": "default"}, "spec": {"queueName": "lq", "podSets": [
         {"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "b"}]}}}]}},
     {("spec", "active"): True}),
    ("podgroups", "scheduling.volcano.sh/v1beta1",
     {"metadata": {"name": "pg", "namespace": "default"}, "spec": {"minMember": 1}},
     {("spec", "queue"): "default"}),
    ("queues", "scheduling.volcano.sh/v1beta1",
     {"metadata": {"name": "q"}, "spec": {}},
     {("spec", "weight"): 1, ("spec", "dequeueStrategy"): "traverse"}),
]  # fmt: skip


def _rt(plural: str, group_version: str) -> ResourceType:
    group, version = group_version.rsplit("/", 1)
    served = default_registry().find(group, version, plural)
    assert served is not None
    return served.storage


def _at(obj: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        obj = obj[part]
    return obj


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    admission = TrainerAdmission(default_registry())
    found = MemoryStore(admission=admission)
    admission.bind(found)
    ensure_default_namespace(found)
    found.create(_rt("clustertrainingruntimes", "trainer.kubeflow.org/v1alpha1"),
                 {"metadata": {"name": "rt"}, "spec": _RUNTIME_SPEC})  # fmt: skip
    yield found
    found.close()


@pytest.mark.parametrize(("plural", "group_version", "obj", "expected"), KINDS, ids=[k[0] for k in KINDS])
def test_a_created_object_gets_its_crds_defaults(
    store: MemoryStore,
    plural: str,
    group_version: str,
    obj: dict[str, Any],
    expected: dict[tuple[Any, ...], Any],
) -> None:
    rt = _rt(plural, group_version)
    obj = {"apiVersion": rt.api_version, "kind": rt.kind, **obj}
    if plural == "clustertrainingruntimes":
        obj["metadata"] = {"name": "other"}
    created = store.create(rt, obj)
    read = store.get(rt, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
    for path, value in expected.items():
        assert _at(created, path) == _at(read, path) == value, path


def test_an_update_that_drops_or_nulls_a_defaulted_field_gets_it_back(store: MemoryStore) -> None:
    rt = _rt("clusterqueues", "kueue.x-k8s.io/v1beta2")
    created = store.create(rt, {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": {"name": "cq"},
                                "spec": {"resourceGroups": [_QUOTA], "queueingStrategy": "StrictFIFO"}})  # fmt: skip
    assert created["spec"]["queueingStrategy"] == "StrictFIFO"  # a value given is kept
    del created["spec"]["queueingStrategy"]
    created["spec"]["stopPolicy"] = None
    updated = store.update(rt, created)
    assert (updated["spec"]["queueingStrategy"], updated["spec"]["stopPolicy"]) == ("BestEffortFIFO", "None")
