"""The Alibaba cluster-trace-gpu-v2023 and Helios loaders on small excerpts.

Provenance: both excerpts are synthetic, written for these tests in the traces' published column formats
(alibaba/clusterdata ``cluster-trace-gpu-v2023/README.md``; S-Lab-System-Group/HeliosData ``README.md``); no
row is taken from the real traces.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gangplane.simulator.bounds import check
from gangplane.simulator.engine import simulate
from gangplane.simulator.gputraces import load_alibaba, load_alibaba_nodes, load_helios
from gangplane.simulator.metrics import summarise
from gangplane.simulator.policies import EasyBackfill, PolicyOptions
from gangplane.simulator.traces import TraceError

ALIBABA_NODES = """\
sn,cpu_milli,memory_mib,gpu,model
node-a,32000,262144,1,G3
node-b,8000,65536,0,
"""
ALIBABA_PODS = """\
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
pod-1,4000,8192,1,600,,LS,Succeeded,100,300,100
pod-2,4000,8192,1,500,,BE,Succeeded,110,210,110
pod-3,2000,1024,0,0,,BE,Running,120,140,125
pod-4,1000,1024,1,1000,,BE,Pending,130,,
"""
HELIOS = """\
job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
11,uA,vcX,16,32,2,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:51:01,600,0
12,uB,vcY,0,4,1,COMPLETED,2020-06-09 18:40:00,2020-06-09 18:40:00,2020-06-09 18:41:00,60,0
13,uB,vcY,3,6,1,FAILED,2020-06-09 18:41:00,2020-06-09 18:41:05,2020-06-09 18:42:05,60,5
"""


def _files(tmp_path: Path, **texts: str) -> dict[str, Path]:
    paths = {}
    for name, text in texts.items():
        paths[name] = tmp_path / f"{name}.csv"
        paths[name].write_text(text)
    return paths


def test_alibaba_pods_share_gpus_in_milli_units(tmp_path: Path) -> None:
    files = _files(tmp_path, nodes=ALIBABA_NODES, pods=ALIBABA_PODS)
    cluster = load_alibaba_nodes(files["nodes"])
    assert [(n.name, n.gpus, n.cpu, n.memory) for n in cluster.nodes] == [
        ("node-a", 1000, 32.0, 262144 * 2**20),
        ("node-b", 0, 8.0, 65536 * 2**20),
    ]
    notes: list[str] = []
    jobs = load_alibaba(files["pods"], notes=notes)
    assert [(j.name, j.arrival, j.gpus_per_member, j.duration, j.cpu_per_member) for j in jobs] == [
        ("pod-1", 0.0, 600, 200.0, 4.0),
        ("pod-2", 10.0, 500, 100.0, 4.0),
        ("pod-3", 20.0, 0, 15.0, 2.0),
    ]
    assert notes == [f"{files['pods']}: skipped 1 pod(s) that never ran"]
    result = simulate(jobs, EasyBackfill(cluster, PolicyOptions()), cluster)
    # 600 + 500 milli-GPUs do not fit one GPU: pod-2 waits for pod-1; the CPU-only pod backfills at once
    assert [r.start for r in result.records] == [0.0, 200.0, 20.0]
    assert check(result, summarise(result)) == []


def test_helios_gpu_jobs_become_gangs(tmp_path: Path) -> None:
    files = _files(tmp_path, helios=HELIOS)
    notes: list[str] = []
    jobs = load_helios(files["helios"], gpus_per_node=8, notes=notes)
    assert [(j.name, j.arrival, j.members, j.gpus_per_member, j.duration, j.queue) for j in jobs] == [
        ("helios-13", 0.0, 1, 3, 60.0, "vcY"),
        ("helios-11", 1.0, 2, 8, 600.0, "vcX"),
    ]
    assert jobs[1].cpu_per_member == 16.0
    assert notes == [f"{files['helios']}: skipped 1 CPU-only job(s)"]


def test_bad_values_name_file_and_line(tmp_path: Path) -> None:
    files = _files(tmp_path, pods=ALIBABA_PODS.replace("pod-2,4000", "pod-2,inf"))
    with pytest.raises(TraceError, match=r"pods.csv:3: column 'cpu_milli': 'inf' is not a finite"):
        load_alibaba(files["pods"])
    files = _files(tmp_path, pods=ALIBABA_PODS.replace("210,110", "100,110"))
    with pytest.raises(TraceError, match=r"pods.csv:3: deletion_time is before scheduled_time"):
        load_alibaba(files["pods"])
    files = _files(tmp_path, helios=HELIOS.replace(",600,0", ",nan,0"))
    with pytest.raises(TraceError, match=r"helios.csv:2: column 'duration': 'nan'"):
        load_helios(files["helios"], gpus_per_node=8)


def test_alibaba_from_the_command_line_needs_its_node_list(tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from gangplane.cli import simulate as command

    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Test root."""

    command.register(app)
    files = _files(tmp_path, nodes=ALIBABA_NODES, pods=ALIBABA_PODS)
    args = [
        "simulate",
        "--trace",
        str(files["pods"]),
        "--format",
        "alibaba",
        "-p",
        "backfill",
        "--no-progress",
    ]
    missing = CliRunner().invoke(app, args)
    assert missing.exit_code == 1 and "needs --node-list" in missing.output
    result = CliRunner().invoke(app, [*args, "--node-list", str(files["nodes"])])
    assert result.exit_code == 0, result.output
    assert "3/3" in result.output and "skipped 1 pod(s) that never ran" in result.output
