"""A five-job scenario whose every number was worked out by hand (see the comments), under FIFO and backfill.

Cluster: 2 nodes x 4 GPUs. Jobs (arrival, members x GPUs, duration):
  J0 (0, 1x4, 10)  J1 (0, 2x4, 5)  J2 (1, 1x2, 3)  J3 (2, 1x2, 20)  J4 (3, 1x4, 4)

FIFO: J0 takes node-000 at 0; J1 needs both nodes and blocks everything behind it until J0 ends at 10;
J1 runs 10-15; at 15 J2 (node-000), J3 (bin-packed next to J2 on node-000) and J4 (node-001) start.
Backfill: J1's shadow time is 10 (when J0 ends) and it reserves both nodes. J2 ends by 10 (1+3=4) so it
starts at once on node-001; J3 would run past 10 and node-001 is reserved, so it waits; J4 (ends 4+4=8)
starts when J2 frees node-001 at 4. J1 still starts at 10 and J3 at 15.
"""

from __future__ import annotations

import pytest
from sim_builders import jobs

from gangplane.simulator.bounds import check, lower_bounds
from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.engine import simulate
from gangplane.simulator.metrics import summarise
from gangplane.simulator.policies import EasyBackfill, PolicyOptions, StrictFifo

FIVE = jobs((0, 1, 4, 10), (0, 2, 4, 5), (1, 1, 2, 3), (2, 1, 2, 20), (3, 1, 4, 4))
CLUSTER = uniform_cluster(2, 4)

EXPECTED = {
    # policy: (starts, ends, nodes of each job, mean JCT, mean wait, utilisation over the arrival window [0, 3])
    "fifo": (
        [0, 10, 15, 15, 15],
        [10, 15, 18, 35, 19],
        [("node-000",), ("node-000", "node-001"), ("node-000",), ("node-000",), ("node-001",)],
        (10 + 15 + 17 + 33 + 16) / 5,  # 18.2
        (0 + 10 + 14 + 13 + 12) / 5,  # 9.8
        4 / 8,  # J0 alone holds 4 of 8 GPUs for the whole window
    ),
    "backfill": (
        [0, 10, 1, 15, 4],
        [10, 15, 4, 35, 8],
        [("node-000",), ("node-000", "node-001"), ("node-001",), ("node-000",), ("node-001",)],
        (10 + 15 + 3 + 33 + 5) / 5,  # 13.2
        (0 + 10 + 0 + 13 + 1) / 5,  # 4.8
        (4 * 1 + 6 * 2) / 3 / 8,  # 4 GPUs on [0,1), 6 on [1,3)
    ),
}


@pytest.mark.parametrize("policy", [StrictFifo, EasyBackfill], ids=["fifo", "backfill"])
def test_five_jobs_match_the_hand_computed_schedule(policy: type) -> None:
    result = simulate(FIVE, policy(CLUSTER, PolicyOptions()), CLUSTER)
    starts, ends, nodes, mean_jct, mean_wait, utilisation = EXPECTED[result.policy]
    summary = summarise(result)
    assert [r.start for r in result.records] == starts
    assert [r.end for r in result.records] == ends
    assert [tuple(sorted(r.segments[-1].nodes)) for r in result.records] == nodes
    assert summary.mean_jct == pytest.approx(mean_jct)
    assert summary.mean_wait == pytest.approx(mean_wait)
    assert summary.makespan == 35
    assert summary.utilisation == pytest.approx(utilisation)
    assert check(result, summary) == []


def test_five_jobs_lower_bounds_by_hand() -> None:
    result = simulate(FIVE, StrictFifo(CLUSTER, PolicyOptions()), CLUSTER)
    bounds = lower_bounds(result)
    assert bounds.work == (4 * 10 + 8 * 5 + 2 * 3 + 2 * 20 + 4 * 4) / 8  # 17.75
    assert bounds.longest_job == 22  # J3: 2 + 20
    assert bounds.makespan == 22
    assert bounds.mean_duration == pytest.approx(42 / 5)
