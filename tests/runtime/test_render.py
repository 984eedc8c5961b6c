"""End to end through admission and rendering: upstream runtimes, the examples, CRD validity, error paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from crdschema import SHARED_DIR, validate_against_crd
from gangplane.api import serde
from gangplane.clock import ManualClock
from gangplane.runtime.admission import Admission
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.points import Handle
from gangplane.runtime.render import Rendered, Renderer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
needs_shared = pytest.mark.skipif(SHARED_DIR is None, reason="shared/ reference material not found")
UPSTREAM = sorted((SHARED_DIR / "upstream" / "runtimes").rglob("*.yaml")) if SHARED_DIR else []


def renderer() -> Renderer:
    clock = ManualClock()
    return Renderer(Admission(Framework(default_registry(), Handle(clock)), clock))


def render(docs: list[dict[str, Any]]) -> Rendered:
    return renderer().render([("test", doc) for doc in docs])


def job_for(runtime_name: str, **trainer: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"runtimeRef": {"name": runtime_name}, "trainer": trainer},
    }


def crd_errors(rendered: Rendered) -> list[str]:
    checked = [d.object.to_dict() for d in rendered.objects if d.object.to_dict()["apiVersion"] != "v1"]
    return [f"{o['kind']}: {e}" for o in checked for e in validate_against_crd(o)]


@needs_shared
@pytest.mark.parametrize("path", UPSTREAM, ids=[p.stem for p in UPSTREAM])
@pytest.mark.parametrize("policy", [None, {"coscheduling": {}}, {"volcano": {"networkTopology": {}}}])
def test_upstream_runtime_renders_valid_objects(path: Path, policy: dict | None) -> None:
    runtime = yaml.safe_load(path.read_text())
    if policy is not None:
        runtime["spec"]["podGroupPolicy"] = policy
    rendered = render([runtime, job_for(runtime["metadata"]["name"], numNodes=2)])
    assert rendered.errors == []
    kinds = [d.object.to_dict()["kind"] for d in rendered.objects]
    assert kinds[:3] == ["ClusterTrainingRuntime", "TrainJob", "ConfigMap"]
    assert "JobSet" in kinds and ("PodGroup" in kinds) == (policy is not None)
    assert crd_errors(rendered) == []


@needs_shared
def test_examples_render_without_errors_and_validate() -> None:
    # examples/jax and examples/xgboost run on upstream's runtimes unchanged, so those come first
    assert SHARED_DIR is not None
    rendered = renderer().render(serde.load_paths([SHARED_DIR / "upstream" / "runtimes", EXAMPLES]))
    assert rendered.errors == []
    assert crd_errors(rendered) == []


def test_yaml_output_loads_back_into_the_same_objects() -> None:
    rendered = renderer().render(serde.load_paths([EXAMPLES / "coscheduling"]))
    dicts = [d.object.to_dict() for d in rendered.objects]
    reloaded = serde.parse_documents(serde.dump_yaml(dicts), "round-trip")
    assert reloaded == dicts
    assert [serde.to_model(d).to_dict() for d in reloaded] == dicts


def test_missing_runtime_is_forbidden_on_runtime_ref() -> None:
    rendered = render([job_for("nowhere")])
    (_, error), *_ = rendered.errors
    assert (error.code, [c.path for c in error.causes]) == (403, ["spec.runtimeRef"])


def test_schema_errors_are_reported_together() -> None:
    job = job_for("x", numNodes="two")
    job["spec"]["trainer"]["numNode"] = 3
    (_, error), *_ = render([job]).errors
    assert error.code == 422
    assert sorted(c.path for c in error.causes) == ["spec.trainer.numNode", "spec.trainer.numNodes"]


def test_rule_errors_are_reported_together() -> None:
    job = job_for("x", numProcPerNode=0)
    job["metadata"]["name"] = "Bad_Name"
    (_, error), *_ = render([job]).errors
    assert error.code == 422
    assert sorted(c.path for c in error.causes) == ["metadata.name", "spec.trainer.numProcPerNode"]


def test_slurm_bridge_options_reach_the_pod_group() -> None:
    rendered = renderer().render(serde.load_paths([EXAMPLES / "slurm" / "runtime-and-job.yaml"]))
    (pod_group,) = [d.object.to_dict() for d in rendered.objects if d.object.to_dict()["kind"] == "PodGroup"]
    assert pod_group["metadata"]["annotations"] == {
        "slurmjob.slinky.slurm.net/partition": "gpu",
        "slurmjob.slinky.slurm.net/timelimit": "120",
    }
    assert pod_group["spec"]["minMember"] == 3
