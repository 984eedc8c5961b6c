"""The structural schemas shipped in the package are what ``scripts/gen_crd_schemas.py`` makes of the
upstream CRDs today (rerun it after updating ../shared/crds), and every served custom kind has one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from gangplane.server import openapi
from gangplane.server.resources import default_registry

ROOT = Path(__file__).resolve().parents[2]


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_crd_schemas", ROOT / "scripts" / "gen_crd_schemas.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_schemas_match_the_crds() -> None:
    assert openapi.crd_schemas() == _generator().schemas(ROOT.parent / "shared" / "crds")


def test_every_served_custom_kind_has_a_structural_schema() -> None:
    custom = [
        s.rt for s in default_registry().served if "." in s.rt.group and s.rt.group != "scheduling.k8s.io"
    ]
    custom = [rt for rt in custom if rt.group not in ("coordination.k8s.io", "storage.k8s.io")]  # built-ins
    missing = [f"{rt.group}/{rt.version}/{rt.kind}" for rt in custom if
               f"{rt.group}/{rt.version}/{rt.kind}" not in openapi.crd_schemas()]  # fmt: skip
    assert missing == []
    trainer = openapi.crd_schemas()["trainer.kubeflow.org/v1alpha1/TrainJob"]["properties"]["spec"]
    assert trainer["properties"]["trainer"]["properties"]["numNodes"]["type"] == "integer"
    assert "description" not in trainer  # upstream's prose is not shipped
