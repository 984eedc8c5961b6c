"""The in-tree plugins and their fixed order.

Order is behaviour: within each phase plugins run in this order, and ``build`` results are applied in it.
ML policies come first (they set counts), gang plugins next (PodGroups before the pods that join them), then
the JobSet builder and the single status plugin.
"""

from __future__ import annotations

from gangplane.runtime.plugins.coscheduling import CoschedulingPlugin
from gangplane.runtime.plugins.jax import JAXPlugin
from gangplane.runtime.plugins.jobset import JobSetPlugin
from gangplane.runtime.plugins.kai import KAIPlugin
from gangplane.runtime.plugins.kueue import KueuePlugin
from gangplane.runtime.plugins.mpi import MPIPlugin
from gangplane.runtime.plugins.plainml import PlainMLPlugin
from gangplane.runtime.plugins.slurm import SlurmBridgePlugin
from gangplane.runtime.plugins.status import TrainJobStatusPlugin
from gangplane.runtime.plugins.torch import TorchPlugin
from gangplane.runtime.plugins.volcano import VolcanoPlugin
from gangplane.runtime.plugins.xgboost import XGBoostPlugin
from gangplane.runtime.registry import Registry


def default_registry() -> Registry:
    return Registry(
        [
            (TorchPlugin.name, TorchPlugin),
            (MPIPlugin.name, MPIPlugin),
            (JAXPlugin.name, JAXPlugin),
            (XGBoostPlugin.name, XGBoostPlugin),
            (PlainMLPlugin.name, PlainMLPlugin),
            (CoschedulingPlugin.name, CoschedulingPlugin),
            (VolcanoPlugin.name, VolcanoPlugin),
            (KAIPlugin.name, KAIPlugin),
            (SlurmBridgePlugin.name, SlurmBridgePlugin),
            (KueuePlugin.name, KueuePlugin),
            (JobSetPlugin.name, JobSetPlugin),
            (TrainJobStatusPlugin.name, TrainJobStatusPlugin),
        ]
    )


__all__ = ["default_registry"]
