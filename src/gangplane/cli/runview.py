"""How ``run`` shows a TrainJob while following it: plain lines (``--no-live``, CI and tests) or a live rich
panel. Both take the same ``TrainJobSummary`` values and log lines; neither reads the cluster.

The plain view prints only what changed since the last summary: the phase and why, the gang, each pod.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from gangplane.cli.jobstatus import COMPLETE, FAILED, RUNNING, NodeStatus, TrainJobSummary

_COLOURS = {COMPLETE: "green", FAILED: "red", RUNNING: "cyan"}


class RunView(Protocol):
    def status(self, summary: TrainJobSummary) -> None:
        """Called after every poll with the current summary."""

    def log(self, prefix: str, line: str) -> None:
        """Called for each log line of a pod."""

    def close(self) -> None:
        """Called once when following ends."""


def phase_line(summary: TrainJobSummary) -> str:
    why = f": {summary.reasons[0]}" if summary.reasons else ""
    return f"trainjob/{summary.name} {summary.phase}{why}"


def node_line(node: NodeStatus) -> str:
    where = f"on {node.node}" if node.node else "not bound"
    detail = (
        f" ({node.reason}: {node.message})" if node.message else f" ({node.reason})" if node.reason else ""
    )
    return f"  pod/{node.pod} {node.phase} {where}{detail}"


def status_lines(summary: TrainJobSummary) -> list[str]:
    """Every line the plain view can show for a summary, in order."""
    return [
        phase_line(summary),
        f"trainjob/{summary.name} {'gang ' if summary.gang else ''}{summary.gang_line()}",
        *map(node_line, summary.nodes),
    ]


class PlainView:
    """Prints each status line when it first appears or changes, and log lines as they come."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self._emit = emit
        self._shown: list[str] = []

    def status(self, summary: TrainJobSummary) -> None:
        lines = status_lines(summary)
        for line in lines:
            if line not in self._shown:
                self._emit(line)
        self._shown = lines

    def log(self, prefix: str, line: str) -> None:
        self._emit(f"{prefix} {line}")

    def close(self) -> None:
        pass


def _panel(summary: TrainJobSummary | None) -> Group:
    if summary is None:
        return Group(Text("waiting for the TrainJob..."))
    colour = _COLOURS.get(summary.phase, "yellow")
    head = Text.assemble(f"trainjob/{summary.name}  ", (summary.phase, f"bold {colour}"))
    parts: list[Text | Table] = [head]
    parts += [Text(f"  why: {reason}", style="yellow") for reason in summary.reasons[:5]]
    gang = "gang " if summary.gang else ""
    parts.append(Text(f"  {gang}{summary.gang_line()}", style="green" if summary.gang_formed else "yellow"))
    table = Table(box=None, pad_edge=False, show_edge=False)
    for column in ("POD", "PHASE", "NODE", "REASON", "MESSAGE"):
        table.add_column(column)
    for node in summary.nodes:
        table.add_row(node.pod, node.phase, node.node or "<none>", node.reason, node.message)
    if summary.nodes:
        parts.append(table)
    return Group(*parts)


class LiveView:
    """A panel redrawn in place; log lines scroll above it."""

    def __init__(self, console: Console) -> None:
        self._live = Live(_panel(None), console=console, auto_refresh=False, transient=False)
        self._live.start()

    def status(self, summary: TrainJobSummary) -> None:
        self._live.update(_panel(summary), refresh=True)

    def log(self, prefix: str, line: str) -> None:
        self._live.console.print(Text(f"{prefix} ", style="dim") + Text(line))

    def close(self) -> None:
        self._live.stop()


__all__ = ["LiveView", "PlainView", "RunView", "node_line", "phase_line", "status_lines"]
