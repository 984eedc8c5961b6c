import pytest

from gangplane.schedulers.core import explain, feasible
from gangplane.schedulers.core.fit import requirement_mask
from gangplane.schedulers.core.objects import Requirement
from schedulers.kube_builders import node, pod, snapshot

NODES = [
    node("cpu-0", cpu="4", labels={"zone": "a", "rank": "3"}),
    node("gpu-0", cpu="32", gpu=8, labels={"zone": "a", "pool": "gpu", "rank": "10"}),
    node(
        "gpu-1",
        cpu="32",
        gpu=8,
        labels={"zone": "b", "pool": "gpu"},
        taints=[{"key": "gpu", "value": "h100", "effect": "NoSchedule"}],
    ),
    node("cordoned", cpu="32", gpu=8, unschedulable=True),
    node("notready", cpu="32", gpu=8, ready="False"),
    node(
        "soft",
        cpu="32",
        labels={"zone": "b"},
        taints=[{"key": "x", "value": "", "effect": "PreferNoSchedule"}],
    ),
]


def _names(mask) -> list[str]:
    return [NODES[i]["metadata"]["name"] for i in mask.nonzero()[0]]


def _affinity(*terms: list[dict]) -> dict:
    required = {"nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, ["cpu-0", "gpu-0", "soft"]),
        ({"gpu": 1}, ["gpu-0"]),
        ({"gpu": 1, "tolerations": [{"key": "gpu", "operator": "Exists"}]}, ["gpu-0", "gpu-1"]),
        (
            {"tolerations": [{"operator": "Exists"}]},
            ["cpu-0", "gpu-0", "gpu-1", "cordoned", "notready", "soft"],
        ),
        ({"cpu": "5"}, ["gpu-0", "soft"]),
        ({"nodeSelector": {"zone": "b"}}, ["soft"]),
        ({"affinity": _affinity([{"key": "zone", "operator": "In", "values": ["a"]}])}, ["cpu-0", "gpu-0"]),
        ({"affinity": _affinity([{"key": "pool", "operator": "DoesNotExist"}])}, ["cpu-0", "soft"]),
        (
            {"affinity": _affinity([{"key": "pool", "operator": "NotIn", "values": ["gpu"]}])},
            ["cpu-0", "soft"],
        ),
        ({"affinity": _affinity([{"key": "pool", "operator": "Exists"}])}, ["gpu-0"]),
        ({"affinity": _affinity([{"key": "rank", "operator": "Gt", "values": ["5"]}])}, ["gpu-0"]),
        ({"affinity": _affinity([{"key": "rank", "operator": "Lt", "values": ["5"]}])}, ["cpu-0"]),
        (
            {
                "affinity": _affinity(
                    [{"key": "zone", "operator": "In", "values": ["b"]}],
                    [{"key": "rank", "operator": "Exists"}],
                )
            },
            ["cpu-0", "gpu-0", "soft"],
        ),
        ({"affinity": _affinity([])}, []),  # an empty term matches nothing
    ],
    ids=[
        "plain",
        "gpu",
        "gpu-toleration",
        "tolerate-all",
        "big-cpu",
        "node-selector",
        "affinity-in",
        "affinity-doesnotexist",
        "affinity-notin",
        "affinity-exists",
        "affinity-gt",
        "affinity-lt",
        "affinity-terms-ored",
        "affinity-empty-term",
    ],
)
def test_feasible(spec: dict, expected: list[str]) -> None:
    cpu = spec.pop("cpu", "1")
    gpu = spec.pop("gpu", 0)
    snap, [p] = snapshot(NODES, pending=[pod("p", cpu=cpu, gpu=gpu, **spec)])
    assert _names(feasible(snap, p)) == expected


def test_feasible_counts_bound_pods() -> None:
    snap, [p] = snapshot(NODES, bound=[pod("b", cpu="4", node_name="cpu-0")], pending=[pod("p")])
    assert "cpu-0" not in _names(feasible(snap, p))


def test_explain_matches_kube_scheduler_wording() -> None:
    snap, [p] = snapshot(NODES, pending=[pod("p", cpu="40", gpu=1)])
    counts = explain(snap, p)
    assert counts.feasible == 0 and counts.total == 6
    # cpu-0 and soft lack both cpu and GPUs, gpu-0 lacks cpu; the rest fail earlier filters (counted once)
    assert counts.message() == (
        "0/6 nodes are available: 1 node(s) had untolerated taint {gpu: h100}, "
        "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable, "
        "2 Insufficient nvidia.com/gpu, 3 Insufficient cpu."
    )


def test_explain_too_many_pods_and_feasible_count() -> None:
    nodes = [node("a", pods=1), node("b")]
    snap, [p] = snapshot(nodes, bound=[pod("x", node_name="a")], pending=[pod("p")])
    counts = explain(snap, p)
    assert counts.message() == "1/2 nodes are available: 1 Too many pods."


def test_unknown_operator_matches_nothing() -> None:
    snap, _ = snapshot(NODES)
    assert not requirement_mask(snap, Requirement("zone", "Near", ("a",))).any()
