"""``gangplane dashboard``: the control plane's web dashboard (docs/dashboard.md), signed in.

Prints (and, unless ``--no-open``, opens) ``<server>/ui/login#token=<token>``: the token travels in the URL
fragment, which the browser never sends to a server; the login page posts it once and keeps only a session
cookie. The server and token come from the kubeconfig (the embedded control plane's by default).
"""

from __future__ import annotations

import webbrowser
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import typer
import yaml

from gangplane.cli.connect import ContextOption, KubeconfigOption, err, fail, out
from gangplane.server import lifecycle

NoOpenOption = Annotated[bool, typer.Option("--no-open", help="Only print the URL; do not start a browser.")]


def dashboard_url(server: str, token: str) -> str:
    return f"{server.rstrip('/')}/ui/login#token={quote(token, safe='')}"


def _named(entries: Any, name: str) -> Mapping[str, Any]:
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    return {}


def server_and_token(config: Mapping[str, Any], context: str | None) -> tuple[str, str]:
    """The server URL and bearer token of ``context`` (default: the current one); ValueError naming what
    is missing."""
    name = context or config.get("current-context") or ""
    ctx = _named(config.get("contexts"), name).get("context") or {}
    if not ctx:
        raise ValueError(f"context {name!r} not found")
    server = (_named(config.get("clusters"), ctx.get("cluster", "")).get("cluster") or {}).get("server")
    token = (_named(config.get("users"), ctx.get("user", "")).get("user") or {}).get("token")
    if not server:
        raise ValueError(f"context {name!r} names no cluster server")
    if not token:
        raise ValueError(f"context {name!r} has no bearer token (the dashboard signs in with the API token)")
    return str(server), str(token)


def dashboard(
    kubeconfig: KubeconfigOption = None, context: ContextOption = None, no_open: NoOpenOption = False
) -> None:
    """Open the web dashboard (TrainJobs, nodes, queues, timeline; live) signed in with the API token."""
    path = kubeconfig or lifecycle.default_state_dir() / "kubeconfig"
    if kubeconfig is None and not lifecycle.status(lifecycle.default_state_dir()).running:
        raise fail("the control plane is not running; start it with `gangplane up`")
    try:
        server, token = server_and_token(yaml.safe_load(Path(path).read_text()) or {}, context)
    except (OSError, yaml.YAMLError, ValueError, AttributeError) as exc:
        raise fail(f"kubeconfig {path}: {exc}") from None
    url = dashboard_url(server, token)
    out.print(f"dashboard: {url}")
    err.print("(the link signs you in; keep it private. The certificate is the control plane's own: "
              f"{lifecycle.default_state_dir() / 'tls.crt'} for the embedded one.)")  # fmt: skip
    if not no_open:
        webbrowser.open(url)


def register(app: typer.Typer) -> None:
    app.command("dashboard")(dashboard)


__all__ = ["dashboard", "dashboard_url", "register", "server_and_token"]
