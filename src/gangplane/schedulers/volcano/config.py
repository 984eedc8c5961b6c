"""The embedded Volcano scheduler's configuration: what ``volcano-scheduler.conf`` says upstream (volcano.md §5),
reduced to the choices gangplane models."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.core.scoring import Strategy
from gangplane.schedulers.volcano.book import SharePolicy


class Action(StrEnum):
    ENQUEUE = "enqueue"
    ALLOCATE = "allocate"
    PREEMPT = "preempt"
    RECLAIM = "reclaim"
    BACKFILL = "backfill"


UPSTREAM_DEFAULT_ACTIONS = (Action.ENQUEUE, Action.ALLOCATE, Action.BACKFILL)
ALL_ACTIONS = (Action.ENQUEUE, Action.ALLOCATE, Action.PREEMPT, Action.RECLAIM, Action.BACKFILL)


@dataclass(frozen=True, slots=True)
class VolcanoConfig:
    """``actions`` run in the given order. ``share_policy`` picks the ``proportion`` or ``capacity`` plugin
    (``hierarchical`` = capacity's ``enableHierarchy``). ``overcommit_factor`` is the ``overcommit``
    plugin's factor (``None`` drops the plugin). ``strategy`` is the node score (``binpack`` plugin by
    default). ``scheduler_names`` are the ``--scheduler-name`` values whose pods this scheduler owns.
    ``explain=False`` builds no "why pending" text: no pending reasons, and an Unschedulable condition says
    only how many tasks are missing (the simulator, where nobody reads them, unless ``--explain``)."""

    actions: tuple[Action, ...] = ALL_ACTIONS
    share_policy: SharePolicy = SharePolicy.PROPORTION
    hierarchical: bool = False
    overcommit_factor: float | None = 1.2
    strategy: Strategy = Strategy.BINPACK
    scheduler_names: tuple[str, ...] = (vc.SCHEDULER_NAME,)
    explain: bool = True
