"""``metrics.k8s.io/v1beta1`` for ``kubectl top nodes|pods``: what each pod's processes use now, per container,
and per node the sum of its pods (a node of the embedded cluster is a share of this machine, so its usage is
its pods').

Served like metrics-server: ``NodeMetrics`` and ``PodMetrics`` lists (``labelSelector`` honoured), CPU in
nanocores and memory in KiB, ``window`` the sampling window. Usage comes from ``podusage`` (the pods'
process trees); the documents are built here, purely.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gangplane.clock import Clock, rfc3339
from gangplane.errors import NotFound
from gangplane.server import discovery, podusage
from gangplane.server.handlers import json_response
from gangplane.server.podusage import Usage
from gangplane.store.base import ListOptions, Object, Store
from gangplane.store.catalog import NODES, PODS

GROUP, VERSION = discovery.METRICS_GROUP, discovery.METRICS_VERSION
API_VERSION = f"{GROUP}/{VERSION}"
WINDOW = 0.2  # seconds of CPU sampling per request
Sampler = Callable[[Mapping[str, int]], dict[str, Usage]]


def cpu(cores: float) -> str:
    return f"{round(cores * 1e9)}n"


def memory(size: int) -> str:
    return f"{size // 1024}Ki"


def _usage(usage: Usage) -> dict[str, str]:
    return {"cpu": cpu(usage.cpu_cores), "memory": memory(usage.memory_bytes)}


def pod_metrics(pod: Object, containers: Mapping[str, Usage], now: float) -> dict[str, Any]:
    meta = pod.get("metadata") or {}
    return {
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"), "labels": meta.get("labels")
                     or {}, "creationTimestamp": rfc3339(now)},
        "timestamp": rfc3339(now),
        "window": f"{WINDOW}s",
        "containers": [{"name": name, "usage": _usage(u)} for name, u in containers.items()],
    }  # fmt: skip


def node_metrics(node: Object, pods: Sequence[Mapping[str, Usage]], now: float) -> dict[str, Any]:
    total = Usage(sum(u.cpu_cores for p in pods for u in p.values()),
                  sum(u.memory_bytes for p in pods for u in p.values()))  # fmt: skip
    meta = node.get("metadata") or {}
    return {
        "metadata": {"name": meta.get("name"), "labels": meta.get("labels") or {},
                     "creationTimestamp": rfc3339(now)},
        "timestamp": rfc3339(now),
        "window": f"{WINDOW}s",
        "usage": _usage(total),
    }  # fmt: skip


def _list(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": f"{kind}List", "apiVersion": API_VERSION, "metadata": {},
            "items": [{"kind": kind, "apiVersion": API_VERSION, **i} for i in items]}  # fmt: skip


def _key(pod: Object) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def usage_by_pod(pods: Sequence[Object], sampler: Sampler) -> dict[str, dict[str, Usage]]:
    """``namespace/name`` -> container -> usage, all pods sampled in one window."""
    pids = {f"{_key(p)}/{c}": pid for p in pods for c, pid in podusage.container_pids(p).items()}
    sampled = sampler(pids)
    found: dict[str, dict[str, Usage]] = {_key(p): {} for p in pods}
    for key, usage in sampled.items():
        pod_key, _, container = key.rpartition("/")
        found[pod_key][container] = usage
    return found


class MetricsApi:
    def __init__(self, store: Store, clock: Clock, sampler: Sampler | None = None) -> None:
        self.store, self.clock = store, clock
        self.sampler = sampler or (lambda pids: podusage.sample(pids, WINDOW))

    def pods(self, namespace: str | None, name: str, selector: str) -> dict[str, Any]:
        pods = [p for p in self.store.list(PODS, ListOptions(namespace, selector)).items
                if (p.get("status") or {}).get("phase") == "Running" and (not name or _name(p) == name)]  # fmt: skip
        if name and not pods:
            raise NotFound(f'podmetrics.metrics.k8s.io "{name}" not found', kind="pods", name=name)
        usage, now = usage_by_pod(pods, self.sampler), self.clock.now()
        items = [pod_metrics(p, usage[_key(p)], now) for p in pods]
        return (
            items[0] | {"kind": "PodMetrics", "apiVersion": API_VERSION}
            if name
            else _list("PodMetrics", items)
        )

    def nodes(self, name: str, selector: str) -> dict[str, Any]:
        nodes = [
            n
            for n in self.store.list(NODES, ListOptions(None, selector)).items
            if not name or _name(n) == name
        ]
        if name and not nodes:
            raise NotFound(f'nodemetrics.metrics.k8s.io "{name}" not found', kind="nodes", name=name)
        running = [
            p for p in self.store.list(PODS).items if (p.get("status") or {}).get("phase") == "Running"
        ]
        usage, now = usage_by_pod(running, self.sampler), self.clock.now()
        on = {_name(n): [usage[_key(p)] for p in running if (p.get("spec") or {}).get("nodeName") == _name(n)]
              for n in nodes}  # fmt: skip
        items = [node_metrics(n, on[_name(n)], now) for n in nodes]
        return (
            items[0] | {"kind": "NodeMetrics", "apiVersion": API_VERSION}
            if name
            else _list("NodeMetrics", items)
        )


def _name(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _resource_list() -> dict[str, Any]:
    entry = {"singularName": "", "verbs": ["get", "list"]}
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": API_VERSION, "resources": [
        {"name": "nodes", "namespaced": False, "kind": "NodeMetrics", **entry},
        {"name": "pods", "namespaced": True, "kind": "PodMetrics", **entry},
    ]}  # fmt: skip


def metrics_routes(api: MetricsApi) -> list[Route]:
    base = f"/apis/{API_VERSION}"

    def serve(answer: Callable[[Request], dict[str, Any]]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            return json_response(await anyio.to_thread.run_sync(answer, request))

        return endpoint

    def selector(request: Request) -> str:
        return request.query_params.get("labelSelector", "")

    def params(request: Request, key: str) -> str:
        return str(request.path_params.get(key, ""))

    return [
        Route(f"/apis/{GROUP}", serve(lambda r: discovery.api_group(discovery.METRICS_INFO)), methods=["GET"]),
        Route(base, serve(lambda r: _resource_list()), methods=["GET"]),
        Route(f"{base}/nodes", serve(lambda r: api.nodes("", selector(r))), methods=["GET"]),
        Route(f"{base}/nodes/{{name}}", serve(lambda r: api.nodes(params(r, "name"), "")), methods=["GET"]),
        Route(f"{base}/pods", serve(lambda r: api.pods(None, "", selector(r))), methods=["GET"]),
        Route(f"{base}/namespaces/{{namespace}}/pods",
              serve(lambda r: api.pods(params(r, "namespace"), "", selector(r))), methods=["GET"]),
        Route(f"{base}/namespaces/{{namespace}}/pods/{{name}}",
              serve(lambda r: api.pods(params(r, "namespace"), params(r, "name"), "")), methods=["GET"]),
    ]  # fmt: skip


__all__ = ["MetricsApi", "cpu", "memory", "metrics_routes", "node_metrics", "pod_metrics", "usage_by_pod"]
