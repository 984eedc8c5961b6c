"""Store writes and CPU the Job controller spends per finished pod (docs/nodes.md, "Jobs"): 100 pods of one
Job finish one per pass, then all in one pass, over a memory store. Run it against another tree with that
tree's ``src`` on ``PYTHONPATH`` to compare."""

from __future__ import annotations

import time

from gangplane.clock import ManualClock
from gangplane.controllers.job import JobReconciler
from gangplane.store.catalog import JOBS, NAMESPACES, PODS
from gangplane.store.memory import MemoryStore

PODS_IN_JOB = 100
TEMPLATE = {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}


def _revision(store: MemoryStore) -> int:
    return int(store.list(NAMESPACES).resource_version)


def _store_with_job(n: int) -> MemoryStore:
    store = MemoryStore(clock=ManualClock(1_767_225_600.0))
    store.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    spec = {"completions": n, "parallelism": n, "template": TEMPLATE}
    store.create(JOBS, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
                        "spec": spec})  # fmt: skip
    return store


def measure(n: int, together: bool) -> tuple[int, float]:
    """(store writes, CPU seconds) of the Job controller's passes while ``n`` pods finish."""
    store = _store_with_job(n)
    reconciler = JobReconciler(store, store._clock)
    reconciler.reconcile(("ns", "j"))
    writes, cpu = 0, 0.0
    pods = store.list(PODS).items
    for i, pod in enumerate(pods):
        store.update_status(PODS, {**pod, "status": {"phase": "Succeeded"}})
        if together and i < len(pods) - 1:
            continue
        before, start = _revision(store), time.process_time()
        for _ in range(2):  # the second pass: the echo of its own writes, as the pod watch brings it
            reconciler.reconcile(("ns", "j"))
        cpu += time.process_time() - start
        writes += _revision(store) - before
    assert store.get(JOBS, "ns", "j")["status"]["succeeded"] == n
    return writes, cpu


def main() -> None:
    for together in (False, True):
        writes, cpu = measure(PODS_IN_JOB, together)
        how = "all finish, one pass" if together else "one pod per pass"
        print(
            f"{how}: {writes} writes for {PODS_IN_JOB} pods ({writes / PODS_IN_JOB:.2f} a pod), {cpu:.3f} s CPU"
        )


if __name__ == "__main__":
    main()
