"""Service-account tokens bound to a pod, as pure functions: issue, verify, and the identity they carry.

A token is a JWT (HS256) with the claims of a Kubernetes bound service-account token (``sub``
``system:serviceaccount:<ns>:<name>``, the ``kubernetes.io`` claim naming the namespace, the pod and the
ServiceAccount with their uids; ``pkg/serviceaccount/claims.go``). Kubernetes signs with an asymmetric key
so others can verify; here only the API server verifies, so an HMAC key suffices. The key is derived from the
admin token (HMAC of a fixed label), so it exists wherever the admin token does, is never the admin token, and
cannot be turned back into it; rotating the admin token revokes every service-account token.

``verify`` checks the signature only; the API server then checks that the bound pod (and ServiceAccount,
when the token names its uid) still exist with the same uids, so deleting either revokes the token, as a
bound token's validator does.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCE = ISSUER  # the audience the API server accepts (kube-apiserver's default --api-audiences)
USER_PREFIX = "system:serviceaccount:"
_HEADER = {"alg": "HS256", "typ": "JWT"}
_KEY_LABEL = b"gangplane service-account token signing key v1"


def signing_key(admin_token: str) -> bytes:
    """The key service-account tokens are signed with, derived from (and never equal to) the admin token."""
    return hmac.new(admin_token.encode(), _KEY_LABEL, hashlib.sha256).digest()


@dataclass(frozen=True, slots=True)
class Binding:
    """Whom a token speaks for: a ServiceAccount, through one pod (``sa_uid`` empty: the account had no
    object when the token was issued, e.g. the implicit ``default``)."""

    namespace: str
    service_account: str
    pod_name: str
    pod_uid: str
    sa_uid: str = ""

    @property
    def username(self) -> str:
        return f"{USER_PREFIX}{self.namespace}:{self.service_account}"


def user_info(binding: Binding) -> dict[str, Any]:
    """The ``UserInfo`` kube-apiserver's authenticator gives a bound token (``serviceaccount/util.go``)."""
    return {
        "username": binding.username,
        "uid": binding.sa_uid,
        "groups": [
            "system:serviceaccounts",
            f"system:serviceaccounts:{binding.namespace}",
            "system:authenticated",
        ],
        "extra": {
            "authentication.kubernetes.io/pod-name": [binding.pod_name],
            "authentication.kubernetes.io/pod-uid": [binding.pod_uid],
        },
    }


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(key: bytes, signing_input: str) -> str:
    return _b64(hmac.new(key, signing_input.encode(), hashlib.sha256).digest())


def claims(binding: Binding, issued_at: float, jti: str, audience: str = API_AUDIENCE) -> dict[str, Any]:
    return {
        "aud": [audience],
        "iss": ISSUER,
        "iat": int(issued_at),
        "nbf": int(issued_at),
        "jti": jti,
        "sub": binding.username,
        "kubernetes.io": {
            "namespace": binding.namespace,
            "pod": {"name": binding.pod_name, "uid": binding.pod_uid},
            "serviceaccount": {"name": binding.service_account, "uid": binding.sa_uid},
        },
    }


def issue(key: bytes, binding: Binding, issued_at: float, jti: str, audience: str = API_AUDIENCE) -> str:
    """A signed token for ``binding`` meant for ``audience`` (a projected ``serviceAccountToken`` may name
    another, e.g. a vault's; such a token is refused by this API server)."""
    head = _b64(json.dumps(_HEADER, separators=(",", ":")).encode())
    body = _b64(json.dumps(claims(binding, issued_at, jti, audience), separators=(",", ":")).encode())
    return f"{head}.{body}.{_sign(key, f'{head}.{body}')}"


def token_id(key: bytes, binding: Binding, audience: str = API_AUDIENCE) -> str:
    """A ``jti`` that is the same for one pod and audience (so a rewritten token volume is unchanged) and
    cannot be computed without the key."""
    message = f"{binding.namespace}/{binding.pod_name}/{binding.pod_uid}/{binding.sa_uid}/{audience}"
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()[:32]


def verify(key: bytes, token: str, audience: str = API_AUDIENCE) -> Binding | None:
    """The binding of a token signed with ``key`` for ``audience``; None for anything else (never
    raises)."""
    parts = token.split(".")
    if len(parts) != 3 or not hmac.compare_digest(_sign(key, f"{parts[0]}.{parts[1]}"), parts[2]):
        return None
    try:
        header, body = json.loads(_unb64(parts[0])), json.loads(_unb64(parts[1]))
    except (ValueError, binascii.Error):
        return None
    if header != _HEADER or not isinstance(body, dict) or body.get("iss") != ISSUER:
        return None
    if audience not in (body.get("aud") or []):
        return None
    return _binding(body.get("kubernetes.io"))


def _binding(claim: Any) -> Binding | None:
    if not isinstance(claim, Mapping):
        return None
    pod, account = claim.get("pod") or {}, claim.get("serviceaccount") or {}
    values = (
        claim.get("namespace"),
        account.get("name"),
        pod.get("name"),
        pod.get("uid"),
        account.get("uid"),
    )
    if not all(isinstance(v, str) for v in values) or not all(values[:4]):
        return None
    namespace, name, pod_name, pod_uid, sa_uid = (str(v) for v in values)
    return Binding(namespace, name, pod_name, pod_uid, sa_uid)
