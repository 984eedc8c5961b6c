"""The Slurm command wrapper on outputs recorded from a real Slurm 22.05 (fixtures/, record_fixtures.sh)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from gangplane.schedulers.slurm.cli import (
    CommandResult,
    JobSpec,
    SlurmError,
    SubmitRejected,
    gpu_count,
    job_from_json,
    job_from_scontrol,
    parse_job_id,
    parse_scontrol_job,
    parse_sinfo_json,
    parse_squeue_json,
    sbatch_argv,
)
from gangplane.schedulers.slurm.commands import SlurmCli

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


class Recorded:
    """A runner answering from a table of argv prefixes; records every call."""

    def __init__(self, answers: dict[tuple[str, ...], CommandResult | tuple[int, str, str]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        self.calls.append(tuple(argv))
        for prefix, answer in self.answers.items():
            if tuple(argv[: len(prefix)]) == prefix:
                if isinstance(answer, CommandResult):
                    return answer
                return CommandResult(tuple(argv), *answer)
        raise AssertionError(f"unexpected command {argv}")


def test_squeue_json_gives_every_state_with_its_reason_and_comment() -> None:
    jobs = parse_squeue_json(fixture("squeue-timeout.json"))
    summary = [(j.job_id, j.name, j.state, j.reason, j.nodelist, j.comment) for j in jobs]
    assert summary == [
        (1, "ns/gone", "CANCELLED", "None", "", "gangplane:ns/gone:uid-3"),
        (2, "timeout", "TIMEOUT", "TimeLimit", "n1", "gangplane:ns/late:uid-t"),
        (3, "ns/train", "RUNNING", "None", "n[2-4]", "gangplane:ns/train:uid-1"),
        (4, "ns/waits", "PENDING", "Resources", "", "gangplane:ns/waits:uid-2"),
        (5, "gpu3", "FAILED", "BadConstraints", "", ""),
    ]
    assert jobs[1].exit_code == 15  # raw wait status: SIGTERM at the time limit
    assert jobs[2].node_count == 3 and jobs[2].partition == "slurm-bridge"


def test_newer_slurm_number_objects_and_state_lists_are_understood() -> None:
    raw = {
        "job_id": 7,
        "name": "x",
        "job_state": ["CANCELLED", "COMPLETING"],
        "node_count": {"set": True, "infinite": False, "number": 2},
        "exit_code": {"status": ["SIGNALED"], "return_code": {"set": True, "number": 0}},
        "nodes": "n[1-2]",
    }
    job = job_from_json(raw)
    assert (job.state, job.node_count, job.nodelist, job.exit_code) == ("CANCELLED", 2, "n[1-2]", 0)


@pytest.mark.parametrize(
    "text, problem",
    [
        ("not json", "did not print JSON"),
        ("[]", "not an object"),
        ('{"errors": ["boom"], "jobs": []}', "boom"),
    ],
    ids=["garbage", "array", "errors"],
)
def test_squeue_output_that_is_not_a_job_list_is_an_error(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_squeue_json(text)


def test_sinfo_json_gives_nodes_with_partitions_and_gpus() -> None:
    nodes = parse_sinfo_json(fixture("sinfo.json"))
    assert [(n.name, n.partitions, n.cpus, n.memory_mb, n.gpus, n.state) for n in nodes] == [
        (f"n{i}", ("slurm-bridge",), 4, 16384, 2, "idle") for i in range(1, 5)
    ]


@pytest.mark.parametrize(
    "gres, count",
    [
        ("gpu:2", 2),
        ("gpu:a100:4(S:0-1)", 4),
        ("gpu:a100:2,gpu:v100:1", 3),
        ("shard:8", 0),
        ("", 0),
        ("(null)", 0),
    ],
)
def test_gpu_count_reads_typed_and_untyped_gres(gres: str, count: int) -> None:
    assert gpu_count(gres) == count


def test_scontrol_line_keeps_values_with_spaces_and_maps_to_a_job() -> None:
    fields = parse_scontrol_job(fixture("scontrol-running.txt"))
    assert fields["Comment"] == "gangplane:ns/train:uid-1"
    assert fields["NodeList"] == "n[2-4]" and fields["TresPerNode"] == "gres:gpu:1"
    job = job_from_scontrol(fields)
    assert (job.job_id, job.state, job.nodelist, job.node_count) == (3, "RUNNING", "n[2-4]", 3)
    pending = job_from_scontrol(parse_scontrol_job(fixture("scontrol-pending.txt")))
    assert (pending.state, pending.reason, pending.nodelist, pending.node_count) == (
        "PENDING",
        "Priority",
        "",
        3,
    )


def test_sbatch_argv_asks_for_an_exclusive_hold_job_sized_per_node() -> None:
    spec = JobSpec(
        name="ns/train",
        comment="gangplane:ns/train:u1",
        min_nodes=2,
        max_nodes=3,
        cpus_per_task=4,
        mem_per_node_mb=2048,
        gres="gpu:2",
        partition="debug",
        account="ml",
        qos="high",
        time_limit="90",
    )
    argv = sbatch_argv(spec)
    assert argv[:2] == ["sbatch", "--parsable"]
    for flag in (
        "--nodes=2-3",
        "--ntasks-per-node=1",
        "--cpus-per-task=4",
        "--mem=2048",
        "--gres=gpu:2",
        "--partition=debug",
        "--account=ml",
        "--qos=high",
        "--time=90",
        "--exclusive",
        "--comment=gangplane:ns/train:u1",
        "--wrap=exec sleep infinity",
    ):
        assert flag in argv
    shared = sbatch_argv(JobSpec("j", "c", 1, 1, exclusive=False))
    assert (
        "--nodes=1" in shared
        and "--exclusive" not in shared
        and not any(a.startswith("--mem") for a in shared)
    )


def test_parse_job_id_accepts_the_cluster_suffix_and_rejects_noise() -> None:
    assert parse_job_id("42\n") == 42
    assert parse_job_id("42;gangplane\n") == 42
    with pytest.raises(ValueError):
        parse_job_id("Submitted batch job 42")


def test_jobs_expand_host_lists_through_scontrol_once() -> None:
    runner = Recorded(
        {
            ("squeue", "--json"): (0, fixture("squeue-mixed.json"), ""),
            ("scontrol", "show", "hostnames", "n[2-4]"): (0, fixture("hostnames.txt"), ""),
            ("scontrol", "show", "hostnames", "n1"): (0, "n1\n", ""),
        }
    )
    cli = SlurmCli(runner)
    running = {j.job_id: j.nodes for j in cli.jobs() if j.state == "RUNNING"}
    cli.jobs()
    assert running == {2: ("n1",), 3: ("n2", "n3", "n4")}
    assert runner.calls.count(("scontrol", "show", "hostnames", "n[2-4]")) == 1


def test_submit_returns_the_id_or_raises_with_slurms_reason() -> None:
    ok = SlurmCli(Recorded({("sbatch",): (0, "17\n", "")}))
    assert ok.submit(JobSpec("j", "c", 1, 1)) == 17
    rejected = SlurmCli(Recorded({("sbatch",): (1, "", fixture("sbatch-reject-nodes.txt"))}))
    with pytest.raises(SubmitRejected) as caught:
        rejected.submit(JobSpec("j", "c", 5, 5))
    assert caught.value.reason == "Node count specification invalid"


def test_job_lookup_is_none_once_slurm_forgot_it() -> None:
    cli = SlurmCli(Recorded({("scontrol", "show", "job"): (1, "", fixture("scontrol-invalid.txt"))}))
    assert cli.job(999) is None


def test_cancel_of_an_ended_job_is_quiet_but_a_dead_controller_is_an_error() -> None:
    SlurmCli(Recorded({("scancel",): (1, "", "scancel: error: Invalid job id specified\n")})).cancel(3)
    down = SlurmCli(Recorded({("scancel",): (1, "", "scancel: error: Unable to contact slurm controller\n")}))
    with pytest.raises(SlurmError, match="Unable to contact"):
        down.cancel(3)


def test_garbled_squeue_output_is_a_slurm_error() -> None:
    cli = SlurmCli(Recorded({("squeue",): (0, json.dumps({"errors": ["x"]}), "")}))
    with pytest.raises(SlurmError):
        cli.jobs()
