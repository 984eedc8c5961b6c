"""A synchronous harness: the reconcilers over a MemoryStore and a ManualClock, driven to a fixed point
without threads or informers (every object of each primary kind is reconciled until nothing changes)."""

from __future__ import annotations

import random
from typing import Any

from builders import RuntimeBuilder
from gangplane.clock import ManualClock
from gangplane.controllers.job import JobReconciler
from gangplane.controllers.jobset import JobSetReconciler
from gangplane.controllers.trainjob import TrainJobReconciler
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.points import Handle
from gangplane.server.admission import TrainerAdmission
from gangplane.server.resources import default_registry as default_registry_of_resources
from gangplane.store import catalog
from gangplane.store.base import ListOptions, ResourceType
from gangplane.store.memory import MemoryStore


def torch_runtime(name: str = "torch-distributed", **job: Any) -> dict[str, Any]:
    """An upstream-like torch runtime: one ``node`` replicated job of trainer ancestry."""
    return RuntimeBuilder(name).ml_policy(numNodes=1, torch={}).trainer_job(job=job or None).dict()


class Cluster:
    def __init__(self, *, admitted: bool = False) -> None:
        """``admitted``: the store runs the embedded API server's admission (defaulting and validation)."""
        self.clock = ManualClock()
        admission = TrainerAdmission(default_registry_of_resources(), self.clock) if admitted else None
        self.store = MemoryStore(clock=self.clock, rng=random.Random(7), admission=admission)
        if admission is not None:
            admission.bind(self.store)
        framework = Framework(default_registry(), Handle(self.clock))
        self.trainjobs = TrainJobReconciler(self.store, self.clock, framework)
        self.jobsets = JobSetReconciler(self.store, self.clock)
        self.jobs = JobReconciler(self.store, self.clock)
        self.loops: list[tuple[Any, ResourceType]] = [
            (self.trainjobs, catalog.TRAINJOBS),
            (self.jobsets, catalog.JOBSETS),
            (self.jobs, catalog.JOBS),
        ]

    def create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return self.store.create(rt, obj)

    def settle(self, rounds: int = 40) -> None:
        for _ in range(rounds):
            before = self.store.list(catalog.NAMESPACES).resource_version
            for reconciler, rt in self.loops:
                for obj in self.store.list(rt).items:
                    meta = obj["metadata"]
                    reconciler.reconcile((meta.get("namespace", ""), meta["name"]))
            for key in self._pod_owners("Job"):  # as the Job controller's pod watch: a Job gone, too
                self.jobs.reconcile(key)
            if self.store.list(catalog.NAMESPACES).resource_version == before:
                return
        raise AssertionError("the controllers did not settle")

    def _pod_owners(self, kind: str) -> set[tuple[str, str]]:
        return {
            (pod["metadata"]["namespace"], ref["name"])
            for pod in self.store.list(catalog.PODS).items
            for ref in pod["metadata"].get("ownerReferences") or ()
            if ref.get("controller") and ref.get("kind") == kind
        }

    def items(self, rt: ResourceType, selector: str = "") -> list[dict[str, Any]]:
        return self.store.list(rt, ListOptions(label_selector=selector)).items

    def get(self, rt: ResourceType, name: str, namespace: str = "default") -> dict[str, Any]:
        return self.store.get(rt, namespace, name)

    def set_pod_phase(
        self, pod: dict[str, Any], phase: str, *, ready: bool = False, exit_code: int | None = None
    ) -> None:
        status: dict[str, Any] = {"phase": phase}
        if ready:
            status["conditions"] = [{"type": "Ready", "status": "True"}]
        if exit_code is not None:
            name = pod["spec"]["containers"][0]["name"]
            status["containerStatuses"] = [{"name": name, "state": {"terminated": {"exitCode": exit_code}}}]
        self.store.update_status(catalog.PODS, {**pod, "status": status})

    def finish_pods(self, phase: str = "Succeeded", selector: str = "") -> None:
        for pod in self.items(catalog.PODS, selector):
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                self.set_pod_phase(pod, phase, exit_code=0 if phase == "Succeeded" else 1)


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        c["type"]: (c["status"], c.get("reason", "")) for c in (obj.get("status") or {}).get("conditions", [])
    }
