"""Through `gangplane up`: deleting an admitted and a pending TrainJob frees the quota and the queue position at
once (no Workload left Terminating behind Kueue's finalizer), and the freed state holds after `down` / `up`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from kueue_up import View, trainjob, up, wait

from gangplane.client.kube import KubeStore
from gangplane.store import catalog

pytestmark = pytest.mark.slow
KUBECTL = shutil.which("kubectl")


def test_deleting_admitted_and_pending_trainjobs_frees_quota_and_position(tmp_path: Path) -> None:
    with up(tmp_path) as (gp, command, home):
        api = KubeStore.from_kubeconfig(home / "kubeconfig")
        view = View(api)
        api.create(catalog.TRAINJOBS, trainjob("admitted"))
        wait(lambda: view.running("admitted"), 30, "the first job to be admitted", view.state)
        api.create(catalog.TRAINJOBS, trainjob("pending", priority="first-in-line"))
        api.create(catalog.TRAINJOBS, trainjob("third"))
        wait(lambda: view.queue() == (2, 1, "2", 2), 20, "cq/lq status: 2 pending, 1 admitted", view.state)
        wait(lambda: "(1 workload ahead)" in view.waiting("third"), 20, "third behind pending", view.state)

        api.delete(catalog.TRAINJOBS, "default", "pending")
        wait(lambda: "(0 workloads ahead)" in view.waiting("third"), 10, "third's position freed", view.state)
        wait(lambda: view.queue() == (1, 1, "2", 1), 10, "one pending left", view.state)
        assert "pending" not in view.workloads() and not view.terminating(), view.state()

        api.delete(catalog.TRAINJOBS, "default", "admitted")
        wait(lambda: view.running("third"), 20, "third admitted on the freed quota", view.state)
        wait(lambda: view.queue() == (0, 1, "2", 0), 10, "third the only admitted workload", view.state)
        assert view.workloads() == ["third"] and not view.terminating(), view.state()
        api.close()

        gp("down")
        gp(*command)
        api = KubeStore.from_kubeconfig(home / "kubeconfig")
        view = View(api)
        api.create(catalog.TRAINJOBS, trainjob("fourth"))
        # 2 cpu in use, not 6: the fourth waits for exactly the third's quota, first in line
        wait(
            lambda: "(0 workloads ahead)" in view.waiting("fourth"), 30, "fourth queued after up", view.state
        )
        assert "insufficient unused quota for cpu in flavor default, 2 more needed" in view.waiting("fourth")
        assert view.running("third") and view.queue() == (1, 1, "2", 1), view.state()
        assert view.workloads() == ["fourth", "third"] and view.gone("pending") and view.gone("admitted")
        api.close()
        if KUBECTL:  # what a user sees: the counts in upstream's printer columns
            kubectl = [
                KUBECTL,
                "--kubeconfig",
                str(home / "kubeconfig"),
                "get",
                "clusterqueues,localqueues",
                "-A",
            ]
            shown = subprocess.run(kubectl, capture_output=True, text=True, timeout=60).stdout
            rows = {cells[0] if "/" in cells[0] else cells[1]: cells for cells in map(str.split, shown.splitlines())
                    if len(cells) > 2}  # fmt: skip
            # NAME, PENDING WORKLOADS, AGE (COHORT is empty; ADMITTED WORKLOADS is a -o wide column, as upstream)
            assert rows["clusterqueue.kueue.x-k8s.io/cq"][1] == "1", shown
            # NAMESPACE, NAME, CLUSTERQUEUE, PENDING WORKLOADS, ADMITTED WORKLOADS, AGE
            assert rows["localqueue.kueue.x-k8s.io/lq"][2:5] == ["cq", "1", "1"], shown
