"""Wire models and keys of the scheduling integrations: Coscheduling, Volcano, Kueue, KAI and Slurm Bridge.

One module per integration. A runtime plugin (which writes these objects and keys) and the embedded scheduler
of the same name (which reads them) both import from here and never from each other. Kinds share names across
integrations (three ``PodGroup``s, two ``Queue``s), so this package re-exports the modules, not their classes:
``from gangplane.api.scheduling import volcano; volcano.PodGroup``.

``MODELS`` maps every served ``(apiVersion, kind)`` to its model, for dispatch when reading manifests; the
deprecated Kueue v1beta1 versions map to the same models, which convert them to v1beta2 on read.
"""

from __future__ import annotations

from types import MappingProxyType

from gangplane.api.base import OpenModel
from gangplane.api.scheduling import common, coscheduling, kai, kueue, kueue_workload, slurm, volcano

_KUEUE_KINDS: tuple[type[kueue.KueueObject], ...] = (
    kueue.ResourceFlavor,
    kueue.ClusterQueue,
    kueue.Cohort,
    kueue.LocalQueue,
    kueue.WorkloadPriorityClass,
    kueue.Topology,
    kueue_workload.Workload,
)


def _kind_of(model: type[OpenModel]) -> str:
    default = model.model_fields["kind"].default
    assert isinstance(default, str)
    return default


def _models() -> dict[tuple[str, str], type[OpenModel]]:
    models: dict[tuple[str, str], type[OpenModel]] = {
        (coscheduling.API_VERSION, coscheduling.POD_GROUP_KIND): coscheduling.PodGroup,
        (volcano.API_VERSION, volcano.POD_GROUP_KIND): volcano.PodGroup,
        (volcano.API_VERSION, volcano.QUEUE_KIND): volcano.Queue,
        (volcano.TOPOLOGY_API_VERSION, volcano.HYPER_NODE_KIND): volcano.HyperNode,
        (kai.QUEUE_API_VERSION, kai.QUEUE_KIND): kai.Queue,
        (kai.POD_GROUP_API_VERSION, kai.POD_GROUP_KIND): kai.PodGroup,
    }
    for model in _KUEUE_KINDS:
        for version in (kueue.API_VERSION, kueue.V1BETA1_API_VERSION):
            models[(version, _kind_of(model))] = model
    return models


MODELS = MappingProxyType(_models())

__all__ = ["MODELS", "common", "coscheduling", "kai", "kueue", "kueue_workload", "slurm", "volcano"]
