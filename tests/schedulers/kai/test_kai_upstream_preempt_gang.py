"""KAI's preempt gang tables, ported case by case.

Upstream: NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/preempt/preemptGang_test.go`` (72de64f):
``TestHandleGangPreempt`` 4/4 and ``TestHandleScatteredNodesForGangPreempt`` 1/1.
"""

from __future__ import annotations

import pytest
from kaiupstream import BUILD, BUILD_PREEMPTIBLE, TRAIN, Job, Queue, Task, Topology, check, run

R, P = Task("Running", "node0"), Task()

CASES = [
    Topology(
        "Don't preempt if not all tasks can be allocated",
        jobs=[Job("running_job0", 1, "queue0", TRAIN, [R]), Job("pending_job0", 1, "queue0", BUILD, [P, P])],
        nodes={"node0": 1},
        queues=[Queue("queue0", 2, 2)],
        expected={"running_job0": "Running", "pending_job0": "Pending"},
    ),
    Topology(
        "Preempt if all tasks can be allocated",
        jobs=[Job("running_job0", 1, "queue0", TRAIN, [R]), Job("pending_job0", 1, "queue0", BUILD, [P, P])],
        nodes={"node0": 2},
        queues=[Queue("queue0", 2)],
        expected={"running_job0": "Releasing", "pending_job0": "Pipelined"},
    ),
    Topology(
        "don't preempt if will go over quota",
        jobs=[Job("running_job0", 1, "queue0", TRAIN, [R]), Job("pending_job0", 2, "queue0", BUILD, [P, P])],
        nodes={"node0": 4},
        queues=[Queue("queue0", 3)],
        expected={"running_job0": "Running", "pending_job0": "Pending"},
    ),
    Topology(
        "preempt gang job",
        jobs=[Job("running_job0", 2, "queue0", TRAIN, [R, R]), Job("pending_job0", 2, "queue0", BUILD, [P])],
        nodes={"node0": 4},
        queues=[Queue("queue0", 3)],
        expected={"running_job0": "Releasing", "pending_job0": "Pipelined"},
    ),
]


@pytest.mark.parametrize("top", CASES, ids=[c.name for c in CASES])
def test_gang_preempt(top: Topology) -> None:
    check(top, run(top, ["preempt"]))


def test_scattered_nodes_for_gang_preempt() -> None:
    # "flaky scenario": four 1-GPU nodes each run a 1-GPU train job; a build-preemptible gang of two pods
    # pinned to node1 and node3 preempts exactly the jobs on those nodes.
    jobs = [
        Job(f"job-{i}-0", 1, "queue", TRAIN, [Task("Running", f"node{i}")], age_minutes=i) for i in range(4)
    ]
    preemptor = Job(
        "preemptor", 1, "queue", BUILD_PREEMPTIBLE, [Task(affinity="node1"), Task(affinity="node3")]
    )
    top = Topology(
        "flaky scenario",
        jobs=[*jobs, preemptor],
        nodes={f"node{i}": 1 for i in range(4)},
        queues=[Queue("queue", 0, 1, limit=-1)],
        expected={"preemptor": "Pipelined"},
    )
    out = run(top, ["preempt"])
    check(top, out)
    assert sorted(out.evictions) == ["ns/job-1-0-0", "ns/job-3-0-0"]
