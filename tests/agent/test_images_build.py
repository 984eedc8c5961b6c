"""Building image environments for real: a venv layered over gangplane's, published atomically, built once
for every container waiting on it, a failure publishing nothing and failing the pod with the reason."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from gangplane.agent import pod_state as ps
from gangplane.agent.images import ImageEnvironment
from gangplane.agent.images_build import PTH_NAME, EnvironmentCache
from gangplane.agent.images_prepare import FAILED_REASON, FAILURE_MEMORY_SECONDS, ImageEnvironments

# numpy is in gangplane's environment: inherited, so pip installs nothing and needs no index
INHERITED = ImageEnvironment(image="local/numpy*", packages=["numpy"], pip_args=["--no-index"])


def broken(folder: Path) -> ImageEnvironment:
    """An "interpreter" that cannot make a venv: the build fails at its first step, after a moment (so a
    test sees it in progress first)."""
    script = folder / "no-python"
    script.write_text("#!/bin/sh\nsleep 0.5\nexit 1\n")
    script.chmod(0o755)
    return ImageEnvironment(image="local/broken", packages=["numpy"], python=str(script))


@pytest.mark.slow
def test_waiting_containers_share_one_build_then_start_in_the_env(tmp_path: Path) -> None:
    images = ImageEnvironments([INHERITED], EnvironmentCache(tmp_path / "envs"))
    crashed = tmp_path / "envs" / "builds" / f"{images.cache.key(INHERITED)}-dead0000"
    crashed.mkdir(parents=True)  # a build whose process died: swept before building again
    woken = [threading.Event(), threading.Event()]
    container = {"name": "c", "image": "local/numpy:1", "command": ["python"]}
    for i, wake in enumerate(woken):
        first = images.prepare((f"uid{i}", "c"), container, wake.set)
        assert first.container is None and first.waiting.startswith("building the local environment")
        assert [e[1] for e in first.events] == ["Pulling"]
    assert all(wake.wait(120) for wake in woken)
    ready = images.prepare(("uid0", "c"), container, lambda: None)
    assert ready.container == container and [e[1] for e in ready.events] == ["Pulled"]
    assert images.prepare(("uid1", "c"), container, lambda: None).venv == ready.venv
    cached = images.prepare(("uid2", "c"), container, lambda: None)  # later pods: ready at once
    assert cached.venv == ready.venv and cached.events == ()

    env = ready.venv
    assert env is not None and env.is_symlink()
    assert len(list((tmp_path / "envs" / "builds").iterdir())) == 1  # built once, the crashed one swept
    assert list(env.glob(f"lib/python*/site-packages/{PTH_NAME}"))
    probe = "import numpy, sys; print(sys.prefix)"
    out = subprocess.run([env / "bin" / "python", "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(env)
    assert "Requirement already satisfied: numpy" in images.cache.log_path(INHERITED).read_text()


def test_failed_build_publishes_nothing_and_fails_the_pod(tmp_path: Path) -> None:
    now, rule = [100.0], broken(tmp_path)
    images = ImageEnvironments([rule], EnvironmentCache(tmp_path / "envs"), clock=lambda: now[0])
    woken = threading.Event()
    bad = {"name": "c", "image": "local/broken", "command": ["python"]}
    assert images.prepare(("uid", "c"), bad, woken.set).container is None
    assert woken.wait(60)
    failed = images.prepare(("uid", "c"), bad, woken.set)
    assert "creating the virtual environment exited with code 1" in failed.failure
    assert failed.events[0][:2] == ("Warning", "Failed")
    run = failed.held(ps.new_run(ps.spec_of({"spec": {"containers": [bad]}}), 0.0), "c")
    assert run.failure == (FAILED_REASON, failed.failure)
    assert run.containers["c"].waiting_reason == "ErrImagePull"
    assert images.cache.published(rule) is None
    retried = images.prepare(("uid-retry", "c"), bad, woken.set)  # a Job's next pod: the failure, at once
    assert retried.failure == failed.failure and [e[1] for e in retried.events] == ["Failed"]
    now[0] += FAILURE_MEMORY_SECONDS
    rebuilt = images.prepare(("uid-later", "c"), bad, lambda: None)  # a minute on: built again
    assert rebuilt.waiting and [e[1] for e in rebuilt.events] == ["Pulling"]
    assert list((tmp_path / "envs" / "builds").iterdir()) == []


def test_unmapped_image_runs_as_is_with_a_notice(tmp_path: Path) -> None:
    images = ImageEnvironments([], EnvironmentCache(tmp_path / "envs"))
    prepared = images.prepare(
        ("u", "c"), {"name": "c", "image": "busybox", "command": ["true"]}, lambda: None
    )
    assert prepared.container is not None and prepared.venv is None
    assert prepared.events[0][1] == "Pulled" and "busybox" in prepared.events[0][2]


def test_initializer_images_get_gangplanes_initializer_as_entrypoint(tmp_path: Path) -> None:
    images = ImageEnvironments([], EnvironmentCache(tmp_path / "envs"))
    container = {"name": "dataset-initializer", "image": "ghcr.io/kubeflow/trainer/dataset-initializer"}
    prepared = images.prepare(("u", "c"), container, lambda: None)
    assert prepared.container is not None and prepared.events == ()
    assert prepared.container["command"] == [
        *("python", "-m", "gangplane.initializers", "dataset", "--output", "/workspace/dataset")
    ]
