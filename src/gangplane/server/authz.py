"""Who may do what: the authorization decision for each request, and the reviews that report it —
``SelfSubjectAccessReview``, ``SelfSubjectRulesReview`` (``kubectl auth can-i``, with and without ``--list``)
and ``SelfSubjectReview`` (``kubectl auth whoami``).

Two kinds of identity reach the server (``auth.py``):

- whoever holds the bearer token in the kubeconfig is the cluster admin, as a kind/minikube admin kubeconfig
  is (group ``system:masters``): everything is allowed;
- a pod's service-account token (``system:serviceaccount:<ns>:<name>``) gets a fixed policy, since RBAC
  objects (Roles, RoleBindings) are not served: every verb on every resource in its own namespace; read
  (``get``/``list``/``watch``) of cluster-scoped objects (Nodes, Namespaces, PriorityClasses, ClusterQueues,
  ...); the discovery and OpenAPI documents and ``/version``; its own reviews. Anything else — another
  namespace, a list across all namespaces, a write to a cluster-scoped object, ``/metrics``, ``/ui`` — is 403
  with kube-apiserver's message. That is roughly the ``edit`` role bound in its namespace plus a cluster-wide
  ``view`` of cluster-scoped kinds (docs/nodes.md).

Request attributes are parsed as kube-apiserver's ``RequestInfoFactory`` does; decisions and answers are pure,
the routes only read and write JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gangplane.api.serviceaccount_token import USER_PREFIX
from gangplane.errors import ApiError
from gangplane.server import protowire
from gangplane.server.handlers import json_response
from gangplane.server.query import BadRequest
from gangplane.server.resources import Registry, default_registry

ADMIN = {"username": "gangplane-admin", "groups": ["system:masters", "system:authenticated"]}
USER_SCOPE_KEY = "gangplane.user"  # where auth.py leaves the request's user in the ASGI scope
_REASON = "gangplane: the token holder is the cluster admin"
_AUTHZ = "authorization.k8s.io/v1"
_AUTHN = "authentication.k8s.io/v1"
_READ = ("get", "list", "watch")
_PUBLIC_PREFIXES = ("/api", "/apis", "/openapi/", "/version", "/healthz", "/livez", "/readyz")
_PUBLIC_URLS = (
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi/*",
    "/readyz",
    "/version",
)
_SELF_REVIEWS = {("authorization.k8s.io", "selfsubjectaccessreviews"),
                 ("authorization.k8s.io", "selfsubjectrulesreviews"),
                 ("authentication.k8s.io", "selfsubjectreviews")}  # fmt: skip

# (group, version, plural) -> True when namespaced, False when cluster-scoped, None when not served.
ScopeLookup = Callable[[str, str, str], bool | None]


class Denied(ApiError):
    code = 403
    reason = "Forbidden"


@dataclass(frozen=True, slots=True)
class Attributes:
    """One request as an authorizer sees it (``k8s.io/apiserver/pkg/authorization/authorizer``)."""

    verb: str
    path: str
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def is_resource(self) -> bool:
        return bool(self.resource)


def _verb(method: str, named: bool, query: str) -> str:
    if method == "GET":
        watching = (parse_qs(query).get("watch") or ["false"])[0] in ("true", "1")
        return "watch" if watching else ("get" if named else "list")
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def request_attributes(method: str, path: str, query: str = "") -> Attributes:
    """What a request does: ``/api/v1/...`` and ``/apis/<group>/<version>/...`` are resource requests (a
    namespace segment, then resource, name, subresource); anything shorter or elsewhere is a path."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return Attributes(_verb(method, False, "").replace("list", "get"), path)
    namespace = rest[1] if rest[0] == "namespaces" and len(rest) > 1 else ""  # a Namespace is its own
    if namespace and len(rest) > 2 and rest[2] not in ("status", "finalize"):
        rest = rest[2:]
    resource, name, sub = rest[0], rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else ""
    verb = _verb(method, bool(name), query)
    return Attributes(verb, path, group, version, resource, sub, namespace, name)


def service_account_namespace(user: dict[str, Any]) -> str | None:
    """The namespace of a ``system:serviceaccount:<ns>:<name>`` user, else None."""
    username = str(user.get("username") or "")
    if not username.startswith(USER_PREFIX):
        return None
    return username[len(USER_PREFIX) :].partition(":")[0] or None


def allowed(user: dict[str, Any], attrs: Attributes, scope: ScopeLookup) -> bool:
    """The decision for ``user``; see the module docstring for the service-account policy."""
    if "system:masters" in (user.get("groups") or []):
        return True
    own = service_account_namespace(user)
    if own is None:
        return False
    if not attrs.is_resource:
        return attrs.verb == "get" and attrs.path.startswith(_PUBLIC_PREFIXES)
    if (attrs.group, attrs.resource) in _SELF_REVIEWS:
        return attrs.verb == "create"
    if (attrs.group, attrs.resource) == ("", "namespaces"):
        return attrs.verb in _READ  # not even its own Namespace may be changed
    namespaced = scope(attrs.group, attrs.version, attrs.resource)
    if attrs.namespace and namespaced is not False:  # a review may name a namespace for a cluster-scoped kind
        return attrs.namespace == own
    return attrs.verb in _READ and namespaced is False


def denial(user: dict[str, Any], attrs: Attributes) -> Denied:
    """kube-apiserver's ``Forbidden`` for a refused request (``endpoints/handlers/responsewriters``)."""
    who = f'User "{user.get("username")}"'
    if not attrs.is_resource:
        return Denied(f'forbidden: {who} cannot {attrs.verb} path "{attrs.path}"')
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    named = f' "{attrs.name}"' if attrs.name else ""
    message = (f'{resource}{named} is forbidden: {who} cannot {attrs.verb} resource "{resource}" '
               f'in API group "{attrs.group}" {where}')  # fmt: skip
    return Denied(message, kind=attrs.resource, name=attrs.name)


def registry_scope(registry: Registry) -> ScopeLookup:
    def lookup(group: str, version: str, plural: str) -> bool | None:
        served = registry.find(group, version, plural)
        return None if served is None else served.rt.namespaced

    return lookup


def _answer(review: dict[str, Any], api_version: str, kind: str, status: dict[str, Any]) -> dict[str, Any]:
    if review.get("kind") not in (None, kind):
        raise BadRequest(f"expected a {kind}, got {review.get('kind')}")
    meta = {k: v for k, v in (review.get("metadata") or {}).items() if k in ("name", "generateName")}
    return {"kind": kind, "apiVersion": api_version, "metadata": meta, "spec": review.get("spec") or {},
            "status": status}  # fmt: skip


def _review_attributes(spec: dict[str, Any]) -> Attributes:
    given = spec.get("resourceAttributes") or {}
    if given:
        fields = ("group", "version", "resource", "subresource", "namespace", "name")
        return Attributes(str(given.get("verb") or ""), "", **{f: str(given.get(f) or "") for f in fields})
    other = spec.get("nonResourceAttributes") or {}
    return Attributes(str(other.get("verb") or ""), str(other.get("path") or ""))


def access_review(
    review: dict[str, Any], user: dict[str, Any] | None = None, registry: Registry | None = None
) -> dict[str, Any]:
    """``kubectl auth can-i VERB RESOURCE``: the same decision a request would get (an unspecified version
    matches any served version)."""
    user = user or ADMIN
    attrs = _review_attributes(review.get("spec") or {})
    served = (registry or default_registry()).served

    def any_version(group: str, version: str, plural: str) -> bool | None:
        found = [s.rt.namespaced for s in served
                 if (s.rt.group, s.rt.plural) == (group, plural) and version in ("", s.rt.version)]  # fmt: skip
        return found[0] if found else None

    if allowed(user, attrs, any_version):
        reason = _REASON if service_account_namespace(user) is None else "gangplane: service-account policy"
        return _answer(review, _AUTHZ, "SelfSubjectAccessReview", {"allowed": True, "reason": reason})
    status = {"allowed": False, "reason": denial(user, attrs).message}
    return _answer(review, _AUTHZ, "SelfSubjectAccessReview", status)


def _service_account_rules(own: str, namespace: str, registry: Registry) -> list[dict[str, Any]]:
    rules = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}] if namespace == own else []
    by_group: dict[str, list[str]] = {}
    for s in registry.served:
        if not s.rt.namespaced and s.rt.plural not in by_group.setdefault(s.rt.group, []):
            by_group[s.rt.group].append(s.rt.plural)
    rules += [{"verbs": list(_READ), "apiGroups": [g], "resources": r} for g, r in by_group.items()]
    for group, plural in sorted(_SELF_REVIEWS):
        rules.append({"verbs": ["create"], "apiGroups": [group], "resources": [plural]})
    return rules


def rules_review(
    review: dict[str, Any], user: dict[str, Any] | None = None, registry: Registry | None = None
) -> dict[str, Any]:
    """``kubectl auth can-i --list``: the admin's ``*``, or the service-account policy in the review's
    namespace."""
    own = service_account_namespace(user or ADMIN)
    if own is None:
        status = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
        return _answer(review, _AUTHZ, "SelfSubjectRulesReview", status)
    namespace = str((review.get("spec") or {}).get("namespace") or "")
    status = {
        "resourceRules": _service_account_rules(own, namespace, registry or default_registry()),
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": list(_PUBLIC_URLS)}],
        "incomplete": False,
    }
    return _answer(review, _AUTHZ, "SelfSubjectRulesReview", status)


def subject_review(review: dict[str, Any], user: dict[str, Any] | None = None) -> dict[str, Any]:
    """``kubectl auth whoami``."""
    answer = _answer(review, _AUTHN, "SelfSubjectReview", {"userInfo": dict(user or ADMIN)})
    del answer["spec"]
    return answer


# Field numbers of k8s.io/api's authorization/v1 messages (generated.proto): a review's spec is field 2; an
# access review's spec holds resourceAttributes (1) or nonResourceAttributes (2); a rules review's spec its
# namespace (1).
_SPEC = 2
_ATTRIBUTES = {1: ("resourceAttributes", {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource",
                                          6: "subresource", 7: "name"}),
               2: ("nonResourceAttributes", {1: "path", 2: "verb"})}  # fmt: skip


def _strings(message: bytes, names: dict[int, str]) -> dict[str, str]:
    found = protowire.fields(message)
    return {name: v.decode() for number, name in names.items() for v in found.get(number, [])[-1:]
            if isinstance(v, bytes)}  # fmt: skip


def protobuf_review(raw: bytes) -> dict[str, Any]:
    """kubectl's protobuf review (``kubectl auth can-i`` sends one) as the JSON it stands for: its kind and
    the spec fields the answers read."""
    envelope = protowire.envelope(raw)
    review: dict[str, Any] = {"kind": envelope.kind}
    spec = [v for v in protowire.fields(envelope.raw).get(_SPEC, []) if isinstance(v, bytes)][-1:]
    if not spec:
        return review
    if envelope.kind == "SelfSubjectRulesReview":
        review["spec"] = _strings(spec[0], {1: "namespace"})
    elif envelope.kind == "SelfSubjectAccessReview":
        parts = protowire.fields(spec[0])
        review["spec"] = {name: _strings(v, fields) for number, (name, fields) in _ATTRIBUTES.items()
                          for v in parts.get(number, [])[-1:] if isinstance(v, bytes)}  # fmt: skip
    return review


async def _body(request: Request) -> dict[str, Any]:
    """The review as JSON, also from kubectl's protobuf body (``protobuf_review``)."""
    raw = await request.body()
    if protowire.is_envelope(raw):
        try:
            return protobuf_review(raw)
        except (protowire.WireError, UnicodeDecodeError) as exc:
            raise BadRequest(f"the request body is not a valid protobuf envelope: {exc}") from None
    try:
        body = json.loads(raw or b"{}")
    except ValueError as exc:
        raise BadRequest(f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest("the request body must be an object")
    return body


def _route(path: str, answer: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]) -> Route:
    async def serve(request: Request) -> Response:
        user = request.scope.get(USER_SCOPE_KEY) or ADMIN
        return json_response(answer(await _body(request), user), status=201)

    return Route(path, serve, methods=["POST"])


def authorization_routes(registry: Registry | None = None) -> list[Route]:
    served = registry or default_registry()
    return [
        _route(f"/apis/{_AUTHZ}/selfsubjectaccessreviews", lambda r, u: access_review(r, u, served)),
        _route(f"/apis/{_AUTHZ}/selfsubjectrulesreviews", lambda r, u: rules_review(r, u, served)),
        _route(f"/apis/{_AUTHN}/selfsubjectreviews", subject_review),
    ]


__all__ = [
    "ADMIN",
    "USER_SCOPE_KEY",
    "Attributes",
    "Denied",
    "access_review",
    "allowed",
    "authorization_routes",
    "denial",
    "registry_scope",
    "request_attributes",
    "rules_review",
    "service_account_namespace",
    "subject_review",
]
