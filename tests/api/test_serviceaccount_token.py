"""Service-account tokens: what is signed verifies, anything altered or signed otherwise does not."""

from __future__ import annotations

import base64
import json

from gangplane.api import serviceaccount_token as sat

BOUND = sat.Binding("team-a", "trainer", "job-0", "uid-pod", "uid-sa")
KEY = sat.signing_key("admin-token")


def test_a_token_verifies_to_its_binding_and_names_the_user() -> None:
    token = sat.issue(KEY, BOUND, 1_700_000_000, "jti-1")
    assert sat.verify(KEY, token) == BOUND
    assert BOUND.username == "system:serviceaccount:team-a:trainer"
    info = sat.user_info(BOUND)
    assert "system:serviceaccounts:team-a" in info["groups"]
    assert info["extra"]["authentication.kubernetes.io/pod-uid"] == ["uid-pod"]


def test_the_key_is_derived_from_but_never_equal_to_the_admin_token() -> None:
    assert KEY != b"admin-token" and len(KEY) == 32
    assert sat.signing_key("other-admin-token") != KEY


def _forged(token: str, **changes: object) -> str:
    head, body, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["kubernetes.io"].update(changes)
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{forged}.{signature}"


def test_altered_foreign_or_malformed_tokens_do_not_verify() -> None:
    token = sat.issue(KEY, BOUND, 1_700_000_000, "jti-1")
    assert sat.verify(KEY, _forged(token, namespace="kube-system")) is None
    assert sat.verify(sat.signing_key("another-cluster"), token) is None
    unsigned = token.rsplit(".", 1)[0] + "."
    for bad in ("", "a.b", "a.b.c", unsigned, "admin-token", token + "x"):
        assert sat.verify(KEY, bad) is None


def test_tokens_for_one_binding_differ_by_jti() -> None:
    assert sat.issue(KEY, BOUND, 0, "a") != sat.issue(KEY, BOUND, 0, "b")
