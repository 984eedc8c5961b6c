"""What a preempted run keeps: nothing (restart from scratch, the default, as rigid jobs in Tiresias' and
Pollux's replays without checkpoints) or its progress (checkpoint-restart, as Tiresias and Gandiva assume),
at a ``restart_cost`` in seconds paid at the start of every resumed run (reloading the checkpoint,
re-initialising workers). Checkpoints are continuous: a preemption saves all progress but the restart cost
still being paid. A *failure* always loses the failed run's work (an unplanned crash writes no checkpoint).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Preemption:
    checkpoint: bool = False
    restart_cost: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.restart_cost) and self.restart_cost >= 0):
            raise ValueError(
                f"the restart cost must be a finite non-negative number, not {self.restart_cost}"
            )

    def overhead(self, resumed: bool) -> float:
        """Seconds a run spends before making progress: the restart cost when it resumes a checkpoint."""
        return self.restart_cost if self.checkpoint and resumed else 0.0

    def kept(self, ran: float, overhead: float) -> float:
        """Progress a preempted run of ``ran`` seconds (``overhead`` of them restarting) leaves behind."""
        return max(0.0, ran - overhead) if self.checkpoint else 0.0


__all__ = ["Preemption"]
