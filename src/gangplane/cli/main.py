"""``gangplane``: the entry point and its commands.

Machine formats go to stdout unstyled; warnings and errors go to stderr. User mistakes (bad manifests, invalid
objects) end with exit code 1 and field-pathed messages, never a traceback; Ctrl-C ends any command with exit
code 130, quietly, as a shell reports a process stopped by SIGINT.

Start-up is kept short (``benchmarks/cli_startup.py``): a command imports only the module that defines it
(``COMMANDS``), so ``get`` never loads the server, the simulator or the API models. ``--help`` and unknown
commands load them all.
"""

from __future__ import annotations

# Only ``sys`` and the built-in ``_signal`` here: until ``main`` installs its SIGINT handler, Ctrl-C prints
# a KeyboardInterrupt traceback, so that window must be as short as this module's own loading.
import _signal  # type: ignore[import-not-found]  # no stub; signal.py would load enum
import sys

TYPE_CHECKING = False  # not typing's: importing typing would widen that window
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import FrameType
    from typing import NoReturn

    import typer

# Each command and the module (under gangplane.cli) whose ``register`` adds it, in ``--help`` order.
COMMANDS: dict[str, str] = {
    "render": "render",
    "up": "controlplane",
    "down": "controlplane",
    "status": "controlplane",
    "apply": "objects",
    "delete": "objects",
    "get": "get",
    "api-resources": "get",
    "describe": "observe",
    "logs": "observe",
    "run": "run",
    "controller": "controller",
    "simulate": "simulate",  # what-if simulation in virtual time
    "dashboard": "dashboard",  # the web dashboard at /ui
    "rsh": "rsh",  # MPI pods' remote shell (docs/mpi.md)
}
MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMANDS.values()))


def _version() -> None:
    """Print gangplane's version."""
    import typer

    from gangplane import __version__

    typer.echo(__version__)


def _root() -> None:
    """gangplane: gang scheduling for Kubeflow TrainJobs."""


def build(modules: Sequence[str] = MODULES) -> typer.Typer:
    """The command-line app with the commands of ``modules`` (all by default)."""
    import importlib

    import typer

    app = typer.Typer(
        name="gangplane",
        help="Kubeflow Trainer's job scheduling in Python: render, run and simulate gang-scheduled TrainJobs.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    app.callback()(_root)
    app.command("version")(_version)
    for name in modules:
        importlib.import_module(f"gangplane.cli.{name}").register(app)
    return app


def modules_for(argv: Sequence[str]) -> tuple[str, ...]:
    """The modules a command line needs: the command's own, or all of them (help, a mistyped command)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command == "version":
        return ()
    return (COMMANDS[command],) if command in COMMANDS else MODULES


def _interrupted(signum: int, frame: FrameType | None) -> NoReturn:
    raise SystemExit(130)


def main() -> None:
    # SystemExit rather than KeyboardInterrupt: nothing on the way (click turns KeyboardInterrupt into
    # "Aborted!" and exit 1) reports it, and ``finally`` blocks still close connections.
    _signal.signal(_signal.SIGINT, _interrupted)
    build(modules_for(sys.argv[1:]))()


def __getattr__(name: str) -> typer.Typer:
    """``app``: every command, for tests and tools that want the whole command line."""
    if name == "app":
        return build()
    raise AttributeError(name)
