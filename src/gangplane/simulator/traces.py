"""Trace loaders: Philly (Pollux's flattened table), Tiresias' 60-job trace and a generic CSV.

Each loader returns jobs sorted by arrival (ties keep file order), with arrivals shifted so the first job
arrives at 0. Loading uses the ``csv`` module and numpy only, so the 82k-row Philly table loads in well under a
second. The traces themselves are reference data and are never shipped with gangplane.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path

import numpy as np

from gangplane.simulator.jobs import DEFAULT_QUEUE, JobSpec, pack_gang


class TraceFormat(StrEnum):
    PHILLY = "philly"
    TIRESIAS = "tiresias"
    SWF = "swf"
    ALIBABA = "alibaba"
    HELIOS = "helios"
    CSV = "csv"


PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
TIRESIAS_COLUMNS = ("job_id", "num_gpu", "submit_time", "duration")
GENERIC_COLUMNS = ("arrival", "gang_size", "gpus_per_member", "duration")
"""Required generic columns; ``queue`` and ``priority`` are optional."""


class TraceError(ValueError):
    """A trace file that cannot be read: missing columns or bad values, naming the file and line."""


class Rows(list[list[str]]):
    """A CSV file's data rows, each with the line it came from (``lines[i]``), for error messages."""

    def __init__(self, path: Path, rows: Iterable[tuple[int, list[str]]]) -> None:
        pairs = list(rows)
        super().__init__(row for _, row in pairs)
        self.path = path
        self.lines = [line for line, _ in pairs]

    def keep(self, wanted: Callable[[list[str]], bool]) -> Rows:
        return Rows(
            self.path, ((line, row) for line, row in zip(self.lines, self, strict=True) if wanted(row))
        )

    def error(self, i: int, message: str) -> TraceError:
        return TraceError(f"{self.path}:{self.lines[i]}: {message}")


def read_rows(path: Path, required: Sequence[str]) -> tuple[dict[str, int], Rows]:
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        header = [name.strip() for name in next(reader, [])]
        missing = [name for name in required if name not in header]
        if missing:
            raise TraceError(f"{path}: missing column(s) {', '.join(missing)}; header is {header}")
        return {name: i for i, name in enumerate(header)}, Rows(
            path, ((reader.line_num, row) for row in reader if row)
        )


def check_unique(rows: Rows, index: int, name: str) -> None:
    """A job id that repeats is an error naming its line and the first (ids name jobs in the exports)."""
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        key = row[index].strip() if index < len(row) else ""
        if key and key in seen:
            raise rows.error(i, f"column {name!r}: job {key!r} repeats line {rows.lines[seen[key]]}")
        seen.setdefault(key, i)


def read_column(
    rows: Rows, index: int, dtype: type, path: Path, name: str, *, signed: bool = False
) -> np.ndarray:
    """One column as an array; an unparsable value, a NaN or infinite number or a missing time, and (unless
    ``signed``) a negative number are errors naming the line (a NaN duration would otherwise never end)."""
    try:
        values: np.ndarray = np.array([row[index] for row in rows], dtype=dtype)
    except (ValueError, IndexError):
        bad = next(i for i in range(len(rows)) if not _parses(rows[i], index, dtype))
        raise rows.error(bad, f"column {name!r}: {_show(rows[bad], index)} is not a {_kind(dtype)}") from None
    if values.dtype.kind == "M":
        wrong = np.isnat(values)
    elif values.dtype.kind == "f":
        wrong = ~np.isfinite(values) | (False if signed else values < 0)
    else:
        wrong = np.zeros(len(values), dtype=bool) if signed else values < 0
    if np.any(wrong):
        i = int(np.argmax(wrong))
        what = (
            "a time"
            if values.dtype.kind == "M"
            else "a finite" + ("" if signed else " non-negative") + " number"
        )
        raise rows.error(i, f"column {name!r}: {_show(rows[i], index)} is not {what}")
    return values


def _parses(row: list[str], index: int, dtype: type) -> bool:
    try:
        np.array([row[index]], dtype=dtype)
    except (ValueError, IndexError):
        return False
    return True


def _show(row: list[str], index: int) -> str:
    return repr(row[index]) if index < len(row) else "a missing value"


def _kind(dtype: type) -> str:
    if dtype is np.int64:
        return "whole number"
    return "number" if dtype is np.float64 else "date and time"


def _sorted_jobs(
    arrivals: np.ndarray, fields: Iterable[tuple[int, int, float, str, int, str]], rows: Rows
) -> list[JobSpec]:
    """Jobs in arrival order (stable), ids renumbered 0..n-1 in that order, first arrival at 0."""
    spec = list(fields)
    order = np.argsort(arrivals, kind="stable")
    start = float(arrivals[order[0]]) if len(order) else 0.0
    jobs = []
    for new_id, i in enumerate(order.tolist()):
        members, gpus_per_member, duration, queue, priority, name = spec[i]
        if members < 1:
            raise rows.error(i, f"gang {members} x {gpus_per_member} GPUs for {duration} s is not a job")
        arrival = float(arrivals[i]) - start
        jobs.append(JobSpec(new_id, arrival, members, gpus_per_member, duration, queue, priority, name=name))
    return jobs


def load_philly(path: Path, *, gpus_per_node: int, vc: str | Collection[str] | None = None) -> list[JobSpec]:
    """Philly jobs (optionally of some virtual clusters only); the VC hash is the job's queue; gangs via
    ``pack_gang``.

    ``timestamp`` is read as the arrival time (the table does not say whether it is submit or start).
    """
    index, rows = read_rows(path, PHILLY_COLUMNS)
    if vc is not None:
        keep = {vc} if isinstance(vc, str) else set(vc)
        rows = rows.keep(lambda row: row[index["cluster"]] in keep)
    stamps = read_column(rows, index["timestamp"], np.datetime64, path, "timestamp").astype("datetime64[s]")
    arrivals = stamps.astype(np.int64).astype(np.float64)
    durations = read_column(rows, index["duration"], np.float64, path, "duration")
    gpus = read_column(rows, index["num_gpus"], np.int64, path, "num_gpus")
    clusters = [row[index["cluster"]] for row in rows]
    return _sorted_jobs(arrivals, _fields(gpus, durations, clusters, gpus_per_node, rows), rows)


def _fields(
    gpus: np.ndarray,
    durations: np.ndarray,
    queues: Sequence[str],
    gpus_per_node: int,
    rows: Rows,
    names: Sequence[str] = (),
) -> Iterator[tuple[int, int, float, str, int, str]]:
    shapes: dict[int, tuple[int, int]] = {}
    for i, (total, duration) in enumerate(zip(gpus.tolist(), durations.tolist(), strict=True)):
        if total < 1:
            raise rows.error(i, f"a job needs at least one GPU, not {total}")
        shape = shapes.get(total) or shapes.setdefault(total, pack_gang(total, gpus_per_node))
        yield (*shape, duration, queues[i], 0, names[i] if names else "")


def load_tiresias(path: Path, *, gpus_per_node: int) -> list[JobSpec]:
    """Tiresias' ``60_job.csv``: ``submit_time`` and ``duration`` in seconds, ``num_gpu`` per job."""
    index, rows = read_rows(path, TIRESIAS_COLUMNS)
    arrivals = read_column(rows, index["submit_time"], np.float64, path, "submit_time")
    durations = read_column(rows, index["duration"], np.float64, path, "duration")
    gpus = read_column(rows, index["num_gpu"], np.int64, path, "num_gpu")
    check_unique(rows, index["job_id"], "job_id")
    names = [f"job-{row[index['job_id']]}" for row in rows]
    queues = [DEFAULT_QUEUE] * len(rows)
    return _sorted_jobs(arrivals, _fields(gpus, durations, queues, gpus_per_node, rows, names), rows)


def load_generic(path: Path) -> list[JobSpec]:
    """A CSV with ``arrival,gang_size,gpus_per_member,duration[,queue][,priority]`` (seconds)."""
    index, rows = read_rows(path, GENERIC_COLUMNS)
    arrivals = read_column(rows, index["arrival"], np.float64, path, "arrival")
    durations = read_column(rows, index["duration"], np.float64, path, "duration")
    members = read_column(rows, index["gang_size"], np.int64, path, "gang_size").tolist()
    per_member = read_column(rows, index["gpus_per_member"], np.int64, path, "gpus_per_member").tolist()
    queues = [row[index["queue"]] for row in rows] if "queue" in index else [DEFAULT_QUEUE] * len(rows)
    priorities = (
        read_column(rows, index["priority"], np.int64, path, "priority", signed=True).tolist()
        if "priority" in index
        else []
    )
    fields = (
        (members[i], per_member[i], float(durations[i]), queues[i], priorities[i] if priorities else 0, "")
        for i in range(len(rows))
    )
    return _sorted_jobs(arrivals, fields, rows)


def load_trace(
    path: Path,
    trace_format: TraceFormat,
    *,
    gpus_per_node: int,
    vc: str | Collection[str] | None = None,
    notes: list[str] | None = None,
) -> list[JobSpec]:
    """Dispatch on ``trace_format``; ``vc`` filters Philly only; ``notes`` collects what a loader left out."""
    if trace_format == TraceFormat.SWF:
        from gangplane.simulator.swf import load_swf  # swf builds on this module's TraceError

        return load_swf(path, gpus_per_node=gpus_per_node, notes=notes)
    if trace_format in (TraceFormat.ALIBABA, TraceFormat.HELIOS):
        from gangplane.simulator.gputraces import load_alibaba, load_helios  # they build on this module

        if trace_format == TraceFormat.ALIBABA:
            return load_alibaba(path, notes=notes)
        return load_helios(path, gpus_per_node=gpus_per_node, notes=notes)
    if trace_format == TraceFormat.PHILLY:
        return load_philly(path, gpus_per_node=gpus_per_node, vc=vc)
    if trace_format == TraceFormat.TIRESIAS:
        return load_tiresias(path, gpus_per_node=gpus_per_node)
    return load_generic(path)


__all__ = [
    "Rows",
    "TraceError",
    "TraceFormat",
    "check_unique",
    "load_generic",
    "load_philly",
    "load_tiresias",
    "load_trace",
    "read_column",
    "read_rows",
]
