"""Through `gangplane up`: ``kubectl patch workload ... -p '{"spec":{"active":false}}'`` suspends the admitted
TrainJob and frees its quota for the next one, across `down` / `up`; ``true`` queues it again, first in line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kueue_up import View, trainjob, up, wait

from gangplane.client.kube import KubeStore
from gangplane.store import MERGE_PATCH, catalog

pytestmark = pytest.mark.slow
KUBECTL = shutil.which("kubectl")


def _workload(api: KubeStore, job: str) -> dict[str, Any]:
    items = api.list(catalog.WORKLOADS).items
    return next(w for w in items if w["metadata"]["ownerReferences"][0]["name"] == job)


def _set_active(api: KubeStore, home: Path, job: str, active: bool) -> None:
    """As a user would: kubectl's patch (a JSON merge patch for a custom kind), or the same through the API."""
    name, body = _workload(api, job)["metadata"]["name"], f'{{"spec":{{"active":{str(active).lower()}}}}}'
    if KUBECTL:
        command = [KUBECTL, "--kubeconfig", str(home / "kubeconfig"), "patch", "workload", name, "-p", body]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
    else:
        api.patch(catalog.WORKLOADS, "default", name, {"spec": {"active": active}}, MERGE_PATCH)


def _evicted(api: KubeStore, job: str) -> tuple[str, str]:
    found = (_workload(api, job).get("status") or {}).get("conditions") or []
    return next(((c["status"], c["reason"]) for c in found if c["type"] == "Evicted"), ("", ""))


def test_deactivating_a_workload_suspends_its_job_and_reactivating_requeues_it(tmp_path: Path) -> None:
    with up(tmp_path) as (gp, command, home):
        api = KubeStore.from_kubeconfig(home / "kubeconfig")
        view = View(api)
        api.create(catalog.TRAINJOBS, trainjob("first"))
        wait(lambda: view.running("first"), 30, "the first job to be admitted", view.state)
        api.create(catalog.TRAINJOBS, trainjob("second"))
        wait(lambda: view.queue() == (1, 1, "2", 1), 20, "second waiting behind first", view.state)

        _set_active(api, home, "first", False)
        wait(lambda: view.running("second"), 20, "second admitted on first's quota", view.state)
        assert not view.running("first") and _evicted(api, "first") == ("True", "Deactivated"), view.state()
        wait(lambda: view.queue() == (0, 1, "2", 0), 10, "inactive first not pending", view.state)
        wait(lambda: "is deactivated" in view.waiting("first"), 10, "QueuedByKueue says why", view.state)
        api.close()

        gp("down")  # the deactivation is in the Workload's spec and status: it holds across a restart
        gp(*command)
        api = KubeStore.from_kubeconfig(home / "kubeconfig")
        view = View(api)
        wait(lambda: view.queue() == (0, 1, "2", 0), 20, "first still inactive after up", view.state)
        assert view.running("second") and _evicted(api, "first") == ("True", "Deactivated"), view.state()

        _set_active(api, home, "first", True)
        wait(lambda: "(0 workloads ahead)" in view.waiting("first"), 20, "first queued again", view.state)
        wait(lambda: view.queue() == (1, 1, "2", 1), 10, "first pending again", view.state)
        assert view.running("second") and not view.running("first"), view.state()
        api.close()
