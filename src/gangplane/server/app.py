"""The Starlette application: routing of Kubernetes API paths onto discovery documents and the verbs.

Path resolution and every document are pure (``query``, ``discovery``, ``openapi``); this module only wires
them to requests. The store is injected, already constructed with its ``Admission`` hook: admission runs
inside the store's write path, so creates, updates, every patch type and server-side apply are all admitted
atomically.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from gangplane.clock import Clock, WallClock
from gangplane.errors import ApiError, NotFound
from gangplane.server import discovery, handlers, openapi, openapi_v2
from gangplane.server.auth import BearerAuth, ServiceAccountTokens
from gangplane.server.authz import authorization_routes, registry_scope
from gangplane.server.binding import binding_endpoints, binding_routes
from gangplane.server.commits import GroupCommit
from gangplane.server.handlers import Context, error_response, json_response
from gangplane.server.hotpath import HotPath, TrackedSend, internal_error, log_unexpected
from gangplane.server.metrics_api import MetricsApi, metrics_routes
from gangplane.server.query import MethodNotAllowed, Target, parse_target
from gangplane.server.resources import Registry, default_registry
from gangplane.server.streams import WATCH_THREADS
from gangplane.server.ui import DashboardLogin, ui_routes
from gangplane.store.base import Store

Handler = Callable[[Context, Target, Request], Awaitable[Response]]
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
GANGPLANE_VERSION = "0.1.0"

_COLLECTION: dict[str, Handler] = {
    "GET": handlers.list_or_watch,
    "POST": handlers.create,
    "DELETE": handlers.delete_collection,
}
_ITEM: dict[str, Handler] = {
    "GET": handlers.get,
    "PUT": handlers.update,
    "PATCH": handlers.patch,
    "DELETE": handlers.delete,
}
_STATUS: dict[str, Handler] = {"GET": handlers.get, "PUT": handlers.update, "PATCH": handlers.patch}
_LOG: dict[str, Handler] = {"GET": handlers.get}


def _not_found() -> NotFound:
    return NotFound("the server could not find the requested resource")


def _split(request: Request) -> list[str]:
    return [p for p in str(request.path_params.get("rest", "")).split("/") if p]


def pick_handler(target: Target, method: str) -> Handler:
    table = _COLLECTION if not target.name else _ITEM
    if target.subresource:
        table = _STATUS if target.subresource == "status" else _LOG
    handler = table.get(method)
    if handler is None:
        raise MethodNotAllowed(f"the server does not allow this method on the requested resource: {method}")
    return handler


class Api:
    """Request handlers bound to one store, registry and clock."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.registry = ctx.registry
        self.openapi_root = openapi.root_document(ctx.registry)
        self.openapi_v2 = openapi_v2.Documents(ctx.registry)

    async def core(self, request: Request) -> Response:
        rest = _split(request)
        if not rest:
            return json_response(discovery.api_versions())
        return await self._resources(request, "", rest[0], rest[1:])

    async def groups(self, request: Request) -> Response:
        rest = _split(request)
        if not rest:
            return json_response(discovery.api_group_list(self.registry))
        if len(rest) == 1:
            found = [g for g in self.registry.groups() if g.name == rest[0]]
            if not found:
                raise _not_found()
            return json_response(discovery.api_group(found[0]))
        return await self._resources(request, rest[0], rest[1], rest[2:])

    async def _resources(self, request: Request, group: str, version: str, rest: list[str]) -> Response:
        if not self.registry.has_group_version(group, version):
            raise _not_found()
        if not rest:
            if request.method != "GET":
                raise MethodNotAllowed(f"the server does not allow this method: {request.method}")
            return json_response(discovery.api_resource_list(self.registry, group, version))
        target = parse_target(self.registry, group, version, rest)
        if target is None:
            raise _not_found()
        return await pick_handler(target, request.method)(self.ctx, target, request)

    async def openapi_v3(self, request: Request) -> Response:
        rest = _split(request)
        if not rest:
            return json_response(self.openapi_root)
        if rest[0] == "api" and len(rest) == 2:
            group, version = "", rest[1]
        elif rest[0] == "apis" and len(rest) == 3:
            group, version = rest[1], rest[2]
        else:
            raise _not_found()
        if not self.registry.has_group_version(group, version):
            raise _not_found()
        return json_response(openapi.group_version_document(self.registry.in_group_version(group, version)))

    async def openapi_v2_document(self, request: Request) -> Response:
        body, media_type = self.openapi_v2.answer(request.headers.get("accept", ""))
        return Response(body, media_type=media_type)

    async def version(self, request: Request) -> Response:
        return json_response(discovery.version_info(GANGPLANE_VERSION))


async def _health(request: Request) -> Response:
    return PlainTextResponse("ok")


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc)


async def _internal_error(request: Request, exc: Exception) -> Response:
    return error_response(internal_error(exc))


class ContainErrors:
    """The last line of defence: an unexpected exception becomes one log line and (if nothing was sent
    yet) a 500 ``Status``, instead of a dropped connection and a full traceback in the server log."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tracked = TrackedSend(send)
        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            log_unexpected(scope, exc)
            if not tracked.started:
                await error_response(ApiError(f"internal error: {type(exc).__name__}"))(scope, receive, send)


def metrics_route(metrics: CollectorRegistry) -> Route:
    """``/metrics`` in the Prometheus text format (behind the bearer token, as on a real API server)."""

    async def serve(request: Request) -> Response:
        return Response(generate_latest(metrics), media_type=CONTENT_TYPE_LATEST)

    return Route("/metrics", serve, methods=["GET"])


def routes(api: Api) -> list[Route]:
    return [
        *(Route(p, _health, methods=["GET"]) for p in ("/healthz", "/livez", "/readyz")),
        Route("/version", api.version, methods=["GET"]),
        Route("/api", api.core, methods=["GET"]),
        Route("/api/{rest:path}", api.core, methods=METHODS),
        Route("/apis", api.groups, methods=["GET"]),
        Route("/apis/{rest:path}", api.groups, methods=METHODS),
        Route("/openapi/v2", api.openapi_v2_document, methods=["GET"]),
        Route("/openapi/v3", api.openapi_v3, methods=["GET"]),
        Route("/openapi/v3/{rest:path}", api.openapi_v3, methods=["GET"]),
    ]


def create_app(
    store: Store,
    *,
    token: str,
    logs_dir: Path,
    registry: Registry | None = None,
    clock: Clock | None = None,
    metrics: CollectorRegistry | None = None,
    extra_routes: Sequence[Route] = (),
    users: Mapping[str, dict[str, Any]] | None = None,
) -> DashboardLogin:
    """The API server as an ASGI app: every route behind bearer-token auth except health and version (and
    the dashboard at ``/ui``, behind the same token or its session cookie: docs/dashboard.md).
    ``extra_routes`` are served by the layer above (the embedded cluster's aggregated APIs); ``users`` are
    static bearer tokens with their users (the node agents' process)."""
    ctx = Context(
        store,
        registry or default_registry(),
        clock or WallClock(),
        logs_dir,
        anyio.CapacityLimiter(WATCH_THREADS),
        GroupCommit(store),
    )
    api = Api(ctx)
    app = Starlette(
        # extra routes (e.g. Kueue's visibility API) precede the generic /apis/{rest} route, which would shadow
        # them; the core group's /api/{rest} shadows none of them, and carries most requests, so it is tried first
        routes=[
            *binding_routes(ctx),  # pods/{name}/binding and namespaces/{ns}/bindings, before /api/{rest}
            Route("/api/{rest:path}", api.core, methods=METHODS),
            *extra_routes,
            *authorization_routes(ctx.registry),
            *metrics_routes(MetricsApi(store, ctx.clock)),
            *ui_routes(ctx),
            *routes(api),
            *([metrics_route(metrics)] if metrics is not None else []),
        ],
        exception_handlers={ApiError: _api_error, Exception: _internal_error, 404: _route_not_found},
    )
    contained = ContainErrors(app)
    hot = HotPath(contained, api.core, binding_endpoints(ctx))  # /api/... past Starlette's stack (hotpath.py)
    accounts = ServiceAccountTokens(store, token, registry_scope(ctx.registry))  # pods' tokens (auth.py)
    return DashboardLogin(BearerAuth(hot, token, accounts, users), contained, token)


async def _route_not_found(request: Request, exc: Exception) -> Response:
    return error_response(_not_found())


__all__ = ["GANGPLANE_VERSION", "Api", "create_app", "pick_handler"]
