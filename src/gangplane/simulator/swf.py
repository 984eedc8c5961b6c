"""The Standard Workload Format of the Parallel Workloads Archive (Feitelson, Tsafrir & Krakov, JPDC 2014;
https://www.cs.huji.ac.il/labs/parallel/workload/swf.html). The archive's logs are free to use with
attribution to the archive and the log's donor (see each log's header).

One job per line, 18 whitespace-separated numbers, ``-1`` where unknown; lines starting with ``;`` are
header comments. Fields: 1 job number, 2 submit time, 3 wait time, 4 run time, 5 allocated processors,
6 average CPU time, 7 used memory, 8 requested processors, 9 requested time, 10 requested memory, 11 status,
12 user, 13 group, 14 executable, 15 queue, 16 partition, 17 preceding job, 18 think time.

gangplane reads a processor as one GPU (the simulator's accelerator slot) and makes the gang with
``pack_gang``: size is field 5, else field 8; run time field 4; arrival field 2; requested time field 9
becomes ``JobSpec.requested`` (the estimate and time limit under ``--estimates trace``); queue field 15
(``q<N>``). A job whose run time or size is unknown or zero cannot be replayed and is skipped (counted in
``notes``); any other value that is not a number, or is NaN, infinite or negative other than ``-1``, is an
error naming the file and line.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from gangplane.simulator.jobs import DEFAULT_QUEUE, JobSpec, pack_gang
from gangplane.simulator.traces import TraceError

FIELDS = 18
UNKNOWN = -1.0
SUBMIT, RUN_TIME, ALLOCATED, REQUESTED_PROCS, REQUESTED_TIME, QUEUE = 1, 3, 4, 7, 8, 14


def _numbers(path: Path, line_no: int, line: str) -> list[float]:
    parts = line.split()
    if len(parts) != FIELDS:
        raise TraceError(f"{path}:{line_no}: an SWF job has {FIELDS} fields, this line has {len(parts)}")
    values = []
    for field_no, text in enumerate(parts, 1):
        try:
            value = float(text)
        except ValueError:
            raise TraceError(f"{path}:{line_no}: field {field_no} {text!r} is not a number") from None
        if not math.isfinite(value) or (value < 0 and value != UNKNOWN):
            raise TraceError(f"{path}:{line_no}: field {field_no} {text!r} is not a finite number >= 0 or -1")
        values.append(value)
    return values


def _job(values: list[float], gpus_per_node: int, name: str) -> JobSpec | None:
    size = values[ALLOCATED] if values[ALLOCATED] > 0 else values[REQUESTED_PROCS]
    run_time = values[RUN_TIME]
    if size <= 0 or run_time <= 0 or values[SUBMIT] < 0:
        return None
    members, per_member = pack_gang(int(size), gpus_per_node)
    requested = values[REQUESTED_TIME] if values[REQUESTED_TIME] > 0 else None
    queue = f"q{int(values[QUEUE])}" if values[QUEUE] >= 0 else DEFAULT_QUEUE
    return JobSpec(-1, values[SUBMIT], members, per_member, run_time, queue, name=name, requested=requested)


def load_swf(path: Path, *, gpus_per_node: int, notes: list[str] | None = None) -> list[JobSpec]:
    """The replayable jobs of an SWF log, sorted by submit time (ties keep file order), ids 0..n-1, the first
    arrival at 0. ``notes`` receives a line saying how many jobs were skipped, if any."""
    kept: list[JobSpec] = []
    skipped = 0
    seen: dict[float, int] = {}  # job number -> its line
    with path.open() as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip() or line.lstrip().startswith(";"):
                continue
            values = _numbers(path, line_no, line)
            if (first := seen.setdefault(values[0], line_no)) != line_no:
                raise TraceError(f"{path}:{line_no}: job number {values[0]:g} repeats line {first}")
            job = _job(values, gpus_per_node, f"swf-{int(values[0])}")
            if job is None:
                skipped += 1
            else:
                kept.append(job)
    if skipped and notes is not None:
        notes.append(f"{path}: skipped {skipped} SWF job(s) with unknown or zero run time or size")
    kept.sort(key=lambda job: job.arrival)  # stable: ties keep file order
    start = kept[0].arrival if kept else 0.0
    return [replace(job, id=i, arrival=job.arrival - start) for i, job in enumerate(kept)]


__all__ = ["FIELDS", "load_swf"]
