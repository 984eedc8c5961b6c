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
from gangplane.runtime.points import (
    BUILD,
    DEFAULT,
    ENFORCE_ML_POLICY,
    ENFORCE_POD_GROUP_POLICY,
    PRE_BUILD,
    STATUS,
    VALIDATE,
    WATCH,
)
from gangplane.runtime.registry import Entry, Registry, plugin

# Each plugin at the extension points it implements: mypy checks every class against every phase's Protocol,
# and building the registry below checks the same again, so a wrong plugin fails at import of this module.
ENTRIES: tuple[Entry, ...] = (
    plugin(TorchPlugin.name, TorchPlugin).at(VALIDATE, ENFORCE_ML_POLICY),
    plugin(MPIPlugin.name, MPIPlugin).at(WATCH, VALIDATE, ENFORCE_ML_POLICY, BUILD),
    plugin(JAXPlugin.name, JAXPlugin).at(VALIDATE, ENFORCE_ML_POLICY),
    plugin(XGBoostPlugin.name, XGBoostPlugin).at(VALIDATE, ENFORCE_ML_POLICY),
    plugin(PlainMLPlugin.name, PlainMLPlugin).at(ENFORCE_ML_POLICY),
    plugin(CoschedulingPlugin.name, CoschedulingPlugin).at(WATCH, ENFORCE_POD_GROUP_POLICY, BUILD),
    plugin(VolcanoPlugin.name, VolcanoPlugin).at(WATCH, VALIDATE, ENFORCE_POD_GROUP_POLICY, BUILD),
    plugin(KAIPlugin.name, KAIPlugin).at(VALIDATE, ENFORCE_POD_GROUP_POLICY, BUILD),
    plugin(SlurmBridgePlugin.name, SlurmBridgePlugin).at(VALIDATE, ENFORCE_POD_GROUP_POLICY),
    plugin(KueuePlugin.name, KueuePlugin).at(DEFAULT, VALIDATE, BUILD),
    plugin(JobSetPlugin.name, JobSetPlugin).at(WATCH, VALIDATE, PRE_BUILD, BUILD),
    plugin(TrainJobStatusPlugin.name, TrainJobStatusPlugin).at(STATUS),
)
_CHECKED = Registry(list(ENTRIES))  # fail fast: a plugin that breaks its contract stops the import


def default_registry() -> Registry:
    """The in-tree plugins, in their fixed order (a fresh registry; callers may merge their own)."""
    return _CHECKED.merge(Registry())


__all__ = ["ENTRIES", "default_registry"]
