"""Asking the app that serves the dashboard for one of its own JSON documents, without a network hop.

The Kueue visibility API is served by the layer above (cluster/visibility.py) as routes of this same app;
calling it through ASGI keeps the dashboard a client of that API rather than of the Kueue internals.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.types import Message

VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta1"


async def get_json(request: Request, path: str) -> tuple[int, Any]:
    """GET ``path`` from the app handling ``request`` (inside any auth wrapper): status and decoded body."""
    app = request.scope["app"]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"accept", b"application/json")],
        "client": None,
        "server": None,
        "app": app,
    }
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = next((int(m["status"]) for m in sent if m["type"] == "http.response.start"), 500)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    try:
        return status, json.loads(body) if body else None
    except ValueError:
        return status, None


async def pending_by_cluster_queue(
    request: Request, names: Sequence[str]
) -> dict[str, list[dict[str, Any]]] | None:
    """Each ClusterQueue's pending workloads in queue order from the visibility API; None when this server
    has no visibility API (the API server alone, without the embedded Kueue)."""
    found: dict[str, list[dict[str, Any]]] = {}
    served = False
    for name in names:
        status, body = await get_json(
            request, f"{VISIBILITY}/clusterqueues/{quote(name, safe='')}/pendingworkloads"
        )
        if status == 200 and isinstance(body, dict):
            served = True
            found[name] = list(body.get("items") or [])
        elif (
            status == 404
            and isinstance(body, dict)
            and (body.get("details") or {}).get("kind") == "clusterqueues"
        ):
            served = True  # Kueue has not seen this ClusterQueue yet
            found[name] = []
    return found if served or not names else None


__all__ = ["VISIBILITY", "get_json", "pending_by_cluster_queue"]
