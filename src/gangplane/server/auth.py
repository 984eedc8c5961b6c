"""Bearer-token authentication as plain ASGI middleware (so streaming responses pass through untouched).

Only the health endpoints and ``/version`` answer without the token, as they do for anonymous users on a
Kubernetes API server. Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
import json

from starlette.types import ASGIApp, Receive, Scope, Send

from gangplane.errors import Unauthorized

PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})


def bearer_token(headers: list[tuple[bytes, bytes]]) -> str | None:
    for key, value in headers:
        if key.lower() == b"authorization":
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            return credentials.strip() if scheme.lower() == "bearer" else None
    return None


def authorized(expected: str, presented: str | None) -> bool:
    return presented is not None and hmac.compare_digest(expected.encode(), presented.encode())


class BearerAuth:
    """Rejects every request outside ``PUBLIC_PATHS`` that lacks ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("an empty token would let everyone in")
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        if authorized(self.token, bearer_token(scope["headers"])):
            await self.app(scope, receive, send)
            return
        await _reject(send)


async def _reject(send: Send) -> None:
    body = json.dumps(Unauthorized("Unauthorized").status()).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})


__all__ = ["PUBLIC_PATHS", "BearerAuth", "authorized", "bearer_token"]
