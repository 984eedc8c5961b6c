"""Container images as local environments (pure): which rule an image matches, the key of the environment a
rule builds, and how a container's command and ``PATH`` change to run in it.

Images are never pulled. A ``ClusterConfig``'s ``images:`` list (docs/nodes.md, "Images") maps image
references, by glob pattern, to one of:

- a **virtual environment** built on first use from ``packages`` (``images_build.py``), by default layered
  over gangplane's own environment (``inherit``: its packages, torch included, are importable and satisfy
  requirements, so the list names only what is missing);
- a **command prefix** (``command``) put before the container's command, e.g. ``[conda, run, -n, jax]``;
- gangplane's own environment, when neither is given (a known image needing nothing more).

``entrypoint`` stands in for the image's ``ENTRYPOINT`` when the container gives no ``command``, as the
container runtime would (Kubernetes: ``command`` replaces the entrypoint, ``args`` follow it). The cluster's
rules are tried first, then ``DEFAULT_IMAGES``; an image no rule matches runs in gangplane's own environment.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from pydantic import Field, model_validator

from gangplane.api.base import ApiModel

LAYOUT_VERSION = 1  # part of every key: a change in how environments are built invalidates old ones
INITIALIZER_ENTRYPOINT = ["python", "-m", "gangplane.initializers"]


class ImageEnvironment(ApiModel):
    """One ``images:`` entry."""

    image: str = Field(min_length=1)  # glob over the image reference, e.g. ``ghcr.io/org/img*``
    packages: list[str] = []  # pip requirement specifiers: a virtual environment built from them
    python: str | None = None  # interpreter the environment is made with (default: gangplane's)
    inherit: bool | None = None  # gangplane's packages importable in it (default: when ``python`` is unset)
    pip_args: list[str] = []  # extra ``pip install`` arguments, e.g. ``--prefer-binary``
    command: list[str] = []  # a prefix put before the container's command instead of an environment
    entrypoint: list[str] = []  # the image's ENTRYPOINT, used when the container has no ``command``

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        if self.command and self.packages:
            raise ValueError("give packages (a virtual environment) or command (a prefix), not both")
        if self.inherit and self.python:
            raise ValueError("inherit needs gangplane's own interpreter: unset python or set inherit: false")
        if (self.python or self.pip_args or self.inherit is not None) and not self.packages:
            raise ValueError("python, pipArgs and inherit describe a virtual environment: list its packages")
        return self

    def builds_venv(self) -> bool:
        return bool(self.packages)

    def inherits(self) -> bool:
        return self.inherit if self.inherit is not None else self.python is None


def _venv(image: str, *packages: str, pip_args: Sequence[str] = ()) -> ImageEnvironment:
    return ImageEnvironment(image=image, packages=list(packages), pip_args=list(pip_args))


# The images of the upstream runtimes (../shared/upstream/runtimes). torch is gangplane's own (CPU build);
# xgboost-cpu is xgboost without its 300 MB of CUDA; MLX's Linux CPU wheel is mlx[cpu]. torchtune-trainer has
# none: no torchtune/torchao pair installs against torch 2.13 (torchtune 0.6.1 imports a module torchao 0.18
# removed; torchao 0.12 does not import on torch 2.13), so it runs in gangplane's own, with the notice.
DEFAULT_IMAGES: tuple[ImageEnvironment, ...] = (
    ImageEnvironment(image="pytorch/pytorch"),
    ImageEnvironment(image="docker.io/pytorch/pytorch"),
    # deepspeed's sdist builds in pip's isolation; mpi4py is how it finds its ranks under mpirun
    # (deepspeed.comm's mpi_discovery), as in the upstream image
    _venv("ghcr.io/kubeflow/trainer/deepspeed-runtime", "deepspeed", "mpi4py"),
    _venv("nvcr.io/nvidia/jax", "jax"),
    _venv("ghcr.io/kubeflow/trainer/xgboost-runtime", "xgboost-cpu"),
    _venv("ghcr.io/kubeflow/trainer/mlx-runtime", "mlx[cpu]"),
    # the output path is an argument so that path-mapping finds the initializer volume's mountPath in it
    ImageEnvironment(
        image="ghcr.io/kubeflow/trainer/dataset-initializer",
        entrypoint=[*INITIALIZER_ENTRYPOINT, "dataset", "--output", "/workspace/dataset"],
    ),
    ImageEnvironment(
        image="ghcr.io/kubeflow/trainer/model-initializer",
        entrypoint=[*INITIALIZER_ENTRYPOINT, "model", "--output", "/workspace/model"],
    ),
)


def repository(image: str) -> str:
    """The image reference without its tag or digest: ``ghcr.io:443/a/b:v1@sha256:..`` -> ``ghcr.io:443/a/b``."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def matches(pattern: str, image: str) -> bool:
    """A pattern matches the whole reference, or its repository (so an untagged pattern covers every tag)."""
    return fnmatch.fnmatchcase(image, pattern) or fnmatch.fnmatchcase(repository(image), pattern)


def find(rules: Sequence[ImageEnvironment], image: str) -> ImageEnvironment | None:
    """The first of the cluster's rules, then of the defaults, that matches ``image``."""
    return next((r for r in (*rules, *DEFAULT_IMAGES) if matches(r.image, image)), None)


@dataclass(frozen=True, slots=True)
class BaseInterpreter:
    """gangplane's own interpreter: what an inheriting environment is made with and layered over."""

    executable: str
    version: str
    site_packages: tuple[str, ...]
    has_pip: bool = False  # its pip can install into another environment (``pip --python``, pip >= 22.3)


def env_key(rule: ImageEnvironment, base: BaseInterpreter) -> str:
    """The cache key of a rule's environment: a hash of everything its content depends on (package order
    does not matter; the image pattern does not count, so two images listing the same packages share)."""
    inherited = rule.inherits()
    recipe: dict[str, Any] = {
        "layout": LAYOUT_VERSION,
        "packages": sorted(rule.packages),
        "pipArgs": rule.pip_args,
        "python": rule.python or base.executable,
        "inherit": list(base.site_packages) if inherited else False,
        "version": base.version if rule.python is None else None,
    }
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()
    return digest[:16]


def with_entrypoint(container: Mapping[str, Any], rule: ImageEnvironment | None) -> dict[str, Any]:
    """The container as the runtime would start it: the image's entrypoint when it sets no ``command``, then
    the rule's command prefix."""
    out = dict(container)
    if rule is None:
        return out
    if rule.entrypoint and not out.get("command"):
        out["command"] = list(rule.entrypoint)
    if rule.command:  # args still follow: prefix + command + args
        out["command"] = [*rule.command, *(out.get("command") or [])]
    return out


def with_bin_first(env: Mapping[str, str], bin_dir: str, venv: str) -> dict[str, str]:
    """``env`` with an environment's ``bin`` first on ``PATH`` and ``VIRTUAL_ENV`` naming it."""
    rest = [p for p in env.get("PATH", "").split(":") if p and p != bin_dir]
    return {**env, "PATH": ":".join([bin_dir, *rest]), "VIRTUAL_ENV": venv}


def unmapped_notice(image: str) -> str:
    return (
        f'image "{image}" maps to no local environment (docs/nodes.md, "Images"): running in gangplane\'s own'
    )


__all__ = [
    "DEFAULT_IMAGES",
    "BaseInterpreter",
    "ImageEnvironment",
    "env_key",
    "find",
    "matches",
    "repository",
    "unmapped_notice",
    "with_bin_first",
    "with_entrypoint",
]
