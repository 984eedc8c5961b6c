"""``gangplane``: the entry point and its commands.

Machine formats go to stdout unstyled; warnings and errors go to stderr. User mistakes (bad manifests, invalid
objects) end with exit code 1 and field-pathed messages, never a traceback.
"""

from __future__ import annotations

import typer

from gangplane import __version__
from gangplane.cli import controller, controlplane, dashboard, objects, observe, render, run, simulate

app = typer.Typer(
    name="gangplane",
    help="Kubeflow Trainer's job scheduling in Python: render, run and simulate gang-scheduled TrainJobs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """gangplane: gang scheduling for Kubeflow TrainJobs."""


@app.command()
def version() -> None:
    """Print gangplane's version."""
    typer.echo(__version__)


render.register(app)
controlplane.register(app)
objects.register(app)  # apply, get, delete
observe.register(app)  # describe, logs
run.register(app)
controller.register(app)
simulate.register(app)  # what-if simulation in virtual time
dashboard.register(app)  # the web dashboard at /ui


def main() -> None:
    app()
