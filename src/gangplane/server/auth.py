"""Bearer-token authentication as plain ASGI middleware (so streaming responses pass through untouched).

Only the health endpoints and ``/version`` answer without a token, as they do for anonymous users on a
Kubernetes API server. Three kinds of token are accepted:

- the admin token of the kubeconfig (compared in constant time): the cluster admin;
- static tokens the control plane issued at start with a fixed user (kube-apiserver's
  ``--token-auth-file``): the node agents' process (``cluster/agents.py``);
- a pod's service-account token (``api/serviceaccount_token.py``), valid while its signature holds and the
  pod (and ServiceAccount, when it had one) it is bound to still exist with the same uid — deleting either
  revokes it, as for a Kubernetes bound token. Its requests are authorized by ``authz.allowed`` (403 when
  refused).

The request's user is left in the ASGI scope under ``authz.USER_SCOPE_KEY`` for the review endpoints.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from typing import Any

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from gangplane.api import serviceaccount_token as sat
from gangplane.errors import ApiError, NotFound, Unauthorized
from gangplane.server.authz import ADMIN, USER_SCOPE_KEY, ScopeLookup, allowed, denial, request_attributes
from gangplane.store.base import Store
from gangplane.store.catalog import PODS, SERVICE_ACCOUNTS

PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})


def bearer_token(headers: list[tuple[bytes, bytes]]) -> str | None:
    for key, value in headers:
        if key.lower() == b"authorization":
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            return credentials.strip() if scheme.lower() == "bearer" else None
    return None


def authorized(expected: str, presented: str | None) -> bool:
    return presented is not None and hmac.compare_digest(expected.encode(), presented.encode())


class ServiceAccountTokens:
    """Checks pods' service-account tokens against the signing key and the objects they are bound to."""

    def __init__(self, store: Store, admin_token: str, scope: ScopeLookup) -> None:
        self.store, self.scope = store, scope
        self._key = sat.signing_key(admin_token)

    def _uid(self, rt: Any, namespace: str, name: str) -> str | None:
        try:
            return str(self.store.get(rt, namespace, name)["metadata"].get("uid") or "")
        except NotFound:
            return None

    def bound(self, binding: sat.Binding) -> bool:
        """The pod (and the ServiceAccount, if the token names its uid) still exist as they were."""
        if self._uid(PODS, binding.namespace, binding.pod_name) != binding.pod_uid:
            return False
        account = binding.sa_uid and self._uid(SERVICE_ACCOUNTS, binding.namespace, binding.service_account)
        return not binding.sa_uid or account == binding.sa_uid

    async def user(self, token: str) -> dict[str, Any] | None:
        binding = sat.verify(self._key, token)
        if binding is None or not await anyio.to_thread.run_sync(self.bound, binding):
            return None
        return sat.user_info(binding)


class BearerAuth:
    """Rejects every request outside ``PUBLIC_PATHS`` without a valid ``Authorization: Bearer <token>``
    (401), and a service account's request outside its policy (403)."""

    def __init__(
        self,
        app: ASGIApp,
        token: str,
        accounts: ServiceAccountTokens | None = None,
        users: Mapping[str, dict[str, Any]] | None = None,
    ) -> None:
        if not token or "" in (users or {}):
            raise ValueError("an empty token would let everyone in")
        self.app = app
        self.token = token
        self.accounts = accounts
        self.users = dict(users or {})  # static tokens (kube-apiserver's --token-auth-file) -> user info

    def _static_user(self, presented: str) -> dict[str, Any] | None:
        return next((user for token, user in self.users.items() if authorized(token, presented)), None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        presented = bearer_token(scope["headers"])
        if authorized(self.token, presented):
            scope[USER_SCOPE_KEY] = ADMIN
            await self.app(scope, receive, send)
        elif presented is not None and (user := self._static_user(presented)) is not None:
            scope[USER_SCOPE_KEY] = user  # only system:masters users are issued (the node agents')
            await self.app(scope, receive, send)
        elif self.accounts is None or presented is None:
            await _reject(send, Unauthorized("Unauthorized"))
        else:
            await self._as_service_account(self.accounts, presented, scope, receive, send)

    async def _as_service_account(
        self, accounts: ServiceAccountTokens, token: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        user = await accounts.user(token)
        if user is None:
            await _reject(send, Unauthorized("Unauthorized"))
            return
        query = scope.get("query_string", b"").decode("latin-1")
        attrs = request_attributes(scope["method"], scope["path"], query)
        if not allowed(user, attrs, accounts.scope):
            await _reject(send, denial(user, attrs))
            return
        scope[USER_SCOPE_KEY] = user
        await self.app(scope, receive, send)


async def _reject(send: Send, error: ApiError) -> None:
    body = json.dumps(error.status()).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": error.code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


__all__ = ["PUBLIC_PATHS", "BearerAuth", "ServiceAccountTokens", "authorized", "bearer_token"]
