"""Pure OpenAPI v3 documents for kubectl's validation probe, ``apply`` and ``explain``.

kubectl (1.27+) checks the PATCH operation of each kind for a ``fieldValidation`` query parameter; finding it,
it leaves validation to the server instead of fetching the protobuf OpenAPI v2 document, which is not served.
Custom kinds (Trainer, JobSet, Kueue, Volcano, KAI, scheduler-plugins) get their full structural schema,
generated from the upstream CRDs into ``crd_schemas.json.gz`` (``scripts/gen_crd_schemas.py``), so
``kubectl explain`` works to any depth; built-in kinds get theirs from the protobuf descriptors
(``builtin_schemas``). PATCH operations do not list
``application/strategic-merge-patch+json``: kubectl then computes strategic merge patches for built-in kinds
from its compiled-in types (and JSON merge patches for custom kinds) instead of from these schemas; the
server still accepts all four patch types.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
from importlib import resources
from typing import Any

from gangplane.api.structural import Defaults, compile_defaults
from gangplane.server import builtin_schemas
from gangplane.server.resources import Registry, Served
from gangplane.store.base import ResourceType
from gangplane.store.binding import BINDINGS
from gangplane.store.catalog import PODS

_PATCH_CONTENT = (
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
)
_OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def schema_name(rt: ResourceType) -> str:
    """Kubernetes naming: reversed group, version, kind (``org.kubeflow.trainer.v1alpha1.TrainJob``); the
    built-in kinds by their Go package (``io.k8s.api.batch.v1.Job``)."""
    message = builtin_schemas.kind_message(rt.api_version, rt.kind)
    if message is not None:
        return builtin_schemas.component_name(message.full_name)
    reversed_group = ".".join(reversed(rt.group.split("."))) if rt.group else "io.k8s.api.core"
    return f"{reversed_group}.{rt.version}.{rt.kind}"


def _gvk(rt: ResourceType) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "kind": rt.kind}


@functools.cache
def crd_schemas() -> dict[str, Any]:
    """``group/version/Kind`` -> the structural schema shipped with the package (generated from the CRDs)."""
    packed = resources.files("gangplane.server").joinpath("crd_schemas.json.gz").read_bytes()
    loaded: dict[str, Any] = json.loads(gzip.decompress(packed))
    return loaded


@functools.cache
def crd_defaults(api_version: str, kind: str) -> Defaults | None:
    """The structural defaults of a served custom kind (``api.structural``), None when its CRD has none."""
    schema = crd_schemas().get(f"{api_version}/{kind}")
    return compile_defaults(schema) if schema is not None else None


def _schema(rt: ResourceType) -> dict[str, Any]:
    structural = crd_schemas().get(f"{rt.group}/{rt.version}/{rt.kind}")
    if structural is not None:
        return {**structural, "x-kubernetes-group-version-kind": [_gvk(rt)]}
    return {
        "type": "object",
        "description": f"{rt.kind} ({rt.api_version}) served by gangplane.",
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion of this representation."},
            "kind": {"type": "string", "description": "Kind of this object."},
            "metadata": {"type": "object", "description": "Standard object metadata.", **_OPEN},
            "spec": {"description": f"Desired state of the {rt.kind}.", **_OPEN},
            "status": {"description": f"Observed state of the {rt.kind}.", **_OPEN},
        },
        "x-kubernetes-group-version-kind": [_gvk(rt)],
    }


def _ref(rt: ResourceType) -> dict[str, Any]:
    return {"schema": {"$ref": f"#/components/schemas/{schema_name(rt)}"}}


def _query(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "in": "query", "schema": {"type": "string"}, "uniqueItems": True} for n in names]


def _op(
    rt: ResourceType, action: str, params: tuple[str, ...] = (), body: tuple[str, ...] = ()
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": f"{action}{rt.kind}",
        "parameters": _query(*params),
        "responses": {"200": {"description": "OK", "content": {"application/json": _ref(rt)}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(rt),
    }
    if body:
        op["requestBody"] = {"content": {media: _ref(rt) for media in body}}
    return op


def _item_ops(rt: ResourceType) -> dict[str, Any]:
    write = ("dryRun", "fieldManager", "fieldValidation")
    return {
        "get": _op(rt, "get"),
        "put": _op(rt, "put", write, ("application/json",)),
        "patch": _op(rt, "patch", (*write, "force"), _PATCH_CONTENT),
        "delete": _op(rt, "delete", ("propagationPolicy",)),
    }


def _paths(rt: ResourceType) -> dict[str, Any]:
    scope = "/namespaces/{namespace}" if rt.namespaced else ""
    base = f"/{_gv_path(rt.group, rt.version)}{scope}/{rt.plural}"
    collection = {
        "get": _op(rt, "list", ("labelSelector", "fieldSelector", "limit", "continue", "watch")),
        "post": _op(rt, "post", ("dryRun", "fieldManager", "fieldValidation"), ("application/json",)),
        "delete": _op(rt, "deletecollection", ("labelSelector", "fieldSelector")),
    }
    paths = {base: collection, f"{base}/{{name}}": _item_ops(rt)}
    if rt.has_status:
        paths[f"{base}/{{name}}/status"] = {k: v for k, v in _item_ops(rt).items() if k != "delete"}
    return paths


def _schemas(rt: ResourceType) -> dict[str, Any]:
    """The kind's schema and, for a built-in kind, the components it refers to."""
    message = builtin_schemas.kind_message(rt.api_version, rt.kind)
    if message is None:
        return {schema_name(rt): _schema(rt)}
    return builtin_schemas.components(message, _gvk(rt))[1]


def _binding_paths() -> dict[str, Any]:
    """``pods/{name}/binding`` and ``bindings``: create-only (``server/binding.py``); kubectl validates a
    Binding it creates against this schema."""
    post = {
        "post": _op(BINDINGS, "post", ("dryRun", "fieldManager", "fieldValidation"), ("application/json",))
    }
    base = "/api/v1/namespaces/{namespace}"
    return {f"{base}/bindings": post, f"{base}/pods/{{name}}/binding": post}


def group_version_document(served: list[Served]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for s in served:
        paths.update(_paths(s.rt))
        schemas.update(_schemas(s.rt))
        if s.rt == PODS:
            paths.update(_binding_paths())
            schemas.update(_schemas(BINDINGS))
    return {
        "openapi": "3.0.0",
        "info": {"title": "gangplane", "version": "v1"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def document_hash(document: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:16].upper()


def root_document(registry: Registry) -> dict[str, Any]:
    """``/openapi/v3``: one entry per group version, each with a content hash clients use as cache key."""
    gvs = sorted({(s.rt.group, s.rt.version) for s in registry.served})
    paths = {}
    for group, version in gvs:
        doc_hash = document_hash(group_version_document(registry.in_group_version(group, version)))
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={doc_hash}"}
    return {"paths": paths}


__all__ = [
    "crd_defaults",
    "crd_schemas",
    "document_hash",
    "group_version_document",
    "root_document",
    "schema_name",
]
