"""Kueue's visibility API on the embedded control plane: the pending workloads of a ClusterQueue or a
LocalQueue, in queue order with their positions, as ``kubectl get --raw`` and the Kueue SDK read them.

Served paths (``visibility.kueue.x-k8s.io/v1beta1``, ``limit`` and ``offset`` query parameters as upstream):

- ``/apis/visibility.kueue.x-k8s.io/v1beta1/clusterqueues/{name}/pendingworkloads``
- ``/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/{namespace}/localqueues/{name}/pendingworkloads``

The embedded Kueue answers from its last admission pass; nothing here writes.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gangplane.schedulers.kueue.controller import KueueReconciler
from gangplane.schedulers.kueue.visibility import DEFAULT_LIMIT, PendingWorkload, pending_workloads_summary

PREFIX = "/apis/visibility.kueue.x-k8s.io/v1beta1"


def _int(request: Request, name: str, default: int) -> int:
    try:
        return max(0, int(request.query_params.get(name, default)))
    except ValueError:
        return default


def _summary(request: Request, items: list[PendingWorkload]) -> Response:
    limit, offset = _int(request, "limit", DEFAULT_LIMIT), _int(request, "offset", 0)
    return JSONResponse(pending_workloads_summary(items, limit, offset))


def _not_found(kind: str, name: str) -> Response:
    body = {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "message": f'{kind} "{name}" not found',
        "reason": "NotFound",
        "details": {"name": name, "kind": kind},
        "code": 404,
    }
    return JSONResponse(body, status_code=404)


def visibility_routes(kueue: KueueReconciler) -> list[Route]:
    async def cluster_queue(request: Request) -> Response:
        name = request.path_params["name"]
        items = kueue.pending_in_cluster_queue(name)
        return _not_found("clusterqueues", name) if items is None else _summary(request, items)

    async def local_queue(request: Request) -> Response:
        namespace, name = request.path_params["namespace"], request.path_params["name"]
        return _summary(request, kueue.pending_in_local_queue(namespace, name))

    return [
        Route(f"{PREFIX}/clusterqueues/{{name}}/pendingworkloads", cluster_queue, methods=["GET"]),
        Route(
            f"{PREFIX}/namespaces/{{namespace}}/localqueues/{{name}}/pendingworkloads",
            local_queue,
            methods=["GET"],
        ),
    ]


__all__ = ["PREFIX", "visibility_routes"]
