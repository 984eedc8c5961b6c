"""The embedded Volcano scheduler (reference/volcano.md): gang jobs from PodGroups, queues shared by the
``proportion`` or ``capacity`` plugin, actions enqueue → allocate → preempt → reclaim → backfill, and
HyperNode network-topology placement. See docs/volcano.md, "Local semantics"."""

from gangplane.schedulers.volcano.book import QueueBook, SharePolicy
from gangplane.schedulers.volcano.config import ALL_ACTIONS, UPSTREAM_DEFAULT_ACTIONS, Action, VolcanoConfig
from gangplane.schedulers.volcano.scheduler import VolcanoScheduler

__all__ = [
    "ALL_ACTIONS",
    "UPSTREAM_DEFAULT_ACTIONS",
    "Action",
    "QueueBook",
    "SharePolicy",
    "VolcanoConfig",
    "VolcanoScheduler",
]
