"""``gangplane rsh``: the remote shell MPI pods use in place of ``ssh`` (docs/mpi.md), as a command.

OpenMPI runs the same agent as ``python -m gangplane.agent.rsh`` (the node agent sets it in
``OMPI_MCA_plm_rsh_agent``: no command-line start-up per host); this command is for a person or a script in
an MPI pod, e.g. ``gangplane rsh <job>-node-0-0.<job> hostname`` in the launcher.
"""

from __future__ import annotations

import typer


def rsh(ctx: typer.Context) -> None:
    """Run a command in another pod of this MPI job, as ssh would: gangplane rsh HOST COMMAND... (ssh options
    may come first). Runs inside an MPI pod, where the node agent set GANGPLANE_RSH_*. Exit code: the
    command's, or 255 when no session could be had."""
    from gangplane.agent.rsh import main

    raise typer.Exit(main(ctx.args))


def register(app: typer.Typer) -> None:
    settings = {"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False}
    app.command("rsh", context_settings=settings)(rsh)


__all__ = ["register", "rsh"]
