"""The in-tree plugins and their fixed order.

Order is behaviour: within each phase plugins run in this order, and ``build`` results are applied in it.
ML policies come first (they set counts), gang plugins next (PodGroups before the pods that join them), then
the JobSet builder and the single status plugin.
"""

from __future__ import annotations

from gangplane.runtime.plugins.coscheduling import CoschedulingPlugin
from gangplane.runtime.plugins.jobset import JobSetPlugin
from gangplane.runtime.plugins.plainml import PlainMLPlugin
from gangplane.runtime.plugins.status import TrainJobStatusPlugin
from gangplane.runtime.plugins.torch import TorchPlugin
from gangplane.runtime.plugins.volcano import VolcanoPlugin
from gangplane.runtime.registry import Registry


def default_registry() -> Registry:
    return Registry(
        [
            (TorchPlugin.name, TorchPlugin),
            (PlainMLPlugin.name, PlainMLPlugin),
            (CoschedulingPlugin.name, CoschedulingPlugin),
            (VolcanoPlugin.name, VolcanoPlugin),
            (JobSetPlugin.name, JobSetPlugin),
            (TrainJobStatusPlugin.name, TrainJobStatusPlugin),
        ]
    )


__all__ = ["default_registry"]
