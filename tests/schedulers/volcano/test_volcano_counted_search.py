"""``core.headroom``: the counted victim search chooses what the plain one (a real take per victim) does."""

from __future__ import annotations

import random

import pytest
from vcupstream import Case, node, pod, pod_group, queue, res, run

from gangplane.schedulers.core import headroom
from gangplane.schedulers.volcano.config import Action


def _world(seed: int) -> Case:
    """Random gangs of a few shapes filling 12 nodes from two queues; a third queue's gangs wait."""
    rng = random.Random(seed)
    nodes = [node(f"n{i:02d}", res("16", "64Gi", pods="32", nvidia_com__gpu="8")) for i in range(12)]
    pods, groups, free = [], [], {f"n{i:02d}": 8 for i in range(12)}
    for g in range(40):
        size, gpu = rng.choice([(2, 1), (2, 2), (4, 1), (1, 4)])
        hosts = [n for n, left in free.items() if left >= gpu]
        if len(hosts) < size:
            break
        q = rng.choice(["q1", "q2"])
        groups.append(pod_group(f"r{g}", "ns", q, size, None, "Running"))
        for i in range(size):
            host = rng.choice([n for n, left in free.items() if left >= gpu])
            free[host] -= gpu
            pods.append(
                pod(
                    "ns",
                    f"r{g}-{i}",
                    host,
                    "Running",
                    res("1", "1Gi", nvidia_com__gpu=str(gpu)),
                    f"r{g}",
                    created=g % 60,
                )
            )
    for g in range(6):
        size, gpu = rng.choice([(2, 1), (4, 1), (2, 2), (1, 4)])
        groups.append(pod_group(f"w{g}", "ns", "q3", size, None, "Inqueue"))
        pods += [
            pod("ns", f"w{g}-{i}", "", "Pending", res("1", "1Gi", nvidia_com__gpu=str(gpu)), f"w{g}")
            for i in range(size)
        ]
    queues = [queue("q1", 1), queue("q2", 1), queue("q3", 2)]
    return Case(f"seed {seed}", pods=pods, nodes=nodes, pod_groups=groups, queues=queues)


@pytest.mark.parametrize("seed", range(12))
def test_counted_search_matches_the_plain_one(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    case = _world(seed)
    counted = run(case, [Action.RECLAIM])
    monkeypatch.setattr(headroom.VictimSearch, "_counted", lambda self: False)
    plain = run(case, [Action.RECLAIM])
    assert counted.evicted == plain.evicted
    assert counted.pipelined == plain.pipelined
