"""Slurm's commands run for real: ``SlurmCli`` (typed calls over an injectable ``Runner``) and the
``SubprocessRunner`` that executes Slurm's binaries. The only I/O of the Slurm Bridge besides the store; the
formats and parsers it uses are pure, in ``cli.py``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from gangplane.schedulers.slurm.cli import (
    CommandResult,
    JobSpec,
    Runner,
    SlurmError,
    SlurmJob,
    SlurmNode,
    SubmitRejected,
    job_from_scontrol,
    parse_job_id,
    parse_scontrol_job,
    parse_sinfo_json,
    parse_squeue_json,
    sbatch_argv,
)

T = TypeVar("T")


class SubprocessRunner:
    """Runs Slurm's binaries; ``slurm_conf`` selects the cluster (``SLURM_CONF``), as scripts/slurm writes it."""

    def __init__(self, slurm_conf: str | None = None, *, timeout: float = 30.0) -> None:
        self.env = {**os.environ, **({"SLURM_CONF": slurm_conf} if slurm_conf else {})}
        self.timeout = timeout

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        try:
            done = subprocess.run(
                list(argv), capture_output=True, text=True, env=self.env, timeout=self.timeout, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            return CommandResult(tuple(argv), 127, "", str(err))
        return CommandResult(tuple(argv), done.returncode, done.stdout, done.stderr)


_ALREADY_ENDED = ("Invalid job id", "already completing or completed")


class SlurmCli:
    """Slurm's commands as typed calls. Raises ``SlurmError`` when a command fails or prints garbage."""

    def __init__(self, runner: Runner | None = None) -> None:
        self.runner: Runner = runner or SubprocessRunner()
        self._hostnames: dict[str, tuple[str, ...]] = {}

    def _run(self, argv: Sequence[str]) -> CommandResult:
        result = self.runner(argv)
        if result.returncode != 0:
            raise SlurmError(result)
        return result

    def submit(self, spec: JobSpec) -> int:
        result = self.runner(sbatch_argv(spec))
        if result.returncode != 0:
            raise SubmitRejected(result)
        return parse_job_id(result.stdout)

    def cancel(self, job_id: int) -> None:
        """``scancel``; cancelling a job that already ended (or is ending) is not an error."""
        result = self.runner(["scancel", str(job_id)])
        if result.returncode != 0 and not any(text in result.stderr for text in _ALREADY_ENDED):
            raise SlurmError(result)

    def jobs(self) -> list[SlurmJob]:
        """All jobs Slurm still lists, with ``nodes`` expanded."""
        result = self._run(["squeue", "--json"])
        return [self._expanded(job) for job in self._parsed(parse_squeue_json, result)]

    def job(self, job_id: int) -> SlurmJob | None:
        """One job via ``scontrol show job -o``; None once Slurm has forgotten it."""
        result = self.runner(["scontrol", "show", "job", "-o", str(job_id)])
        if result.returncode != 0:
            if "Invalid job id" in result.stderr:
                return None
            raise SlurmError(result)
        return self._expanded(job_from_scontrol(parse_scontrol_job(result.stdout)))

    def nodes(self) -> list[SlurmNode]:
        return self._parsed(parse_sinfo_json, self._run(["sinfo", "--json"]))

    def hostnames(self, hostlist: str) -> tuple[str, ...]:
        if not hostlist:
            return ()
        if hostlist not in self._hostnames:
            result = self._run(["scontrol", "show", "hostnames", hostlist])
            self._hostnames[hostlist] = tuple(result.stdout.split())
        return self._hostnames[hostlist]

    def _expanded(self, job: SlurmJob) -> SlurmJob:
        return replace(job, nodes=self.hostnames(job.nodelist)) if job.nodelist else job

    @staticmethod
    def _parsed(parse: Callable[[str], T], result: CommandResult) -> T:
        try:
            return parse(result.stdout)
        except ValueError as err:
            raise SlurmError(CommandResult(result.argv, result.returncode, "", str(err))) from err


__all__ = ["SlurmCli", "SubprocessRunner"]
