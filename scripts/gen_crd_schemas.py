"""Generate ``src/gangplane/server/crd_schemas.json.gz``: the structural schema of every served custom kind and
version, from the upstream CustomResourceDefinitions in ``../shared/crds`` (Apache-2.0; provenance there).

The API server's ``/openapi/v3`` serves these so ``kubectl explain trainjob.spec.trainer`` works to any depth;
the product never reads ``../shared`` at run time, only this generated file. Kept: the structure (types,
properties, items, required, enums, formats, defaults, bounds, patterns and the ``x-kubernetes-*`` list and
map markers). Dropped: upstream's prose (``description``) and CEL rules (``x-kubernetes-validations``), which
gangplane's own validation modules implement. Rerun after updating the CRDs:

    .venv/bin/python scripts/gen_crd_schemas.py [CRD_DIR]
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "gangplane" / "server" / "crd_schemas.json.gz"
KEEP = frozenset(
    {
        "type", "properties", "items", "required", "enum", "format", "default", "additionalProperties",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern",
        "minItems", "maxItems", "minProperties", "maxProperties", "nullable", "anyOf", "allOf", "oneOf",
        "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string", "x-kubernetes-embedded-resource",
        "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
    }
)  # fmt: skip


def structural(schema: Any) -> Any:
    """The schema without prose and CEL rules, recursively (property names are data, not keywords)."""
    if isinstance(schema, list):
        return [structural(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in KEEP:
            continue
        if key == "properties":
            kept[key] = {name: structural(sub) for name, sub in value.items()}
        else:
            kept[key] = structural(value) if isinstance(value, dict | list) else value
    return kept


def schemas(crd_dir: Path) -> dict[str, Any]:
    """``group/version/Kind`` -> structural schema, for every served version of every CRD."""
    found: dict[str, Any] = {}
    for path in sorted(crd_dir.glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)  # libyaml: the CRDs are megabytes
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if version.get("served"):
                found[f"{group}/{version['name']}/{kind}"] = structural(version["schema"]["openAPIV3Schema"])
    return found


def main(crd_dir: Path) -> None:
    data = json.dumps(schemas(crd_dir), sort_keys=True, separators=(",", ":")).encode()
    OUT.write_bytes(gzip.compress(data, mtime=0))
    print(f"{OUT.relative_to(ROOT)}: {len(data)} bytes of JSON, {OUT.stat().st_size} gzipped")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "crds")
