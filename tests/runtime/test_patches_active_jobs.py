"""Runtime patches of a suspended TrainJob may change only once no replicated job of its JobSet is active
(upstream JobSet plugin ValidateObjects): the admission reads the live JobSet."""

from __future__ import annotations

from typing import Any

import pytest
from factories import runtime, torch_node, trainjob

from gangplane.clock import ManualClock
from gangplane.errors import Forbidden
from gangplane.runtime.admission import Admission
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.points import Handle
from gangplane.runtime.reader import StaticReader


def jobset(active: int) -> dict[str, Any]:
    status = {"replicatedJobsStatus": [{"name": "node", "active": active, "ready": 0, "succeeded": 0}]}
    meta = {"name": "job", "namespace": "default"}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta, "status": status}


@pytest.mark.parametrize("active", [0, 1], ids=["drained", "still-active"])
def test_patches_wait_for_active_jobs_to_drain(active: int) -> None:
    clock = ManualClock()
    admission = Admission(Framework(default_registry(), Handle(clock)), clock)
    reader = StaticReader([runtime(torch_node(), ml_policy={"numNodes": 1, "torch": {}}), jobset(active)])
    old = admission.admit(trainjob(suspend=True), reader).model.to_dict()  # as stored: defaulted
    new = {**old, "spec": {**old["spec"], "runtimePatches": [{"manager": "example.com/tuner"}]}}
    if not active:
        admission.admit(new, reader, old)
        return
    with pytest.raises(Forbidden) as err:
        admission.admit(new, reader, old)
    assert [c.path for c in err.value.causes] == ["spec.runtimePatches"]
    assert "ReplicatedJob node is still active" in err.value.causes[0].detail
