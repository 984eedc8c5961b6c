"""TrainJob and runtime sizes over Kubernetes' Indexed Job maxima get a clear 422 before admission builds
anything from them (a numNodes of 2**31-1 used to render one endpoint per node until out of memory)."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from builders import RuntimeBuilder, TrainJobBuilder
from gangplane.api.trainjob_limits import MAX_NUM_NODES
from gangplane.errors import Invalid
from gangplane.server.admission import TrainerAdmission
from gangplane.server.resources import default_registry
from gangplane.store import MemoryStore
from gangplane.store.catalog import CLUSTER_TRAINING_RUNTIMES, TRAINJOBS


@pytest.fixture
def store() -> MemoryStore:
    admission = TrainerAdmission(default_registry())
    store = MemoryStore(admission=admission)
    admission.bind(store)
    store.create(
        CLUSTER_TRAINING_RUNTIMES,
        RuntimeBuilder("torch").ml_policy(numNodes=1, torch={}).trainer_job().dict(),
    )
    return store


def test_num_nodes_2_pow_31_is_refused_quickly_and_cheaply(store: MemoryStore) -> None:
    job = TrainJobBuilder("huge").runtime_ref("torch").num_nodes(2**31 - 1).dict()
    tracemalloc.start()
    started = time.monotonic()
    with pytest.raises(Invalid) as caught:
        store.create(TRAINJOBS, job)
    elapsed = time.monotonic() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert caught.value.causes[0].path == "spec.trainer.numNodes"
    assert f"less than or equal to {MAX_NUM_NODES}" in caught.value.message
    assert elapsed < 2 and peak < 10 * 1024 * 1024
    assert store.list(TRAINJOBS).items == []


def test_the_maximum_itself_is_accepted(store: MemoryStore) -> None:
    store.create(TRAINJOBS, TrainJobBuilder("big").runtime_ref("torch").num_nodes(8).dict())
    with pytest.raises(Invalid):
        store.create(
            TRAINJOBS, TrainJobBuilder("over").runtime_ref("torch").num_nodes(MAX_NUM_NODES + 1).dict()
        )


def test_runtime_sizes_are_bounded(store: MemoryStore) -> None:
    runtime = RuntimeBuilder("wide").ml_policy(numNodes=MAX_NUM_NODES + 1, torch={}).trainer_job().dict()
    with pytest.raises(Invalid) as caught:
        store.create(CLUSTER_TRAINING_RUNTIMES, runtime)
    assert caught.value.causes[0].path == "spec.mlPolicy.numNodes"
