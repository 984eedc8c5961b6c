"""The embedded KAI scheduler (reference/kai.md): hierarchical queues with quota, over-quota weight, limit and
priority; fair share by resource division; SubGroup gangs from KAI PodGroups or the pod-grouper's JobSet
derivation; actions allocate → reclaim → preempt; bin-pack or spread; topology levels over node labels.
See docs/kai.md, "Local semantics"."""

from gangplane.schedulers.kai.book import KaiBook
from gangplane.schedulers.kai.fairshare import ShareInput, TreeQueue, divide, divide_tree
from gangplane.schedulers.kai.scheduler import KaiScheduler
from gangplane.schedulers.kai.session import KaiConfig

__all__ = ["KaiBook", "KaiConfig", "KaiScheduler", "ShareInput", "TreeQueue", "divide", "divide_tree"]
