from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.api.core import PodSpec
from gangplane.runtime.requests import pod_request_amounts
from gangplane.schedulers.core import Requirement, ResourceIndex, Taint, Toleration, node_info, pod_info
from gangplane.schedulers.core.objects import (
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    effective_requests,
)
from gangplane.schedulers.core.resources import amount
from schedulers.kube_builders import node, pod


def _container(cpu: int, mem: int, restart: str | None = None) -> dict:
    c: dict = {"name": "c", "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}}}
    if restart:
        c["restartPolicy"] = restart
    return c


def test_effective_requests_init_sidecar_overhead() -> None:
    spec = {
        "initContainers": [_container(500, 10), _container(100, 5, "Always"), _container(2000, 1)],
        "containers": [_container(1000, 100), _container(200, 50)],
        "overhead": {"cpu": "50m"},
    }
    # regular 1200 + sidecar 100 = 1300; init peak = 2000 + 100 (sidecar started before it) = 2100; + 50
    assert effective_requests(spec)["cpu"] == 2150
    assert effective_requests(spec)["memory"] == (100 + 50 + 5) * 2**20


def test_limits_only_count_nothing() -> None:
    spec = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "4"}}}]}
    assert effective_requests(spec) == {}


containers = st.lists(
    st.tuples(st.integers(0, 4000), st.integers(0, 4000), st.sampled_from([None, "Always"])), max_size=3
)


@settings(max_examples=60, deadline=None)
@given(inits=containers, regular=containers.filter(bool))
def test_effective_requests_match_runtime_rule(inits: list, regular: list) -> None:
    spec = {
        "initContainers": [_container(c, m, r) for c, m, r in inits],
        "containers": [_container(c, m) for c, m, _ in regular],
    }
    mine = effective_requests(spec)
    theirs = pod_request_amounts(PodSpec.model_validate(spec))
    for name in mine.keys() | theirs.keys():
        assert mine.get(name, 0) == amount(name, theirs.get(name, Decimal(0)))


def test_node_info_taints_from_conditions() -> None:
    assert node_info(node("a", ready="True")).taints == ()
    assert node_info(node("a", ready="False")).taints == (Taint(NOT_READY_TAINT, "", "NoSchedule"),)
    assert node_info(node("a", ready="Unknown")).taints == (Taint(UNREACHABLE_TAINT, "", "NoSchedule"),)
    info = node_info(
        node("a", taints=[{"key": "gpu", "value": "a100", "effect": "NoExecute"}], unschedulable=True)
    )
    assert info.taints == (Taint("gpu", "a100", "NoExecute"),) and info.unschedulable
    assert info.allocatable == {"cpu": 8000, "memory": 32 * 2**30, "pods": 110}


def test_pod_info_fields() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                ]
            }
        }
    }
    obj = pod(
        "p",
        group="g",
        priority=7,
        nodeSelector={"pool": "x"},
        affinity=affinity,
        tolerations=[{"key": "gpu", "operator": "Exists"}],
        schedulingGates=[{"name": "wait"}],
    )
    info = pod_info(obj, ResourceIndex(), group_of=lambda p: "ml/g")
    assert (info.key, info.priority, info.group, info.scheduler_name) == (
        "ml/p",
        7,
        "ml/g",
        "scheduler-plugins-scheduler",
    )
    assert info.requests.tolist() == [1000, 0, 1, 0]
    assert info.affinity == ((Requirement("zone", "In", ("a",)),),)
    assert info.tolerations == (Toleration("gpu", "Exists", "", ""),)
    assert info.gated and info.node_selector == {"pool": "x"} and info.created > 0


def test_toleration_matching() -> None:
    taint = Taint("gpu", "a100", "NoSchedule")
    assert Toleration(operator="Exists").tolerates(taint)
    assert Toleration("gpu", "Exists").tolerates(taint)
    assert Toleration("gpu", "Equal", "a100").tolerates(taint)
    assert not Toleration("gpu", "Equal", "h100").tolerates(taint)
    assert not Toleration("gpu", "Exists", effect="NoExecute").tolerates(taint)
