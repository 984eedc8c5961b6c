"""Loaders for two production GPU traces: Alibaba's ``cluster-trace-gpu-v2023`` and SenseTime's Helios.

**Alibaba** (alibaba/clusterdata ``cluster-trace-gpu-v2023``; cite Weng et al., "Beware of Fragmentation",
USENIX ATC'23; the repository allows any research or study use): ``openb_pod_list_*.csv`` (``name,
cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time,
scheduled_time``) and the cluster from ``openb_node_list_*.csv`` (``sn, cpu_milli, memory_mib, gpu,
model``). Each pod is a one-member job arriving at ``creation_time`` and running ``deletion_time -
scheduled_time`` seconds with its CPU and memory. GPUs are counted in **milli-GPUs** so that GPU-sharing pods
(``num_gpu`` 1, ``gpu_milli`` < 1000) fit: a node of 8 GPUs offers 8,000 units and a pod asks ``num_gpu x
gpu_milli``. What this does not model: that a shared pod must fit inside *one* physical GPU (two GPUs with 600
free each would take a 1,000-milli pod), and ``gpu_spec`` type constraints. Pods that never ran (no
scheduled or deletion time) are skipped, with a note.

**Helios** (S-Lab-System-Group/HeliosData; cite Hu et al., "Characterization and Prediction of Deep Learning
Workloads in Large-Scale GPU Datacenters", SC'21; the README allows academic use with that citation):
``cluster_log.csv`` (``job_id, user, vc, gpu_num, cpu_num, node_num, state, submit_time, start_time,
end_time, duration, queue``). GPU jobs only (CPU jobs are skipped, with a note); arrival ``submit_time``; run
time ``duration``; the VC is the queue; the gang is ``node_num`` members of ``gpu_num / node_num`` GPUs when
that divides and fits a node, else ``pack_gang``; CPUs are shared evenly by the members.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from gangplane.simulator.cluster import ClusterSpec, NodeSpec
from gangplane.simulator.jobs import JobSpec, pack_gang
from gangplane.simulator.traces import Rows, TraceError, check_unique, read_column, read_rows

MILLI = 1000
MIB = 2**20
ALIBABA_PODS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time")
ALIBABA_TIMES = ("scheduled_time", "deletion_time")
ALIBABA_NODES = ("sn", "cpu_milli", "memory_mib", "gpu")
HELIOS_COLUMNS = ("job_id", "vc", "gpu_num", "cpu_num", "node_num", "submit_time", "duration")


def load_alibaba_nodes(path: Path) -> ClusterSpec:
    """The node list as a cluster, GPUs in milli-GPUs."""
    index, rows = read_rows(path, ALIBABA_NODES)
    cpu = read_column(rows, index["cpu_milli"], np.float64, path, "cpu_milli") / MILLI
    memory = read_column(rows, index["memory_mib"], np.float64, path, "memory_mib") * MIB
    gpus = read_column(rows, index["gpu"], np.int64, path, "gpu") * MILLI
    nodes = tuple(
        NodeSpec(row[index["sn"]], int(gpus[i]), float(cpu[i]), float(memory[i]))
        for i, row in enumerate(rows)
    )
    if not nodes:
        raise TraceError(f"{path}: no nodes")
    return ClusterSpec(nodes)


def _optional_times(rows: Rows, index: dict[str, int], name: str) -> np.ndarray:
    """A time column where empty or ``nan`` means "never" (NaN); other bad values are errors."""
    column = index[name]
    present = rows.keep(lambda row: row[column].strip().lower() not in ("", "nan"))
    values = dict(
        zip(present.lines, read_column(present, column, np.float64, rows.path, name).tolist(), strict=True)
    )
    return np.array([values.get(line, np.nan) for line in rows.lines])


def load_alibaba(path: Path, *, notes: list[str] | None = None) -> list[JobSpec]:
    index, rows = read_rows(path, ALIBABA_PODS + ALIBABA_TIMES)
    check_unique(rows, index["name"], "name")
    arrivals = read_column(rows, index["creation_time"], np.float64, path, "creation_time")
    cpu = read_column(rows, index["cpu_milli"], np.float64, path, "cpu_milli") / MILLI
    memory = read_column(rows, index["memory_mib"], np.float64, path, "memory_mib") * MIB
    gpus = read_column(rows, index["num_gpu"], np.int64, path, "num_gpu")
    milli = read_column(rows, index["gpu_milli"], np.int64, path, "gpu_milli")
    scheduled, deleted = (_optional_times(rows, index, name) for name in ALIBABA_TIMES)
    ran = ~np.isnan(scheduled) & ~np.isnan(deleted)
    if np.any(ran & (deleted < scheduled)):
        bad = int(np.argmax(ran & (deleted < scheduled)))
        raise rows.error(bad, "deletion_time is before scheduled_time")

    def job(i: int) -> JobSpec:
        units = int(gpus[i]) * int(milli[i]) if gpus[i] else 0
        duration = float(deleted[i] - scheduled[i])
        name = rows[i][index["name"]]
        return JobSpec(
            -1,
            0.0,
            1,
            units,
            duration,
            cpu_per_member=float(cpu[i]),
            memory_per_member=float(memory[i]),
            name=name,
        )

    return _arrival_order(
        [i for i in range(len(rows)) if ran[i]], arrivals, job, notes, path, "pod(s) that never ran"
    )


def load_helios(path: Path, *, gpus_per_node: int, notes: list[str] | None = None) -> list[JobSpec]:
    index, rows = read_rows(path, HELIOS_COLUMNS)
    check_unique(rows, index["job_id"], "job_id")
    stamps = read_column(rows, index["submit_time"], np.datetime64, path, "submit_time").astype(
        "datetime64[s]"
    )
    arrivals = stamps.astype(np.int64).astype(np.float64)
    durations = read_column(rows, index["duration"], np.float64, path, "duration")
    gpus = read_column(rows, index["gpu_num"], np.int64, path, "gpu_num")
    cpus = read_column(rows, index["cpu_num"], np.float64, path, "cpu_num")
    nodes = read_column(rows, index["node_num"], np.int64, path, "node_num")

    def job(i: int) -> JobSpec:
        total, spread = int(gpus[i]), max(1, int(nodes[i]))
        even = total % spread == 0 and total // spread <= gpus_per_node
        members, per = (spread, total // spread) if even else pack_gang(total, gpus_per_node)
        name, vc = f"helios-{rows[i][index['job_id']]}", rows[i][index["vc"]]
        return JobSpec(
            -1, 0.0, members, per, float(durations[i]), vc, cpu_per_member=float(cpus[i]) / members, name=name
        )

    return _arrival_order(
        [i for i in range(len(rows)) if gpus[i] > 0], arrivals, job, notes, path, "CPU-only job(s)"
    )


def _arrival_order(
    keep: list[int],
    arrivals: np.ndarray,
    make: Callable[[int], JobSpec],
    notes: list[str] | None,
    path: Path,
    what: str,
) -> list[JobSpec]:
    """Jobs for the rows in ``keep``, sorted by arrival (stable), ids 0..n-1, the first arrival at 0."""
    skipped = len(arrivals) - len(keep)
    if skipped and notes is not None:
        notes.append(f"{path}: skipped {skipped} {what}")
    order = sorted(keep, key=lambda i: arrivals[i])
    start = float(arrivals[order[0]]) if order else 0.0
    return [replace(make(i), id=new_id, arrival=float(arrivals[i]) - start) for new_id, i in enumerate(order)]


__all__ = ["MILLI", "load_alibaba", "load_alibaba_nodes", "load_helios"]
