"""Why one job waited: the scheduler's own reasons, noted at each decision point in virtual time.

``--explain JOB`` asks the policy that replays the trace to keep, for that one job, what its scheduler said
whenever a cycle left it waiting: the ``PendingReason`` of a scheduler pass (Coscheduling, Volcano, KAI), the
workload's pending message in Kueue's core, or ``place_gang``'s explanation of a gang that is admitted but
does not fit any nodes. Explanations cost time (a per-node filter count per failed gang), so they are built
for this job only. Repeats of one reason are folded into one entry with a count and the last time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gangplane.schedulers.base import PendingReason
from gangplane.simulator.placement import NAMESPACE


@dataclass(slots=True)
class Reason:
    """One reason, first noted at ``since`` and last at ``until``, in ``times`` cycles."""

    since: float
    until: float
    status: str
    message: str
    times: int = 1


class ExplainLog:
    """The reasons noted for one job, in virtual-time order."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.reasons: list[Reason] = []

    def note(self, now: float, status: str, message: str) -> None:
        last = self.reasons[-1] if self.reasons else None
        if last is not None and (last.status, last.message) == (status, message):
            last.until, last.times = now, last.times + 1
        else:
            self.reasons.append(Reason(now, now, status, message))


def explained(policy: object) -> ExplainLog | None:
    """The log of a policy that explains a job (its ``explain_log`` attribute), else ``None``."""
    log = getattr(policy, "explain_log", None)
    return log if isinstance(log, ExplainLog) else None


def note_pass(log: ExplainLog | None, now: float, pending: Sequence[PendingReason]) -> None:
    """Note the reason a scheduler pass gave for ``log``'s job (its gang ``sim/j<id>`` or a member pod)."""
    if log is None:
        return
    group, first = f"{NAMESPACE}/j{log.job_id}", f"{NAMESPACE}/j{log.job_id}-0"
    for reason in pending:
        if reason.group == group or first in reason.pod_keys:
            log.note(now, str(reason.status), reason.message)
            return


__all__ = ["ExplainLog", "Reason", "explained", "note_pass"]
