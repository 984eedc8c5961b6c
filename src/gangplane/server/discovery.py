"""Pure discovery documents: /version, /api, /apis and the per group-version resource lists.

kubectl asks for aggregated discovery first; a plain ``application/json`` answer makes client-go fall back to
these legacy documents, so only they are served.
"""

from __future__ import annotations

from typing import Any

from gangplane.server.resources import GroupInfo, Registry, Served

KUBERNETES_VERSION = (1, 32)
VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
STATUS_VERBS = ("get", "patch", "update")
# Served beside the registry's groups by their own routes (server/metrics_api.py), as an aggregated API is.
METRICS_GROUP, METRICS_VERSION = "metrics.k8s.io", "v1beta1"
METRICS_INFO = GroupInfo(METRICS_GROUP, (METRICS_VERSION,))


def version_info(gangplane_version: str) -> dict[str, Any]:
    major, minor = KUBERNETES_VERSION
    return {
        "major": str(major),
        "minor": str(minor),
        "gitVersion": f"v{major}.{minor}.0+gangplane-{gangplane_version}",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "",
        "compiler": "gangplane",
        "platform": "python",
    }


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "apiVersion": "v1", "versions": ["v1"], "serverAddressByClientCIDRs": []}


def _group_version(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}", "version": version}


def api_group(info: GroupInfo) -> dict[str, Any]:
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": info.name,
        "versions": [_group_version(info.name, v) for v in info.versions],
        "preferredVersion": _group_version(info.name, info.preferred),
    }


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = [api_group(g) for g in [*registry.groups(), METRICS_INFO]]
    for g in groups:
        del g["kind"], g["apiVersion"]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _resource_entries(served: Served) -> list[dict[str, Any]]:
    rt = served.rt
    main: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.kind.lower(),
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(VERBS),
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    entries = [main]
    sub = {"singularName": "", "namespaced": rt.namespaced, "kind": rt.kind}
    if rt.has_status:
        entries.append({"name": f"{rt.plural}/status", **sub, "verbs": list(STATUS_VERBS)})
    if rt.group == "" and rt.kind == "Pod":
        entries.append({"name": "pods/log", **sub, "verbs": ["get"]})
        entries.append({**sub, "name": "pods/binding", "kind": "Binding", "verbs": ["create"]})
        binding = {"name": "bindings", "singularName": "binding", "namespaced": True, "kind": "Binding"}
        entries.append({**binding, "verbs": ["create"]})  # kubectl create -f binding.yaml posts here
    return entries


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any]:
    resources = [e for s in registry.in_group_version(group, version) for e in _resource_entries(s)]
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


__all__ = [
    "KUBERNETES_VERSION",
    "METRICS_GROUP",
    "METRICS_INFO",
    "METRICS_VERSION",
    "VERBS",
    "api_group",
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "version_info",
]
