"""The node agent runs a container in its image's local environment: it waits while the environment builds
(``Pulling``/``Pulled`` events), starts with the environment's interpreter, fails the pod when the build
fails, and runs an unmapped image as before with a notice."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.conftest import pod, wait_phase
from gangplane.agent import AgentPool, ClusterConfig, NodeGroup, sandbox
from gangplane.agent.images import ImageEnvironment
from gangplane.store.catalog import EVENTS, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, PODS
from gangplane.store.memory import MemoryStore

pytestmark = pytest.mark.slow

PoolFactory = Callable[..., AgentPool]
PROBE = "import os, sys; print(sys.prefix == os.environ['VIRTUAL_ENV'], __import__('numpy').__name__)"


def reasons(store: MemoryStore, name: str) -> list[str]:
    return [e["reason"] for e in store.list(EVENTS).items if e["involvedObject"]["name"] == name]


def config(*images: ImageEnvironment) -> ClusterConfig:
    return ClusterConfig(node_groups=[NodeGroup(name="node", count=1)], images=list(images))


def container(image: str, code: str = PROBE) -> dict[str, Any]:
    return {"name": "main", "image": image, "command": ["python", "-c", code]}


def test_container_waits_for_its_environment_then_runs_in_it(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path
) -> None:
    rule = ImageEnvironment(image="local/numpy*", packages=["numpy"], pip_args=["--no-index"])
    make_pool(config(rule))
    store.create(PODS, pod("in-env", container("local/numpy:1"), restartPolicy="Never"))
    done = wait_phase(store, "in-env", "Succeeded", "Failed", timeout=120)
    assert done["status"]["phase"] == "Succeeded"
    assert (tmp_path / "logs/default/in-env/main.log").read_text() == "True numpy\n"
    assert reasons(store, "in-env")[:2] == ["Pulling", "Pulled"]


def test_failed_environment_fails_the_pod(store: MemoryStore, make_pool: PoolFactory, tmp_path: Path) -> None:
    script = tmp_path / "no-python"
    script.write_text("#!/bin/sh\nexit 1\n")
    script.chmod(0o755)
    rule = ImageEnvironment(image="local/broken", packages=["numpy"], python=str(script))
    make_pool(config(rule))
    store.create(PODS, pod("broken", container("local/broken"), restartPolicy="Never"))
    failed = wait_phase(store, "broken", "Failed", timeout=60)
    assert failed["status"]["reason"] == "LocalEnvironmentFailed"
    assert "creating the virtual environment exited with code 1" in failed["status"]["message"]
    assert "Failed" in reasons(store, "broken")


def test_unmapped_image_runs_in_gangplanes_environment_with_a_notice(
    store: MemoryStore, make_pool: PoolFactory
) -> None:
    make_pool(config())
    store.create(PODS, pod("plain", container("busybox", "print('ok')"), restartPolicy="Never"))
    assert wait_phase(store, "plain", "Succeeded", "Failed")["status"]["phase"] == "Succeeded"
    assert "Pulled" in reasons(store, "plain")


@pytest.mark.parametrize("isolation", [sandbox.PATH_MAPPING, sandbox.NAMESPACE])
def test_dataset_initializer_image_fills_the_claim_in_either_isolation_mode(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path, isolation: str
) -> None:
    if isolation == sandbox.NAMESPACE and sandbox.mode() != sandbox.NAMESPACE:
        pytest.skip("mount namespaces are not available here")
    source = tmp_path / "source"
    (source / "data").mkdir(parents=True)
    (source / "data" / "train.csv").write_text("x,y\n")
    make_pool(config(), isolation=isolation)
    init = {
        "name": "dataset-initializer",
        "image": "ghcr.io/kubeflow/trainer/dataset-initializer",
        "env": [{"name": "STORAGE_URI", "value": f"file://{source}"}],
        "volumeMounts": [{"name": "initializer", "mountPath": "/workspace/dataset"}],
    }
    shared = tmp_path / "claims" / f"pv-{isolation}"
    _bound_claim(store, f"data-{isolation}", f"pv-{isolation}", shared)
    claim = {"name": "initializer", "persistentVolumeClaim": {"claimName": f"data-{isolation}"}}
    store.create(PODS, pod("init", init, restartPolicy="Never", volumes=[claim]))
    done = wait_phase(store, "init", "Succeeded", "Failed", timeout=60)
    assert done["status"]["phase"] == "Succeeded", done["status"]
    assert (shared / "data" / "train.csv").read_text() == "x,y\n"


def _bound_claim(store: MemoryStore, claim: str, volume: str, where: Path) -> None:
    """A claim bound to a hostPath volume, as the PV controller leaves it (no controller runs here)."""
    source = {"hostPath": {"path": str(where), "type": "DirectoryOrCreate"}}
    spec = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], **source}
    store.create(PERSISTENT_VOLUMES, {"metadata": {"name": volume}, "spec": spec})
    created = store.create(
        PERSISTENT_VOLUME_CLAIMS,
        {
            "metadata": {"name": claim, "namespace": "default"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "volumeName": volume,
            },
        },
    )
    store.update_status(PERSISTENT_VOLUME_CLAIMS, {**created, "status": {"phase": "Bound"}})
