"""``POST pods/{name}/binding`` (what kube-scheduler's binder sends) and ``POST bindings`` (what
``kubectl create -f binding.yaml`` sends): both assign a pod to a node in one store write
(``store/binding.py``) and answer 201 with a ``Success`` ``Status``, as kube-apiserver does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gangplane.errors import BadRequest
from gangplane.server import bodies, query
from gangplane.server.handlers import Context, json_response, write
from gangplane.server.query import MethodNotAllowed
from gangplane.store.binding import bind_pod, binding_name, success_status
from gangplane.store.core import ObjectStore


def binding_routes(ctx: Context) -> list[Route]:
    """The two routes; they go before the generic ``/api/{rest}`` route, which knows no ``binding``."""
    endpoints = binding_endpoints(ctx)
    return [
        Route("/api/v1/namespaces/{namespace}/pods/{name}/binding", endpoints["pod"], methods=["POST"]),
        Route("/api/v1/namespaces/{namespace}/bindings", endpoints["collection"], methods=["POST"]),
    ]


def binding_endpoints(ctx: Context) -> dict[str, Callable[[Request], Awaitable[Response]]]:
    """The endpoints of ``pods/{name}/binding`` ("pod") and ``bindings`` ("collection"); they read the
    ``namespace`` (and ``name``) path parameters."""

    async def bind(request: Request, body: Any, name: str) -> Response:
        store = ctx.store
        if not isinstance(store, ObjectStore):  # a proxying store has no transaction to run it in
            raise MethodNotAllowed("this server's store does not support pods/binding")
        if query.dry_run(dict(request.query_params)):
            raise BadRequest("dryRun is not supported for pods/binding")
        # the scheduler's one write per pod: group-committed with the other requests of this loop pass
        await write(ctx, bind_pod, store, str(request.path_params["namespace"]), name, body)
        return json_response(success_status(), 201)

    async def pod_binding(request: Request) -> Response:
        return await bind(request, await bodies.read(request), str(request.path_params["name"]))

    async def bindings(request: Request) -> Response:
        body = await bodies.read(request)
        name = binding_name(body)
        if not name:
            raise BadRequest("a Binding needs metadata.name: the name of the pod to bind")
        return await bind(request, body, name)

    return {"pod": pod_binding, "collection": bindings}


__all__ = ["binding_endpoints", "binding_routes"]
