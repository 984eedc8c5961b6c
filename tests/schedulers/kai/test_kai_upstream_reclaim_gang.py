"""KAI's reclaim gang table, ported case by case.

Upstream: NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/reclaim/reclaimGang_test.go``
``TestHandleGangReclaim`` (72de64f): 5/5, compared on job status as ``MatchExpectedAndRealTasks`` does.
"""

from __future__ import annotations

import pytest
from kaiupstream import BUILD, TRAIN, Job, Queue, Task, Topology, check, run

R, P = Task("Running", "node0"), Task()
QUEUES = [Queue("queue0", 0, 0), Queue("queue1", 2, 2)]

CASES = [
    Topology(
        "Reclaim other job and pipeline all tasks of job",
        jobs=[
            Job("running_job0", 1, "queue0", TRAIN, [R]),
            Job("pending_job0", 1, "queue1", BUILD, [P, P]),
        ],
        nodes={"node0": 2},
        queues=QUEUES,
        expected={"running_job0": "Releasing", "pending_job0": "Pipelined"},
    ),
    Topology(
        "If can't allocate all tasks, dont' reclaim",
        jobs=[
            Job("running_job0", 1, "queue0", TRAIN, [R]),
            Job("pending_job0", 1, "queue1", BUILD, [P, P]),
        ],
        nodes={"node0": 1},
        queues=QUEUES,
        expected={"running_job0": "Running", "pending_job0": "Pending"},
    ),
    Topology(
        "dont reclaim if will go over quota",
        jobs=[
            Job("running_job0", 10, "queue0", TRAIN, [R]),
            Job("pending_job0", 2, "queue1", BUILD, [P, P]),
        ],
        nodes={"node0": 10},
        queues=QUEUES,
        expected={"running_job0": "Running", "pending_job0": "Pending"},
    ),
    Topology(
        "reclaim mpi job",
        jobs=[
            Job("running_job0", 1, "queue0", TRAIN, [R, R]),
            Job("pending_job0", 2, "queue1", BUILD, [P]),
        ],
        nodes={"node0": 2},
        queues=QUEUES,
        expected={"running_job0": "Releasing", "pending_job0": "Pipelined"},
    ),
    Topology(
        "job reclaims from job on two nodes",
        jobs=[
            Job(
                "running-job0", 1, "queue0", TRAIN, [Task("Running", "node0", 2), Task("Running", "node1", 1)]
            ),
            Job("pending-job", 1, "queue1", TRAIN, [P]),
        ],
        nodes={"node0": 1, "node1": 1},
        queues=[Queue("queue0", 1, 1), Queue("queue1", 1, 1)],
        expected={"running-job0": "Releasing", "pending-job": "Pipelined"},
    ),
]


@pytest.mark.parametrize("top", CASES, ids=[c.name for c in CASES])
def test_reclaim_gang(top: Topology) -> None:
    out = run(top, ["reclaim"])
    check(top, out)
    if top.expected.get("running-job0") == "Releasing":  # both members go: the gang cannot run on one
        assert sorted(out.evictions) == ["ns/running-job0-0", "ns/running-job0-1"]
