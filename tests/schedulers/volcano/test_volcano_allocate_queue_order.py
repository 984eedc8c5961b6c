"""allocate hands the turn to the queue with the best QueueOrder after every placement: a placement raises
its own queue's share, so another queue may go next. (allocate keeps the queues' order keys between
placements and computes again only the placing queue's: this pins that the key does move.)"""

from __future__ import annotations

from vcupstream import Case, check, node, pod, pod_group, queue, run

from gangplane.schedulers.volcano.book import SharePolicy
from gangplane.schedulers.volcano.config import Action


def _res(cpu: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": "1Gi"}


def test_a_placement_moves_its_queue_behind_an_emptier_one() -> None:
    # capacity: the quota test reads the capability (none here), the order reads allocated / deserved.
    # q1 and q2 tie at share 0 and q1 goes first (a1); q1's share is then 1/2 and q2's 0, so b1 (2 cpu) is
    # next and takes the rest of n1; a2 then finds no room. A stale q1 key would place a2 before b1.
    case = Case(
        "the order after a placement",
        pod_groups=[
            pod_group("a1", "ns", "q1", 1, None, "Inqueue"),
            pod_group("a2", "ns", "q1", 1, None, "Inqueue"),
            pod_group("b1", "ns", "q2", 1, None, "Inqueue"),
        ],
        pods=[
            pod("ns", "pa1", "", "Pending", _res("1"), "a1"),
            pod("ns", "pa2", "", "Pending", _res("1"), "a2"),
            pod("ns", "pb1", "", "Pending", _res("2"), "b1"),
        ],
        nodes=[node("n1", {"cpu": "3", "memory": "8Gi", "pods": "10"})],
        queues=[queue("q1", 1, deserved=_res("2")), queue("q2", 1, deserved=_res("2"))],
        binds={"ns/pa1": "n1", "ns/pb1": "n1"},
        binds_num=2,
    )
    check(case, run(case, [Action.ALLOCATE], share_policy=SharePolicy.CAPACITY))
