"""What every kubectl-style command shares: the connection options, the store they open, and how failures
are reported (kubectl's wording, exit code 1, never a traceback).

By default the commands talk to the embedded control plane through the kubeconfig ``gangplane up`` writes
into the state directory; ``--kubeconfig``/``--context`` point them at any cluster.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from gangplane.cli.jsonpath import JsonPathError
from gangplane.cli.kinds import UnknownKind
from gangplane.cli.printers import OutputError
from gangplane.client.kube import KubeStore, Unreachable
from gangplane.client.kubeconfig import KubeconfigError
from gangplane.errors import ApiError, ManifestError
from gangplane.server.home import default_state_dir


@dataclass(frozen=True, slots=True)
class Lines:
    """stdout or stderr for plain lines. Not rich's Console: loading rich costs start-up time, and only the
    commands that draw (``run``'s live view) need it."""

    stderr: bool = False

    def print(self, text: str, *, markup: bool = False) -> None:  # same call as Console.print
        typer.echo(text, err=self.stderr)


out = Lines()
err = Lines(stderr=True)

KubeconfigOption = Annotated[
    Path | None,
    typer.Option(
        "--kubeconfig",
        help="Kubeconfig to use (default: the embedded control plane's, in $GANGPLANE_HOME).",
    ),
]
ContextOption = Annotated[str | None, typer.Option("--context", help="Kubeconfig context to use.")]
NamespaceOption = Annotated[
    str | None, typer.Option("--namespace", "-n", help="Namespace (default: the context's).")
]
AllNamespacesOption = Annotated[bool, typer.Option("--all-namespaces", "-A", help="Across all namespaces.")]


@dataclass(frozen=True, slots=True)
class Target:
    """The cluster a command talks to and the namespace it works in."""

    kubeconfig: Path | None = None
    context: str | None = None
    namespace: str | None = None

    @property
    def kubeconfig_path(self) -> Path:
        return self.kubeconfig or default_state_dir() / "kubeconfig"

    def open(self) -> KubeStore:
        return KubeStore.from_kubeconfig(self.kubeconfig_path, self.context)

    def namespace_in(self, store: KubeStore) -> str:
        return self.namespace or store.namespace


def _hint(target: Target | None) -> str:
    if target is None or target.kubeconfig is None:
        return "\nis the control plane running? start it with: gangplane up"
    return ""


def error_lines(error: ApiError) -> list[str]:
    """An API error as kubectl shows it; field errors one per line with their paths."""
    if error.causes and error.code in (403, 422):
        head = error.message.split(":", 1)[0] if ":" in error.message else error.message
        return [f"error: {head}:", *(f"  - {c.path}: {c.detail}" for c in error.causes)]
    return [f"Error from server ({error.reason}): {error.message}"]


def fail(message: str) -> typer.Exit:
    err.print(message, markup=False)
    return typer.Exit(1)


@contextlib.contextmanager
def reported(target: Target | None = None) -> Iterator[None]:
    """Turn the failures a user can cause into a message on stderr and exit code 1."""
    try:
        yield
    except ApiError as exc:
        raise fail("\n".join(error_lines(exc))) from None
    except (ManifestError, KubeconfigError) as exc:
        raise fail(f"error: {exc}{_hint(target) if isinstance(exc, KubeconfigError) else ''}") from None
    except (UnknownKind, JsonPathError, OutputError) as exc:
        raise fail(f"error: {exc}") from None
    except Unreachable as exc:
        raise fail(f"error: {exc}{_hint(target)}") from None


__all__ = [
    "AllNamespacesOption",
    "ContextOption",
    "KubeconfigOption",
    "Lines",
    "NamespaceOption",
    "Target",
    "err",
    "error_lines",
    "fail",
    "out",
    "reported",
]
