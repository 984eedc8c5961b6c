"""KAI's reclaim admission tables, ported onto ``KaiBook`` (reclaim_refusal, reclaimable, boundary_refusal).

Source: NVIDIA/KAI-Scheduler ``pkg/scheduler/plugins/proportion/reclaimable/reclaimable_test.go``:
``Can Reclaim Resources`` (Preemptible job, Non-Preemptible job), ``Reclaimable - Single department`` and
``Reclaimable - Multiple departments`` — every case (72de64f); ``Reclaimable - Multiple hierarchy levels``:
the two whole-GPU cases (the saturation rule of KAI #374); its other four use fractional GPUs (0.5, 1.5),
GPU sharing, which gangplane does not model. Not ported: ``mig_resources_test.go`` (MIG).
Upstream vectors are (CPU millicores, memory, GPUs); ours (GPU, CPU, memory).
Fair share, deserved and allocation are set directly, as upstream's tables set them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from gangplane.schedulers.kai.book import KaiBook
from gangplane.schedulers.kai.model import KaiQueue, Res


def vec(gpu: float, cpu: float = 0.0, mem: float = 0.0) -> Res:
    return np.array([gpu, cpu, mem], dtype=np.float64)


@dataclass
class Q:
    name: str
    parent: str | None = None
    deserved: Res = field(default_factory=lambda: vec(0))
    fair: Res = field(default_factory=lambda: vec(0))
    allocated: Res = field(default_factory=lambda: vec(0))
    non_preemptible: Res = field(default_factory=lambda: vec(0))


def book(*queues: Q) -> KaiBook:
    unlimited = np.full(3, -1.0)
    defs = [KaiQueue(q.name, q.parent, 100, unlimited, unlimited, vec(1, 1, 1), ("", q.name)) for q in queues]
    made = KaiBook(vec(100, 100_000, 100_000), defs, {})
    for q in queues:
        state = made.states[q.name]
        state.fair, state.deserved = q.fair.copy(), q.deserved.copy()
        state.allocated, state.allocated_non_preemptible = q.allocated.copy(), q.non_preemptible.copy()
    return made


# -- Can Reclaim Resources: one queue, (name, request (gpu, cpu, mem), fair, allocated, deserved, alloc NP, ok)
PREEMPTIBLE = [
    ("No allocated resources, below fair share", vec(1, 1000, 1000), vec(2, 2000, 2000), vec(0), True),
    (
        "Some resources allocated, below fair share",
        vec(1, 1000, 1000),
        vec(3, 3000, 3000),
        vec(1, 1000, 1000),
        True,
    ),
    (
        "Some resources at fair share with job, other stay below",
        vec(0, 500, 1000),
        vec(2, 2000, 2000),
        vec(1, 1000, 1000),
        True,
    ),
    ("Exactly at fair share with job", vec(1, 1000, 1000), vec(2, 2000, 2000), vec(1, 1000, 1000), True),
    ("Partially above fair share", vec(1000, 1, 1000), vec(1, 1500, 3000), vec(1, 1000, 1000), False),
    ("Fully above fair share", vec(1000, 1, 1000), vec(1, 1500, 1500), vec(1, 1000, 1000), False),
    (
        "Queue partially above fair share without job resources",
        vec(1000, 1, 1000),
        vec(0, 3000, 3000),
        vec(1, 2000, 1000),
        False,
    ),
]


@pytest.mark.parametrize(
    ("request_", "fair", "allocated", "ok"), [c[1:] for c in PREEMPTIBLE], ids=[c[0] for c in PREEMPTIBLE]
)
def test_can_reclaim_resources_preemptible(request_: Res, fair: Res, allocated: Res, ok: bool) -> None:
    kai = book(Q("queue1", fair=fair, allocated=allocated))
    assert (kai.reclaim_refusal("queue1", request_, preemptible=True) is None) is ok


NON_PREEMPTIBLE = [
    (
        "No allocated resources, below quota",
        vec(1, 1000, 1000),
        vec(2, 2000, 2000),
        vec(2, 2000, 2000),
        vec(0),
        True,
    ),
    (
        "No allocated resources, exactly at quota",
        vec(1, 1000, 1000),
        vec(1, 1000, 1000),
        vec(2, 2000, 2000),
        vec(0),
        True,
    ),
    (
        "No allocated resources, partially above quota",
        vec(1000, 1, 1000),
        vec(0, 1000, 500),
        vec(2, 2000, 2000),
        vec(0),
        False,
    ),
    (
        "Some resources allocated, below quota",
        vec(1, 1000, 1000),
        vec(3, 3000, 3000),
        vec(3, 3000, 3000),
        vec(1, 1000, 1000),
        True,
    ),
    (
        "Some preemptible resources allocated, zero quota",
        vec(1000, 1, 1000),
        vec(0),
        vec(3, 3000, 3000),
        vec(0),
        False,
    ),
    (
        "Partially above quota",
        vec(1000, 1, 1000),
        vec(0, 1500, 3000),
        vec(3, 3000, 3000),
        vec(1, 1000, 1000),
        False,
    ),
    (
        "Fully above quota",
        vec(1000, 1, 1000),
        vec(1, 1500, 1500),
        vec(3, 3000, 3000),
        vec(1, 1000, 1000),
        False,
    ),
    (
        "Queue partially over quota without job resources",
        vec(1000, 1, 1000),
        vec(0, 1500, 3000),
        vec(3, 3000, 3000),
        vec(1, 1000, 1000),
        False,
    ),
]


@pytest.mark.parametrize(
    ("request_", "deserved", "fair", "np_allocated", "ok"),
    [c[1:] for c in NON_PREEMPTIBLE],
    ids=[c[0] for c in NON_PREEMPTIBLE],
)
def test_can_reclaim_resources_non_preemptible(
    request_: Res, deserved: Res, fair: Res, np_allocated: Res, ok: bool
) -> None:
    # upstream sets Allocated = AllocatedNotPreemptible in these cases
    kai = book(
        Q("queue1", deserved=deserved, fair=fair, allocated=np_allocated, non_preemptible=np_allocated)
    )
    assert (kai.reclaim_refusal("queue1", request_, preemptible=False) is None) is ok


# -- Reclaimable: reclaimer p1 asks 1 GPU; the victim is one 1-GPU job of p2 ------------------------------------


def reclaimable(kai: KaiBook, preemptible: bool = True) -> bool:
    """Upstream ``Reclaimable``: the strategy on the victim queue before subtracting it, then the boundaries."""
    request, victim = vec(1), vec(1)
    if not kai.reclaimable("p1", request, "p2"):
        return False
    kai.release("p2", victim, True)
    return kai.boundary_refusal("p1", request, preemptible, {"p2": victim}) is None


def single_department(**edits: dict[str, float]) -> KaiBook:
    queues = {
        "p1": Q("p1", "default", deserved=vec(3), fair=vec(3), allocated=vec(2)),
        "p2": Q("p2", "default", deserved=vec(2), fair=vec(2), allocated=vec(3)),
        "default": Q("default", None, deserved=vec(5), fair=vec(5), allocated=vec(5)),
    }
    for name, fields in edits.items():
        for key, value in fields.items():
            getattr(queues[name], key)[0] = value
    return book(*queues.values())


SINGLE = [
    ("Reclaimer is below fair share, reclaimee above fair share", {}, True, True),
    (
        "Reclaimer is below fair share, reclaimer exactly at fair share",
        {"p2": {"allocated": 2}, "default": {"allocated": 4}},
        True,
        False,
    ),
    (
        "Reclaimer and reclaimee are below fair share",
        {"p2": {"allocated": 1}, "default": {"allocated": 3}},
        True,
        False,
    ),
    (
        "Reclaimer below deserved and reclaimee above deserved (within fair share)",
        {"p2": {"fair": 3}},
        True,
        True,
    ),
    (
        "Reclaimer at fair share, reclaimee above fair share, department below fair share",
        {"p1": {"allocated": 3}, "default": {"allocated": 6, "deserved": 7, "fair": 7}},
        True,
        False,
    ),
    (
        "Reclaimer at fair share, reclaimee above fair share, department above fair share",
        {"p1": {"allocated": 3}, "default": {"allocated": 6}},
        True,
        False,
    ),
    (
        "Reclaimer above deserved, attempting to reclaim for non preemptible job",
        {"p1": {"deserved": 2}},
        False,
        True,
    ),
    (
        "Reclaimer department only preemptible above deserved, attempting to reclaim for non preemptible job",
        {"p1": {"deserved": 2}, "default": {"deserved": 3}},
        False,
        True,
    ),
    (
        "Reclaimer department nonpreemtible equal to deserved, attempting to reclaim for non preemptible job",
        {"p1": {"deserved": 2}, "default": {"deserved": 3, "non_preemptible": 3}},
        False,
        False,
    ),
    (
        "Reclaimer department allocated above fair share, attempting to reclaim for job",
        {"p1": {"deserved": 2}, "default": {"deserved": 1, "fair": 1, "allocated": 3}},
        True,
        True,
    ),
]


@pytest.mark.parametrize(("edits", "preemptible", "ok"), [c[1:] for c in SINGLE], ids=[c[0] for c in SINGLE])
def test_reclaimable_single_department(
    edits: dict[str, dict[str, float]], preemptible: bool, ok: bool
) -> None:
    assert reclaimable(single_department(**edits), preemptible) is ok


def multiple_departments(**edits: dict[str, float]) -> KaiBook:
    queues = {
        "p1": Q("p1", "d1", deserved=vec(3), fair=vec(3), allocated=vec(2)),
        "p2": Q("p2", "d2", deserved=vec(2), fair=vec(2), allocated=vec(3)),
        "d1": Q("d1", None, deserved=vec(3), fair=vec(3), allocated=vec(2)),
        "d2": Q("d2", None, deserved=vec(2), fair=vec(2), allocated=vec(3)),
    }
    for name, fields in edits.items():
        for key, value in fields.items():
            getattr(queues[name], key)[0] = value
    return book(*queues.values())


MULTIPLE = [
    ("Reclaimer is below fair share, reclaimee above fair share - sanity", {}, True),
    ("Reclaimee department goes below fair share", {"p2": {"allocated": 2}, "d2": {"allocated": 2}}, False),
    (
        "Reclaimer department is below deserved and reclaimee department is above deserved but within fair share",
        {"p1": {"allocated": 1}, "d1": {"allocated": 1}, "p2": {"fair": 4}, "d2": {"fair": 4}},
        True,
    ),
]


@pytest.mark.parametrize(("edits", "ok"), [c[1:] for c in MULTIPLE], ids=[c[0] for c in MULTIPLE])
def test_reclaimable_multiple_departments(edits: dict[str, dict[str, float]], ok: bool) -> None:
    assert reclaimable(multiple_departments(**edits)) is ok


# -- Reclaimable - Multiple hierarchy levels: the cases with whole GPUs (the rest use GPU fractions) --------------


def _levels(**extra: Q) -> KaiBook:
    queues = {
        "d1": Q("d1", None, deserved=vec(4), fair=vec(4), allocated=vec(4)),
        "d1-project-1": Q("d1-project-1", "d1", deserved=vec(3), fair=vec(1), allocated=vec(0)),
        "d2": Q("d2", None, deserved=vec(3), fair=vec(3), allocated=vec(7)),
        "d2-project-1": Q("d2-project-1", "d2", deserved=vec(3), fair=vec(3), allocated=vec(7)),
        **extra,
    }
    return book(*queues.values())


def _reclaim_one_gpu(kai: KaiBook) -> bool:
    request = vec(1)
    if not kai.reclaimable("d1-project-1", request, "d2-project-1"):
        return False
    kai.release("d2-project-1", request, True)
    return kai.boundary_refusal("d1-project-1", request, True, {"d2-project-1": request}) is None


def test_reclaimer_with_lower_utilization_ratio_than_reclaimee_but_over_1() -> None:
    # d1 goes to 5/4 of its fair share, d2 stays at 6/3: the reclaimer is the less saturated (KAI #374).
    extra = Q("d1-project-2", "d1", deserved=vec(1), fair=vec(3), allocated=vec(4))
    assert _reclaim_one_gpu(_levels(**{"d1-project-2": extra}))


def test_reclamation_with_uninvolved_resources() -> None:
    # d1 is 3x over its CPU fair share, but only GPUs are requested and reclaimed: CPU is not compared.
    kai = _levels(**{"d1-project-1": Q("d1-project-1", "d1", deserved=vec(1), fair=vec(1), allocated=vec(1))})
    for name, allocated in (("d1", 3000), ("d2", 1000)):  # fair shares are read-only: set anew
        kai.states[name].allocated[1] = allocated
        kai.states[name].fair = np.array([*kai.states[name].fair[:1], 1000, *kai.states[name].fair[2:]])
    assert _reclaim_one_gpu(kai)
