"""An admission that says it passes a write (``store.base.PassingAdmission``) is neither called nor given
copies; one that does not is called with copies as before."""

from __future__ import annotations

from typing import Any

from gangplane.api.structural import apply_defaults
from gangplane.server.admission import TrainerAdmission
from gangplane.server.openapi import crd_defaults
from gangplane.server.resources import default_registry
from gangplane.store import MemoryStore
from gangplane.store.base import Object, Operation, ResourceType
from gangplane.store.catalog import NODES, TRAINJOBS


def _storage(plural: str) -> ResourceType:
    served = default_registry().find("", "v1", plural)
    assert served is not None
    return served.storage


CONFIG_MAPS = _storage("configmaps")


class PassesConfigMaps:
    def __init__(self) -> None:
        self.called: list[str] = []

    def passes(self, rt: ResourceType, op: Operation, new: Object, old: Object | None) -> bool:
        return rt.kind == "ConfigMap"

    def __call__(self, rt: ResourceType, op: Operation, new: Object, old: Object | None) -> Object:
        self.called.append(rt.kind)
        new.setdefault("metadata", {}).setdefault("labels", {})["admitted"] = "yes"
        return new


def _configmap(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "d"}, "data": {"k": "v"}}


def test_a_passed_write_skips_the_admission_and_others_do_not() -> None:
    admission = PassesConfigMaps()
    store = MemoryStore(admission=admission)
    assert "labels" not in store.create(CONFIG_MAPS, _configmap("c"))["metadata"]
    node = store.create(NODES, {"metadata": {"name": "n"}})
    assert admission.called == ["Node"] and node["metadata"]["labels"] == {"admitted": "yes"}
    store.close()


def test_trainer_admission_passes_what_it_stores_unchanged() -> None:
    admission = TrainerAdmission(default_registry())
    pod = {"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": [{"name": "c"}]}}
    assert not admission.passes(_storage("pods"), Operation.CREATE, pod, None)  # pod defaults
    namespace = {"metadata": {"name": "n"}}
    assert admission.passes(_storage("namespaces"), Operation.CREATE, namespace, None)  # not modelled
    job = {"metadata": {"name": "j", "namespace": "d"}, "spec": {"runtimeRef": {"name": "r"}}}
    status_write = {**job, "status": {"conditions": []}}
    assert not admission.passes(TRAINJOBS, Operation.UPDATE, status_write, job)  # lacks the CRD's defaults
    apply_defaults(job, crd_defaults(TRAINJOBS.api_version, TRAINJOBS.kind))
    status_write = {**job, "status": {"conditions": []}}
    assert admission.passes(TRAINJOBS, Operation.UPDATE, status_write, job)  # only the status changed
    changed = {**job, "spec": {"runtimeRef": {"name": "other"}}}
    assert not admission.passes(TRAINJOBS, Operation.UPDATE, changed, job)
    assert not admission.passes(TRAINJOBS, Operation.CREATE, job, None)
    assert admission.passes(TRAINJOBS, Operation.DELETE, job, job)
