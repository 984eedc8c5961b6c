"""``gangplane dashboard``: the signed-in URL from the kubeconfig, and that it really signs in over HTTPS."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urlencode

import pytest
from cli_cluster import embedded_cluster

from gangplane.cli.dashboard import dashboard_url, server_and_token

CONFIG = {
    "current-context": "a",
    "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u"}},
                 {"name": "anon", "context": {"cluster": "c", "user": "nobody"}}],
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:7443"}}],
    "users": [{"name": "u", "user": {"token": "t/k+n"}}, {"name": "nobody", "user": {}}],
}  # fmt: skip


def test_url_carries_the_token_in_the_fragment_only() -> None:
    server, token = server_and_token(CONFIG, None)
    url = dashboard_url(server, token)
    assert url == "https://127.0.0.1:7443/ui/login#token=t%2Fk%2Bn"


@pytest.mark.parametrize(("context", "message"), [("anon", "no bearer token"), ("gone", "not found")])
def test_contexts_without_what_the_dashboard_needs_are_named(context: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        server_and_token(CONFIG, context)


def test_the_printed_link_signs_in_over_https(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with embedded_cluster(tmp_path) as cli:
        monkeypatch.setenv("GANGPLANE_HOME", str(tmp_path))
        out = cli.ok("dashboard", "--kubeconfig", str(tmp_path / "kubeconfig"), "--no-open")
        url = out.split("dashboard: ", 1)[1].strip()
        base, token = url.split("/ui/login#token=")
        context = ssl.create_default_context(cafile=str(tmp_path / "tls.crt"))
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}/ui/jobs", context=context, timeout=10)
        assert refused.value.code == 401
        refused.value.close()
        form = urlencode({"token": unquote(token)}).encode()
        opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context), _NoRedirect())
        with pytest.raises(urllib.error.HTTPError) as signed_in:
            opener.open(urllib.request.Request(f"{base}/ui/login", data=form), timeout=10)
        assert signed_in.value.code == 303 and "HttpOnly" in signed_in.value.headers["set-cookie"]
        signed_in.value.close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Stops at the 303 so its ``Set-Cookie`` can be read (urllib raises it as an HTTPError)."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None
