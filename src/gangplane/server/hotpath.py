"""The core group's requests (``/api/...``: pods, nodes, bindings, events, ...) straight to their handlers.

Nearly all of the API server's traffic is single-object requests on the core group, and Starlette's stack in
front of them (its router matching every route in turn, two exception middlewares, and an exception wrapper
around each of their ``send`` calls) cost about a tenth of a pod create's server CPU. ``HotPath`` routes
these requests itself, exactly as the Starlette app would (the binding routes first, then ``/api/{rest}``),
and answers errors as the app's exception handlers do; everything else goes on to the app.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gangplane.errors import ApiError
from gangplane.server.handlers import error_response

Endpoint = Callable[[Request], Awaitable[Response]]
PREFIX = "/api/"
# the methods ``/api/{rest}`` is routed for; others (HEAD, OPTIONS) get the app's own answer
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})

log = logging.getLogger("gangplane.server.app")  # one logger for unexpected errors, wherever caught


def binding_params(path: str) -> dict[str, str] | None:
    """The path parameters of ``/api/v1/namespaces/{namespace}/pods/{name}/binding`` or
    ``/api/v1/namespaces/{namespace}/bindings`` (None for any other path), as Starlette's routes match them."""
    parts = path.split("/")
    if len(parts) < 6 or parts[1:4] != ["api", "v1", "namespaces"] or not parts[4]:
        return None
    if len(parts) == 6 and parts[5] == "bindings":
        return {"namespace": parts[4]}
    if len(parts) == 8 and parts[5] == "pods" and parts[6] and parts[7] == "binding":
        return {"namespace": parts[4], "name": parts[6]}
    return None


class HotPath:
    """ASGI: ``/api/...`` requests of the routed methods to ``core`` (or a binding endpoint); the rest to
    ``app``. ``bindings`` maps "pod" and "collection" to the two binding endpoints."""

    def __init__(self, app: ASGIApp, core: Endpoint, bindings: Mapping[str, Endpoint]) -> None:
        self.app, self.core, self.bindings = app, core, bindings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or scope["method"] not in METHODS or not path.startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        endpoint, params = self.core, {"rest": path[len(PREFIX) :]}
        bound = binding_params(path) if scope["method"] == "POST" else None
        if bound is not None:
            endpoint, params = self.bindings["pod" if "name" in bound else "collection"], bound
        scope["path_params"] = params
        await _answer(endpoint, scope, receive, send)


async def _answer(endpoint: Endpoint, scope: Scope, receive: Receive, send: Send) -> None:
    """Run ``endpoint``; an ``ApiError`` is its ``Status``, anything else one log line and a 500 ``Status``
    (only if nothing was sent yet), as ``app.ContainErrors`` and the app's handlers answer."""
    tracked = TrackedSend(send)
    try:
        response = await endpoint(Request(scope, receive, send))
        await response(scope, receive, tracked)
    except Exception as exc:
        if isinstance(exc, ApiError) and not tracked.started:
            await error_response(exc)(scope, receive, send)
            return
        log_unexpected(scope, exc)
        if not tracked.started:
            await error_response(internal_error(exc))(scope, receive, send)


class TrackedSend:
    """An ASGI ``send`` that notes whether the answer has started (an error after that can only be logged)."""

    __slots__ = ("send", "started")

    def __init__(self, send: Send) -> None:
        self.send, self.started = send, False

    async def __call__(self, message: Message) -> None:
        self.started = self.started or message["type"] == "http.response.start"
        await self.send(message)


def internal_error(exc: BaseException) -> ApiError:
    """The 500 ``Status`` an unexpected exception is answered with."""
    return ApiError(f"internal error: {type(exc).__name__}: {_short(exc)}")


def log_unexpected(scope: Scope, exc: BaseException) -> None:
    """One line in the server log, not a traceback."""
    log.error(
        "internal error on %s %s: %s: %s",
        scope.get("method"),
        scope.get("path"),
        type(exc).__name__,
        _short(exc),
    )


def _short(exc: BaseException) -> str:
    return str(exc)[:500]


__all__ = ["HotPath", "TrackedSend", "binding_params", "internal_error", "log_unexpected"]
