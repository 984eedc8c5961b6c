"""The dashboard's login: the API server's bearer token, once, in exchange for a session cookie.

Every ``/ui`` path is served only with the cookie (``Secure; HttpOnly; SameSite=Strict; Path=/ui``) or the
bearer token itself; the cookie holds an HMAC of the token, never the token, so it is worthless against the
API. Without either the answer is 401 with the login form and nothing else. The login form posts the token
(``gangplane dashboard`` opens ``/ui/login#token=...``: a URL fragment never reaches a server or its logs).
Only the login page and the static assets (vendored htmx, the stylesheet: no cluster data) are public. Every
other path goes on to the API's own bearer-token check untouched.
"""

from __future__ import annotations

import hashlib
import hmac
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gangplane.server.auth import authorized, bearer_token

PREFIX = "/ui"
COOKIE = "gangplane_session"
LOGIN = f"{PREFIX}/login"
STATIC = f"{PREFIX}/static/"
MAX_FORM = 4096
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        b"frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


def session_value(token: str) -> str:
    """The cookie's value: a keyed digest of the token (the token cannot be recovered from it)."""
    return hmac.new(token.encode(), b"gangplane dashboard session v1", hashlib.sha256).hexdigest()


def session_cookie(headers: list[tuple[bytes, bytes]]) -> str | None:
    for key, value in headers:
        if key.lower() == b"cookie":
            jar: SimpleCookie = SimpleCookie()
            jar.load(value.decode("latin-1"))
            if COOKIE in jar:
                return jar[COOKIE].value
    return None


def is_ui_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def login_page(message: str = "") -> bytes:
    """The login form (self-contained: it must render before any authorized request)."""
    note = f'<p class="error">{message}</p>' if message else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>gangplane · sign in</title>"
        f'<link rel=stylesheet href="{STATIC}ui.css"><script type=module src="{STATIC}login.js"></script></head>'
        '<body class="login"><form method=post action="/ui/login" id=login><h1>gangplane</h1>'
        "<p>Paste the control plane's token (<code>gangplane dashboard</code> prints a link that signs in).</p>"
        f'{note}<input type=password name=token autocomplete=off autofocus aria-label=token placeholder="token">'
        "<button type=submit>Sign in</button></form></body></html>"
    ).encode()


class DashboardLogin:
    """ASGI wrapper: ``/ui`` behind the token or its session cookie; every other path to ``api``."""

    def __init__(self, api: ASGIApp, ui: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("an empty token would let everyone in")
        self.api, self.ui, self.token = api, ui, token
        self.session = session_value(token)

    def _authorized(self, scope: Scope) -> bool:
        headers = scope["headers"]
        cookie = session_cookie(headers)
        return authorized(self.token, bearer_token(headers)) or authorized(self.session, cookie)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not is_ui_path(path):
            await self.api(scope, receive, send)
        elif path == LOGIN and scope["method"] == "POST":
            await self._login(receive, send)
        elif path.startswith(STATIC) or self._authorized(scope):
            await self.ui(scope, receive, send)
        else:
            await _send(send, 401, login_page(), "text/html; charset=utf-8")

    async def _login(self, receive: Receive, send: Send) -> None:
        body = await _read_body(receive)
        presented = (
            (parse_qs(body.decode("latin-1")).get("token") or [""])[0].strip() if body is not None else ""
        )
        if not authorized(self.token, presented or None):
            await _send(
                send, 401, login_page("That token is not this control plane's."), "text/html; charset=utf-8"
            )
            return
        cookie = f"{COOKIE}={self.session}; Path={PREFIX}; Secure; HttpOnly; SameSite=Strict"
        await _send(
            send,
            303,
            b"",
            "text/plain",
            [(b"location", f"{PREFIX}/".encode()), (b"set-cookie", cookie.encode())],
        )


async def _read_body(receive: Receive) -> bytes | None:
    """The request body, or None if it is larger than a login form can be."""
    body = b""
    while True:
        message: Message = await receive()
        body += bytes(message.get("body", b""))
        if len(body) > MAX_FORM:
            return None
        if not message.get("more_body"):
            return body


async def _send(
    send: Send, status: int, body: bytes, content_type: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        *SECURITY_HEADERS,
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def logout_cookie() -> str:
    return f"{COOKIE}=; Path={PREFIX}; Secure; HttpOnly; SameSite=Strict; Max-Age=0"


__all__ = [
    "COOKIE",
    "LOGIN",
    "PREFIX",
    "SECURITY_HEADERS",
    "DashboardLogin",
    "is_ui_path",
    "login_page",
    "logout_cookie",
    "session_cookie",
    "session_value",
]
