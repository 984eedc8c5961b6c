"""Image -> local environment rules (pure): matching, keys, entrypoints, prefixes, config validation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gangplane.agent.images import (
    DEFAULT_IMAGES,
    BaseInterpreter,
    ImageEnvironment,
    env_key,
    find,
    matches,
    repository,
    with_bin_first,
    with_entrypoint,
)
from gangplane.agent.nodes import ClusterConfig

BASE = BaseInterpreter("/venv/bin/python", "3.11.7", ("/venv/lib/python3.11/site-packages",))


@pytest.mark.parametrize(
    ("image", "repo"),
    [
        ("ghcr.io/kubeflow/trainer/xgboost-runtime", "ghcr.io/kubeflow/trainer/xgboost-runtime"),
        ("nvcr.io/nvidia/jax:25.10-py3", "nvcr.io/nvidia/jax"),
        ("localhost:5000/img:v1", "localhost:5000/img"),
        ("localhost:5000/img", "localhost:5000/img"),
        ("img@sha256:abcd", "img"),
        ("img:v1@sha256:abcd", "img"),
    ],
)
def test_repository_drops_tag_and_digest(image: str, repo: str) -> None:
    assert repository(image) == repo


def test_untagged_pattern_covers_every_tag_and_globs_work() -> None:
    assert matches("nvcr.io/nvidia/jax", "nvcr.io/nvidia/jax:25.10-py3")
    assert matches("nvcr.io/nvidia/*", "nvcr.io/nvidia/jax:25.10-py3")
    assert matches("*:25.10-py3", "nvcr.io/nvidia/jax:25.10-py3")
    assert not matches("nvcr.io/nvidia/jax", "nvcr.io/nvidia/jax-extra:1")


def test_every_upstream_runtime_image_but_torchtune_has_a_default() -> None:
    for image in (
        "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
        "ghcr.io/kubeflow/trainer/deepspeed-runtime",
        "ghcr.io/kubeflow/trainer/mlx-runtime:latest",
        "nvcr.io/nvidia/jax:25.10-py3",
        "ghcr.io/kubeflow/trainer/xgboost-runtime",
        "ghcr.io/kubeflow/trainer/dataset-initializer",
        "ghcr.io/kubeflow/trainer/model-initializer:v2",
    ):
        assert find([], image) is not None, image
    assert find([], "busybox") is None
    assert find([], "ghcr.io/kubeflow/trainer/torchtune-trainer") is None  # no installable env (images.py)


def test_cluster_rules_win_over_defaults() -> None:
    mine = ImageEnvironment(image="nvcr.io/nvidia/jax*", packages=["jax==0.4.30"])
    assert find([mine], "nvcr.io/nvidia/jax:25.10-py3") is mine
    assert find([mine], "ghcr.io/kubeflow/trainer/xgboost-runtime") in DEFAULT_IMAGES


def test_key_ignores_package_order_and_pattern_but_not_content() -> None:
    a = ImageEnvironment(image="a", packages=["jax", "optax"])
    b = ImageEnvironment(image="b", packages=["optax", "jax"])
    assert env_key(a, BASE) == env_key(b, BASE)
    assert env_key(a, BASE) != env_key(ImageEnvironment(image="a", packages=["jax"]), BASE)
    assert env_key(a, BASE) != env_key(a.model_copy(update={"inherit": False}), BASE)
    other = BaseInterpreter("/venv/bin/python", "3.12.1", BASE.site_packages)
    assert env_key(a, BASE) != env_key(a, other)


def test_entrypoint_only_without_command_and_args_follow() -> None:
    rule = ImageEnvironment(image="i", entrypoint=["python", "-m", "init"])
    assert with_entrypoint({"name": "c", "args": ["--x"]}, rule)["command"] == ["python", "-m", "init"]
    assert with_entrypoint({"name": "c", "command": ["sh"]}, rule)["command"] == ["sh"]
    assert with_entrypoint({"name": "c"}, None) == {"name": "c"}


def test_command_prefix_leads_the_command_line() -> None:
    rule = ImageEnvironment(image="i", command=["conda", "run", "-n", "jax"])
    out = with_entrypoint({"name": "c", "command": ["python"], "args": ["t.py"]}, rule)
    assert (out["command"], out["args"]) == (["conda", "run", "-n", "jax", "python"], ["t.py"])
    only_args = with_entrypoint({"name": "c", "args": ["python", "t.py"]}, rule)
    assert only_args["command"] == ["conda", "run", "-n", "jax"]
    assert only_args["args"] == ["python", "t.py"]


def test_bin_first_on_path() -> None:
    env = with_bin_first({"PATH": "/venv/bin:/usr/bin:/e/bin"}, "/e/bin", "/e")
    assert env == {"PATH": "/e/bin:/venv/bin:/usr/bin", "VIRTUAL_ENV": "/e"}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"image": "i", "packages": ["a"], "command": ["x"]}, "not both"),
        ({"image": "i", "packages": ["a"], "python": "python3.12", "inherit": True}, "inherit needs"),
        ({"image": "i", "python": "python3.12"}, "list its packages"),
        ({"image": "", "packages": ["a"]}, "at least 1 character"),
        ({"image": "i", "package": ["a"]}, "Extra inputs are not permitted"),
    ],
)
def test_bad_rules_are_refused(body: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        ClusterConfig.model_validate({"images": [body]})


def test_cluster_config_reads_images_in_camel_case() -> None:
    config = ClusterConfig.model_validate(
        {"images": [{"image": "ds*", "packages": ["deepspeed"], "pipArgs": ["--no-build-isolation"]}]}
    )
    assert config.images[0].pip_args == ["--no-build-isolation"]
    assert config.images[0].inherits()
    python = ImageEnvironment(image="i", packages=["a"], python="python3.12")
    assert not python.inherits()
