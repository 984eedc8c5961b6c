"""PNG plots of a comparison (matplotlib, Agg backend, small files): utilisation over time, JCT and
queueing-delay CDFs per policy, mean slowdown by job size, per-queue GPU share over time, and a Gantt chart of
node occupancy.

Long runs are binned (``BINS`` time bins, exact bin means of the step functions) so files stay small.
"""

from __future__ import annotations

import colorsys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from gangplane.simulator.compare import Outcome
from gangplane.simulator.metrics import SIZE_CLASSES, busy_series, size_class
from gangplane.simulator.timeline import JobRecord

BINS = 300
DPI = 90
HOUR = 3600.0


def binned_mean(times: np.ndarray, levels: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Exact mean of a step function (``levels[i]`` on ``[times[i], times[i+1])``, 0 before) per bin."""
    if not len(times):
        return np.zeros(len(edges) - 1)
    knots = np.r_[times, max(times[-1], edges[-1])]
    integral = np.r_[0.0, np.cumsum(levels * np.diff(knots))]
    at_edges = np.interp(edges, knots, integral, left=0.0)
    means: np.ndarray = np.diff(at_edges) / np.diff(edges)
    return means


def _span(outcomes: Sequence[Outcome]) -> tuple[float, float]:
    ends = [r.end for o in outcomes for r in o.result.records if r.end is not None]
    return 0.0, max(ends, default=1.0)


def _save(figure: Figure, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return path


def plot_utilisation(outcomes: Sequence[Outcome], path: Path) -> Path:
    start, end = _span(outcomes)
    edges = np.linspace(start, end, BINS + 1)
    figure, axes = plt.subplots(figsize=(8, 3.2))
    for outcome in outcomes:
        times, busy = busy_series(outcome.result.records)
        share = binned_mean(times, busy, edges) / outcome.result.cluster.total_gpus
        axes.plot(edges[:-1] / HOUR, 100 * share, label=f"{outcome.summary.policy}", linewidth=1)
    axes.set(xlabel="hours", ylabel="GPUs busy (%)", ylim=(0, 105), title="GPU utilisation over time")
    axes.legend(loc="lower right", fontsize="small")
    return _save(figure, path)


def _plot_cdf(outcomes: Sequence[Outcome], path: Path, metric: str, what: str, title: str) -> Path:
    """The CDF of a per-job ``JobRecord`` property (``None`` = left out) per policy, log time axis."""
    figure, axes = plt.subplots(figsize=(6, 3.2))
    for outcome in outcomes:
        values = np.sort([v for r in outcome.result.records if (v := getattr(r, metric)) is not None])
        if len(values):
            fraction = np.arange(1, len(values) + 1) / len(values)
            axes.step(np.maximum(values, 1.0) / HOUR, fraction, where="post", label=outcome.summary.policy)
    axes.set(xscale="log", xlabel=f"{what} (hours, log; <1 s shown at 1 s)", ylabel="fraction of jobs")
    axes.set(title=title, ylim=(0, 1.01))
    axes.xaxis.set_minor_formatter(NullFormatter())  # labelled minor ticks collide on short spans
    axes.legend(loc="lower right", fontsize="small")
    return _save(figure, path)


def plot_wait_cdf(outcomes: Sequence[Outcome], path: Path) -> Path:
    return _plot_cdf(outcomes, path, "queueing_delay", "queueing delay", "Queueing-delay CDF (started jobs)")


def plot_jct_cdf(outcomes: Sequence[Outcome], path: Path) -> Path:
    return _plot_cdf(outcomes, path, "jct", "job completion time", "JCT CDF (finished jobs)")


def plot_slowdown_by_size(outcomes: Sequence[Outcome], path: Path) -> Path:
    """Mean slowdown per job-size class, one bar per policy in each class (log scale when they span more
    than a factor of 20)."""
    classes = [size_class(low) for low, _ in SIZE_CLASSES]
    present = [c for c in classes if any(c in o.summary.slowdown_by_size for o in outcomes)]
    figure, axes = plt.subplots(figsize=(7, 3.2))
    width = 0.8 / max(len(outcomes), 1)
    for i, outcome in enumerate(outcomes):
        values = [outcome.summary.slowdown_by_size.get(c, np.nan) for c in present]
        axes.bar(np.arange(len(present)) + i * width, values, width, label=outcome.summary.policy)
    axes.set_xticks(np.arange(len(present)) + 0.4 - width / 2, present)
    found = [v for o in outcomes for v in o.summary.slowdown_by_size.values() if v > 0]
    if found and max(found) / min(found) > 20:
        axes.set_yscale("log")
    axes.set(xlabel="job size (GPUs)", ylabel="mean slowdown (JCT / run time)")
    axes.set(title="Slowdown by job size")
    axes.legend(fontsize="small")
    return _save(figure, path)


GOLDEN = 0.6180339887498949


def job_colour(job: int) -> tuple[float, float, float]:
    """A colour per job id that differs strongly from its neighbours' (ids are arrival order, and jobs that
    arrive together sit side by side): hues step by the golden ratio, brightness and saturation alternate."""
    hue = (job * GOLDEN) % 1.0
    saturation = (0.85, 0.55, 0.7)[job % 3]
    value = (0.95, 0.75)[(job // 3) % 2]
    rgb = colorsys.hsv_to_rgb(hue, saturation, value)
    return (rgb[0], rgb[1], rgb[2])


def plot_queue_share(outcomes: Sequence[Outcome], path: Path) -> Path:
    """One panel per policy: busy GPUs of each queue over time, stacked."""
    start, end = _span(outcomes)
    edges = np.linspace(start, end, BINS + 1)
    figure, panels = plt.subplots(
        len(outcomes), 1, figsize=(8, 2.4 * len(outcomes)), sharex=True, squeeze=False
    )
    for axes, outcome in zip(panels[:, 0], outcomes, strict=True):
        queues = sorted({r.job.queue for r in outcome.result.records})
        stacks = [_queue_busy(outcome.result.records, q, edges) for q in queues]
        axes.stackplot(edges[:-1] / HOUR, stacks, labels=queues, linewidth=0)
        axes.set(ylabel="GPUs", title=f"{outcome.summary.policy}: GPUs per queue")
    panels[-1, 0].set_xlabel("hours")
    panels[0, 0].legend(
        loc="upper left",
        fontsize="x-small",
        ncol=min(6, len(panels[0, 0].get_legend_handles_labels()[1]) or 1),
    )
    return _save(figure, path)


def _queue_busy(records: Sequence[JobRecord], queue: str, edges: np.ndarray) -> np.ndarray:
    mine = [r for r in records if r.job.queue == queue and r.segments]
    if not mine:
        return np.zeros(len(edges) - 1)
    return binned_mean(*busy_series(mine), edges)


def _gpu_slots(runs: list[tuple[float, float, int, int]], gpus: int) -> list[tuple[int, float, float, int]]:
    """Assign each run ``(start, end, gpus, job)`` on one node to GPU slots, first free slot first."""
    free_at = [float("-inf")] * gpus
    placed = []
    for begin, stop, count, job in sorted(runs):
        slots = [i for i, t in enumerate(free_at) if t <= begin][:count]
        for slot in slots:
            free_at[slot] = stop
            placed.append((slot, begin, stop, job))
    return placed


def plot_gantt(
    outcome: Outcome, path: Path, *, max_nodes: int = 32, window: tuple[float, float] | None = None
) -> Path:
    """Node occupancy: one band per node (the first ``max_nodes``) split into one lane per GPU, one bar per
    job run, coloured by job (``job_colour``) with a thin black border, so back-to-back runs stay apart."""
    nodes = outcome.result.cluster.nodes[:max_nodes]
    start, end = window or _span([outcome])
    runs: dict[str, list[tuple[float, float, int, int]]] = {node.name: [] for node in nodes}
    for record in outcome.result.records:
        for segment in record.segments:
            stop = end if segment.end is None else segment.end
            if stop >= start and segment.start <= end:
                for name in segment.nodes:
                    if name in runs:
                        runs[name].append((segment.start, stop, record.job.gpus_per_member, record.job.id))
    figure, axes = plt.subplots(figsize=(8, 0.25 * len(nodes) + 1.2))
    for row, node in enumerate(nodes):
        lane = 0.9 / max(node.gpus, 1)
        lanes: dict[int, tuple[list[tuple[float, float]], list[Any]]] = {}
        for slot, begin, stop, job in _gpu_slots(runs[node.name], node.gpus):
            bars, tints = lanes.setdefault(slot, ([], []))
            bars.append((begin / HOUR, (stop - begin) / HOUR))
            tints.append(job_colour(job))
        for slot, (bars, tints) in sorted(lanes.items()):
            axes.broken_barh(
                bars, (row - 0.45 + slot * lane, lane), facecolors=tints, edgecolors="black", linewidth=0.3
            )
    axes.set(
        yticks=range(len(nodes)),
        xlim=(start / HOUR, end / HOUR),
        xlabel="hours",
        title=f"{outcome.summary.policy}: node occupancy (one lane per GPU)",
    )
    axes.set_yticklabels([node.name for node in nodes], fontsize="xx-small")
    return _save(figure, path)


def plot_all(
    outcomes: Sequence[Outcome],
    directory: Path,
    prefix: str = "",
    gantt_window: tuple[float, float] | None = None,
) -> list[Path]:
    """Every plot of a comparison into ``directory``; the Gantt chart per policy (over ``gantt_window``)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = [
        plot_utilisation(outcomes, directory / f"{prefix}utilisation.png"),
        plot_wait_cdf(outcomes, directory / f"{prefix}wait-cdf.png"),
        plot_jct_cdf(outcomes, directory / f"{prefix}jct-cdf.png"),
        plot_slowdown_by_size(outcomes, directory / f"{prefix}slowdown-by-size.png"),
        plot_queue_share(outcomes, directory / f"{prefix}queue-share.png"),
    ]
    paths += [
        plot_gantt(o, directory / f"{prefix}gantt-{o.summary.policy}.png", window=gantt_window)
        for o in outcomes
    ]
    return paths


__all__ = [
    "binned_mean",
    "job_colour",
    "plot_all",
    "plot_gantt",
    "plot_jct_cdf",
    "plot_queue_share",
    "plot_slowdown_by_size",
    "plot_utilisation",
    "plot_wait_cdf",
]
