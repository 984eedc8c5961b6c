"""What Slurm's own commands take and print, in their machine formats: job specs, argv builders and parsers.

Pure: the commands themselves run in ``commands.py`` (``SlurmCli`` over an injectable ``Runner``, argv in,
``CommandResult`` out), so the cores may import these types without importing a subprocess. Tested on
outputs recorded from a real cluster (tests/schedulers/slurm/fixtures). What is used, and why (reference
slurm.md §C8, measured on Slurm 22.05):

- ``sbatch --parsable`` submits a *hold job*: a batch script that only sleeps, so the allocation lives until
  ``scancel`` or its time limit. Slurm < 25.05 has no external jobs (slurm-bridge's mechanism); a hold job
  gives the same all-or-nothing allocation and the same end events.
- ``squeue --json`` lists jobs (22.05 ignores ``-j``/``--states`` with ``--json``: filter here). Finished jobs
  stay listed for ``MinJobAge`` seconds.
- ``scontrol show job -o`` (one ``Key=Value`` line) for one job: ``scontrol --json`` does not exist in 22.05.
- ``scontrol show hostnames`` expands compressed host lists (``n[1-3]``); results are cached.
- ``sinfo --json`` lists nodes with their partitions, CPUs, memory and GRES.

Newer Slurm (23.02+) writes some numbers as ``{"set", "infinite", "number"}`` and ``job_state`` as a list;
the parsers accept both shapes. This module must not decide anything: bridge.py does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gangplane.errors import GangplaneError


@dataclass(frozen=True, slots=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class Runner(Protocol):
    """Runs one command to completion. Must not raise for a non-zero exit (that is in the result)."""

    def __call__(self, argv: Sequence[str]) -> CommandResult: ...


class SlurmError(GangplaneError):
    """A Slurm command failed (controller down, bad output). The caller retries later."""

    def __init__(self, result: CommandResult) -> None:
        self.result = result
        super().__init__(f"{' '.join(result.argv[:2])} failed ({result.returncode}): {slurm_message(result)}")


class SubmitRejected(SlurmError):
    """``sbatch`` refused the job; ``reason`` is Slurm's own message."""

    @property
    def reason(self) -> str:
        return slurm_message(self.result)


def slurm_message(result: CommandResult) -> str:
    """The most specific line of a failed command's stderr, without the ``sbatch: error:`` prefixes."""
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    if not lines:
        return f"exit code {result.returncode}"
    last = re.sub(r"^\w+: error: ", "", lines[-1])
    return re.sub(r"^Batch job submission failed: ", "", last)


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What one hold job asks Slurm for: ``min_nodes..max_nodes`` nodes, one task per node."""

    name: str
    comment: str
    min_nodes: int
    max_nodes: int
    cpus_per_task: int = 1
    mem_per_node_mb: int = 0  # 0: not requested
    gres: str = ""  # per node, e.g. "gpu:2"
    partition: str = ""
    account: str = ""
    qos: str = ""
    time_limit: str = ""  # Slurm --time syntax; "" = partition default
    exclusive: bool = True
    reservation: str = ""
    constraints: str = ""
    licenses: str = ""
    wckey: str = ""
    priority: int | None = None


_OPTIONAL_FLAGS = (
    ("partition", "--partition"),
    ("account", "--account"),
    ("qos", "--qos"),
    ("time_limit", "--time"),
    ("reservation", "--reservation"),
    ("constraints", "--constraint"),
    ("licenses", "--licenses"),
    ("wckey", "--wckey"),
    ("gres", "--gres"),
)


def sbatch_argv(spec: JobSpec, *, workdir: str = "/tmp") -> list[str]:
    nodes = str(spec.min_nodes) if spec.min_nodes == spec.max_nodes else f"{spec.min_nodes}-{spec.max_nodes}"
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name={spec.name}",
        f"--comment={spec.comment}",
        f"--nodes={nodes}",
    ]
    argv += ["--ntasks-per-node=1", f"--cpus-per-task={spec.cpus_per_task}"]
    argv += [f"{flag}={getattr(spec, attr)}" for attr, flag in _OPTIONAL_FLAGS if getattr(spec, attr)]
    if spec.mem_per_node_mb:
        argv.append(f"--mem={spec.mem_per_node_mb}")
    if spec.exclusive:
        argv.append("--exclusive")
    if spec.priority is not None:
        argv.append(f"--priority={spec.priority}")
    # The hold job: the batch step only sleeps; the pods run elsewhere. No output files, no requeue loops.
    argv += [f"--chdir={workdir}", "--output=/dev/null", "--no-requeue", "--wrap=exec sleep infinity"]
    return argv


def parse_job_id(stdout: str) -> int:
    """``sbatch --parsable`` prints ``<id>`` or ``<id>;<cluster>``."""
    first = stdout.strip().splitlines()[0] if stdout.strip() else ""
    head = first.split(";", 1)[0]
    if not head.isdigit():
        raise ValueError(f"sbatch --parsable printed {stdout!r}, not a job id")
    return int(head)


@dataclass(frozen=True, slots=True)
class SlurmJob:
    job_id: int
    name: str
    state: str  # base state: PENDING, RUNNING, COMPLETED, CANCELLED, TIMEOUT, NODE_FAIL, ...
    reason: str = ""  # state_reason, e.g. Resources, Priority, None
    nodelist: str = ""  # compressed, e.g. n[1-3]; "" while pending
    node_count: int = 0
    partition: str = ""
    comment: str = ""
    exit_code: int = 0
    nodes: tuple[str, ...] = field(default=())  # expanded nodelist, in allocation order
    user: str = ""  # the submitting user's name ("" when Slurm did not say)


def _number(value: Any) -> int:
    """A plain number, or 23.02+'s ``{"set": bool, "infinite": bool, "number": n}``; unset is 0."""
    if isinstance(value, dict):
        return int(value.get("number") or 0) if value.get("set", True) else 0
    return int(value) if isinstance(value, int | float) else 0


def _state(value: Any) -> str:
    """22.05 writes one string; 23.02+ a list whose first entry is the base state, then flags."""
    if isinstance(value, list):
        return str(value[0]) if value else "UNKNOWN"
    return str(value or "UNKNOWN")


def _exit_code(value: Any) -> int:
    if isinstance(value, dict):  # 23.02+: {"status": ..., "return_code": n}
        return _number(value.get("return_code"))
    return _number(value)


def job_from_json(raw: Mapping[str, Any]) -> SlurmJob:
    return SlurmJob(
        job_id=_number(raw.get("job_id")),
        name=str(raw.get("name") or ""),
        state=_state(raw.get("job_state")),
        reason=str(raw.get("state_reason") or ""),
        nodelist=str(raw.get("nodes") or ""),
        node_count=_number(raw.get("node_count")),
        partition=str(raw.get("partition") or ""),
        comment=str(raw.get("comment") or ""),
        exit_code=_exit_code(raw.get("exit_code")),
        user=str(raw.get("user_name") or ""),
    )


def _document(text: str, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{what} did not print JSON: {err}") from err
    if not isinstance(doc, dict):
        raise ValueError(f"{what} printed {type(doc).__name__}, not an object")
    if doc.get("errors"):
        raise ValueError(f"{what} reported errors: {doc['errors']}")
    return doc


def parse_squeue_json(text: str) -> list[SlurmJob]:
    """Every job ``squeue --json`` lists, ordered by id; ``nodes`` left empty (see ``SlurmCli.jobs``)."""
    jobs = [job_from_json(raw) for raw in _document(text, "squeue --json").get("jobs") or ()]
    return sorted(jobs, key=lambda job: job.job_id)


_KEY_VALUE = re.compile(r"(\S+?)=(.*?)(?=\s+\S+?=|\s*$)")


def parse_scontrol_job(line: str) -> dict[str, str]:
    """One ``scontrol show job -o`` line as ``{Key: Value}`` (values may hold spaces, e.g. ``Comment``)."""
    return {key: value.strip() for key, value in _KEY_VALUE.findall(line.strip())}


def job_from_scontrol(fields: Mapping[str, str]) -> SlurmJob:
    reason = fields.get("Reason", "")
    exit_code = fields.get("ExitCode", "0:0").split(":", 1)[0]
    nodes = fields.get("NumNodes", "0").split("-", 1)[0]
    return SlurmJob(
        job_id=int(fields["JobId"]),
        name=fields.get("JobName", ""),
        state=fields.get("JobState", "UNKNOWN"),
        reason=reason,
        nodelist="" if fields.get("NodeList") in (None, "", "(null)") else fields["NodeList"],
        node_count=int(nodes) if nodes.isdigit() else 0,
        partition=fields.get("Partition", ""),
        comment="" if fields.get("Comment") == "(null)" else fields.get("Comment", ""),
        exit_code=int(exit_code) if exit_code.isdigit() else 0,
        user=fields.get("UserId", "").split("(", 1)[0],  # "alice(1000)"
    )


@dataclass(frozen=True, slots=True)
class SlurmNode:
    name: str
    partitions: tuple[str, ...]
    cpus: int
    memory_mb: int
    gpus: int
    state: str = ""


_GPU = re.compile(r"^gpu(?::[^:(]+)?:(\d+)")


def gpu_count(gres: str) -> int:
    """GPUs in a node's GRES string, e.g. ``gpu:2``, ``gpu:a100:4(S:0-1),shard:8`` → 2, 4."""
    return sum(int(m.group(1)) for part in gres.split(",") if (m := _GPU.match(part.strip())))


def node_from_json(raw: Mapping[str, Any]) -> SlurmNode:
    state = raw.get("state")
    return SlurmNode(
        name=str(raw.get("name") or ""),
        partitions=tuple(str(p) for p in raw.get("partitions") or ()),
        cpus=_number(raw.get("cpus")),
        memory_mb=_number(raw.get("real_memory")),
        gpus=gpu_count(str(raw.get("gres") or "")),
        state=(_state(state) if isinstance(state, list) else str(state or "")).lower(),
    )


def parse_sinfo_json(text: str) -> list[SlurmNode]:
    """The nodes of ``sinfo --json`` (22.05: top-level ``nodes``), by name."""
    doc = _document(text, "sinfo --json")
    return sorted((node_from_json(raw) for raw in doc.get("nodes") or ()), key=lambda n: n.name)


__all__ = [
    "CommandResult",
    "JobSpec",
    "Runner",
    "SlurmError",
    "SlurmJob",
    "SlurmNode",
    "SubmitRejected",
    "gpu_count",
    "job_from_json",
    "job_from_scontrol",
    "parse_job_id",
    "parse_scontrol_job",
    "parse_sinfo_json",
    "parse_squeue_json",
    "sbatch_argv",
    "slurm_message",
]
