"""Short ways to write simulator jobs and clusters in test tables."""

from __future__ import annotations

from collections.abc import Sequence

from gangplane.simulator.jobs import JobSpec


def jobs(*rows: tuple[float, int, int, float] | tuple[float, int, int, float, str]) -> list[JobSpec]:
    """``(arrival, members, gpus_per_member, duration[, queue])`` rows, ids in row order (sorted input)."""
    out = []
    for i, row in enumerate(rows):
        arrival, members, per_member, duration = row[:4]
        queue = row[4] if len(row) > 4 else "default"
        out.append(JobSpec(i, float(arrival), members, per_member, float(duration), str(queue)))
    return out


def column(records: Sequence[object], name: str) -> list[object]:
    return [getattr(record, name) for record in records]
