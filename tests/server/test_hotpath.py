"""The core group's fast path (``server/hotpath.py``): it must route exactly as the Starlette app's routes do
(the binding routes first, then ``/api/{rest}``) and answer errors as the app's handlers do."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from gangplane.errors import Conflict
from gangplane.server.hotpath import HotPath, binding_params


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/v1/namespaces/ns/pods/p/binding", {"namespace": "ns", "name": "p"}),
        ("/api/v1/namespaces/ns/bindings", {"namespace": "ns"}),
        ("/api/v1/namespaces//bindings", None),
        ("/api/v1/namespaces/ns/pods//binding", None),
        ("/api/v1/namespaces/ns/pods/p/binding/", None),
        ("/api/v1/namespaces/ns/bindings/", None),
        ("/api/v1/namespaces/ns/pods/p/status", None),
        ("/api/v2/namespaces/ns/bindings", None),
        ("/apis/v1/namespaces/ns/bindings", None),
    ],
)
def test_binding_paths_match_as_the_starlette_routes(path: str, params: dict[str, str] | None) -> None:
    assert binding_params(path) == params


class Recorder:
    """Endpoints and a fallback app that record which of them answered, with what path parameters."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def endpoint(self, name: str) -> Any:
        async def answer(request: Request) -> Response:
            self.calls.append((name, dict(request.path_params)))
            return Response(b"{}", 200, media_type="application/json")

        return answer

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls.append(("app", {}))
        await Response(b"", 204)(scope, receive, send)


def _call(app: Any, method: str, path: str, kind: str = "http") -> list[Message]:
    sent: list[Message] = []
    scope = {"type": kind, "method": method, "path": path, "headers": [], "query_string": b""}

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


@pytest.mark.parametrize(
    ("method", "path", "answered_by", "params"),
    [
        ("POST", "/api/v1/namespaces/d/pods", "core", {"rest": "v1/namespaces/d/pods"}),
        ("GET", "/api/v1/nodes/n", "core", {"rest": "v1/nodes/n"}),
        ("PATCH", "/api/v1/nodes/n/status", "core", {"rest": "v1/nodes/n/status"}),
        ("GET", "/api/", "core", {"rest": ""}),
        ("POST", "/api/v1/namespaces/d/pods/p/binding", "pod", {"namespace": "d", "name": "p"}),
        ("POST", "/api/v1/namespaces/d/bindings", "collection", {"namespace": "d"}),
        ("GET", "/api/v1/namespaces/d/pods/p/binding", "core", {"rest": "v1/namespaces/d/pods/p/binding"}),
        ("GET", "/api", "app", {}),
        ("GET", "/apis/batch/v1/jobs", "app", {}),
        ("HEAD", "/api/v1/nodes", "app", {}),
        ("OPTIONS", "/api/v1/nodes", "app", {}),
        ("GET", "/healthz", "app", {}),
    ],
)
def test_requests_reach_the_endpoint_the_app_would_route_them_to(
    method: str, path: str, answered_by: str, params: dict[str, str]
) -> None:
    recorder = Recorder()
    bindings = {"pod": recorder.endpoint("pod"), "collection": recorder.endpoint("collection")}
    _call(HotPath(recorder.app, recorder.endpoint("core"), bindings), method, path)
    assert recorder.calls == [(answered_by, params)]


def test_other_scope_types_go_to_the_app() -> None:
    recorder = Recorder()
    hot = HotPath(recorder.app, recorder.endpoint("core"), {})
    _call(hot, "GET", "/api/v1/pods", kind="websocket")
    assert recorder.calls == [("app", {})]


def _failing(exc: Exception) -> HotPath:
    async def endpoint(request: Request) -> Response:
        raise exc

    return HotPath(Recorder().app, endpoint, {})


def _status(sent: list[Message]) -> tuple[int, dict[str, Any]]:
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    return sent[0]["status"], json.loads(sent[1]["body"])


def test_an_api_error_is_its_status() -> None:
    status, body = _status(
        _call(_failing(Conflict("already bound", kind="Pod", name="p")), "POST", "/api/v1/x")
    )
    assert (status, body["reason"], body["message"]) == (409, "Conflict", "already bound")


def test_an_unexpected_error_is_one_500_status_and_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        status, body = _status(_call(_failing(RuntimeError("x" * 10_000)), "GET", "/api/v1/nodes"))
    assert (status, body["reason"]) == (500, "InternalError")
    logged = [r for r in caplog.records if r.name == "gangplane.server.app"]
    assert len(logged) == 1 and logged[0].exc_info is None and len(logged[0].getMessage()) < 1000


def test_an_error_after_the_answer_started_is_logged_and_sends_nothing_more(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class HalfSent(Response):
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            raise Conflict("too late")

    async def endpoint(request: Request) -> Response:
        return HalfSent()

    with caplog.at_level(logging.ERROR):
        sent = _call(HotPath(Recorder().app, endpoint, {}), "GET", "/api/v1/nodes")
    assert [m["type"] for m in sent] == ["http.response.start"]
    assert len([r for r in caplog.records if r.name == "gangplane.server.app"]) == 1
