"""Who may do what: ``SelfSubjectAccessReview``, ``SelfSubjectRulesReview`` (``kubectl auth can-i``, with and
without ``--list``) and ``SelfSubjectReview`` (``kubectl auth whoami``).

The embedded control plane has one identity: whoever holds the bearer token in its kubeconfig is the cluster
admin, as a kind/minikube admin kubeconfig is (group ``system:masters``). So every review is answered
"allowed", every rule is ``*``; the answers are computed here (pure), the routes only read and write JSON.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gangplane.server import protowire
from gangplane.server.handlers import json_response
from gangplane.server.query import BadRequest

ADMIN = {"username": "gangplane-admin", "groups": ["system:masters", "system:authenticated"]}
_REASON = "gangplane: the token holder is the cluster admin"
_AUTHZ = "authorization.k8s.io/v1"
_AUTHN = "authentication.k8s.io/v1"


def _answer(review: dict[str, Any], api_version: str, kind: str, status: dict[str, Any]) -> dict[str, Any]:
    if review.get("kind") not in (None, kind):
        raise BadRequest(f"expected a {kind}, got {review.get('kind')}")
    meta = {k: v for k, v in (review.get("metadata") or {}).items() if k in ("name", "generateName")}
    return {"kind": kind, "apiVersion": api_version, "metadata": meta, "spec": review.get("spec") or {},
            "status": status}  # fmt: skip


def access_review(review: dict[str, Any]) -> dict[str, Any]:
    """``kubectl auth can-i VERB RESOURCE``: allowed, whatever the resource or non-resource attributes."""
    return _answer(review, _AUTHZ, "SelfSubjectAccessReview", {"allowed": True, "reason": _REASON})


def rules_review(review: dict[str, Any]) -> dict[str, Any]:
    """``kubectl auth can-i --list``: every verb on every resource and URL, in the review's namespace."""
    status = {
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        "incomplete": False,
    }
    return _answer(review, _AUTHZ, "SelfSubjectRulesReview", status)


def subject_review(review: dict[str, Any]) -> dict[str, Any]:
    """``kubectl auth whoami``."""
    answer = _answer(review, _AUTHN, "SelfSubjectReview", {"userInfo": dict(ADMIN)})
    del answer["spec"]
    return answer


async def _body(request: Request) -> dict[str, Any]:
    """The review as JSON; from kubectl's protobuf body only its kind, as no answer depends on the spec."""
    raw = await request.body()
    if protowire.is_envelope(raw):
        try:
            return {"kind": protowire.envelope(raw).kind}
        except protowire.WireError as exc:
            raise BadRequest(f"the request body is not a valid protobuf envelope: {exc}") from None
    try:
        body = json.loads(raw or b"{}")
    except ValueError as exc:
        raise BadRequest(f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest("the request body must be an object")
    return body


def _route(path: str, answer: Any) -> Route:
    async def serve(request: Request) -> Response:
        return json_response(answer(await _body(request)), status=201)

    return Route(path, serve, methods=["POST"])


def authorization_routes() -> list[Route]:
    return [
        _route(f"/apis/{_AUTHZ}/selfsubjectaccessreviews", access_review),
        _route(f"/apis/{_AUTHZ}/selfsubjectrulesreviews", rules_review),
        _route(f"/apis/{_AUTHN}/selfsubjectreviews", subject_review),
    ]


__all__ = ["ADMIN", "access_review", "authorization_routes", "rules_review", "subject_review"]
