"""``gangplane render``: print every object a real cluster would get for the given manifests."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from gangplane.api import serde
from gangplane.clock import WallClock
from gangplane.errors import ApiError, ManifestError
from gangplane.runtime.admission import Admission
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.points import AppliedBy, Handle
from gangplane.runtime.render import Rendered, Renderer


class Output(StrEnum):
    YAML = "yaml"
    JSON = "json"


def _errors_text(source: str, error: ApiError) -> str:
    lines = [f"error: {source}: {error.kind} {error.name!r} is {error.reason.lower()}:"]
    lines += [f"  - {cause}" for cause in error.causes] or [f"  - {error.message}"]
    return "\n".join(lines)


def _documents(rendered: Rendered, output: Output) -> str:
    if output == Output.JSON:
        return serde.dump_json([d.object.to_dict() for d in rendered.objects])
    parts = []
    for desired in rendered.objects:
        note = (
            ""
            if desired.applied_by == AppliedBy.TRAINER
            else f"# derived on a real cluster by {desired.applied_by}\n"
        )
        parts.append(note + serde.dump_yaml([desired.object.to_dict()]))
    return "---\n".join(parts)


def render_command(
    files: Annotated[
        list[Path], typer.Option("--filename", "-f", help="Manifest file or directory (repeatable).")
    ],
    output: Annotated[Output, typer.Option("--output", "-o", help="Output format.")] = Output.YAML,
) -> None:
    """Render TrainJobs into the JobSet, PodGroup and other objects a cluster gets.

    Runtimes and any other kind the API server serves (PriorityClass, Namespace, Secret, queues...) given
    with them are taken as context."""
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        documents = serde.load_paths(files)
    except ManifestError as exc:
        errors.print(f"error: {exc}", markup=False)
        raise typer.Exit(1) from None
    clock = WallClock()
    renderer = Renderer(Admission(Framework(default_registry(), Handle(clock)), clock))
    rendered = renderer.render(documents)
    for warning in rendered.warnings:
        errors.print(f"Warning: {warning}", markup=False)
    for source, error in rendered.errors:
        errors.print(_errors_text(source, error), markup=False)
    if rendered.errors:
        raise typer.Exit(1)
    typer.echo(_documents(rendered, output), nl=False)


def register(app: typer.Typer) -> None:
    app.command("render")(render_command)
