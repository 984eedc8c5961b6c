"""The embedded schedulers, by ``spec.schedulerName``: an explicit, ordered registry (no import side effects).

Order matters: the loop runs schedulers in registry order within one pass, so earlier ones see capacity first.
``default-scheduler`` is always first. One scheduler may serve several names (Coscheduling is installed in
the default scheduler, so ``scheduler-plugins-scheduler`` pods are served by it too); each name gets its own
instance from its factory.
"""

from __future__ import annotations

from collections.abc import Callable

from gangplane.api.scheduling.coscheduling import SCHEDULER_NAME as COSCHEDULING_SCHEDULER_NAME
from gangplane.api.scheduling.kai import SCHEDULER_NAME as KAI_SCHEDULER_NAME
from gangplane.api.scheduling.volcano import SCHEDULER_NAME as VOLCANO_SCHEDULER_NAME
from gangplane.registry import NamedRegistry
from gangplane.schedulers.base import Scheduler
from gangplane.schedulers.core.objects import DEFAULT_SCHEDULER
from gangplane.schedulers.default import DefaultScheduler
from gangplane.schedulers.kai import KaiScheduler
from gangplane.schedulers.volcano import VolcanoScheduler

SchedulerFactory = Callable[[], Scheduler]


class SchedulerRegistry(NamedRegistry[SchedulerFactory]):
    """``schedulerName`` -> factory, in registration order; duplicate names are rejected."""

    kind = "scheduler"

    def build(self, names: list[str] | None = None) -> dict[str, Scheduler]:
        """Fresh instances keyed by ``schedulerName`` (all, or ``names`` in registry order)."""
        wanted = self.names() if names is None else [n for n in self.names() if n in names]
        unknown = sorted(set(names or ()) - set(self._entries))
        if unknown:
            raise KeyError(f"no scheduler named {', '.join(unknown)}")
        return {name: self._entries[name]() for name in wanted}


def default_registry() -> SchedulerRegistry:
    """Every in-tree scheduler, default first."""
    return SchedulerRegistry(
        [
            (DEFAULT_SCHEDULER, lambda: DefaultScheduler(DEFAULT_SCHEDULER)),
            (COSCHEDULING_SCHEDULER_NAME, lambda: DefaultScheduler(COSCHEDULING_SCHEDULER_NAME)),
            (VOLCANO_SCHEDULER_NAME, VolcanoScheduler),
            (KAI_SCHEDULER_NAME, KaiScheduler),
        ]
    )


__all__ = ["SchedulerFactory", "SchedulerRegistry", "default_registry"]
