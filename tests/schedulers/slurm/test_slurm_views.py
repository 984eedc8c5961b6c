"""Store dicts as the core's views: managed pods, group membership, requests and the node mapping."""

from __future__ import annotations

from slurm_builders import node_object, pod_group_object, pod_object

from gangplane.api.scheduling.slurm import SLURM_JOB_ID_LABEL
from gangplane.schedulers.slurm.model import POD_GROUP_JOB_ANNOTATION, Ref
from gangplane.schedulers.slurm.views import bridge_view, node_names, pod_view


def with_meta(obj: dict, **meta: object) -> dict:
    obj["metadata"].update(meta)
    return obj


def test_pod_requests_follow_the_effective_request_rule() -> None:
    pod = pod_object("p", "g", cpu="500m", memory="1Gi", gpus=0)
    pod["spec"]["initContainers"] = [
        {"name": "init", "image": "x", "resources": {"requests": {"cpu": "2", "amd.com/gpu": "3"}}}
    ]
    view = pod_view(with_meta(pod, uid="u1", labels={**pod["metadata"]["labels"], SLURM_JOB_ID_LABEL: "12"}))
    assert (view.cpu_millis, view.memory_bytes, view.gpus, view.job_id) == (2000, 1024**3, 3, 12)
    assert view.ref == Ref("ns", "p", "u1") and view.pending


def test_terminating_or_bound_pods_are_not_pending() -> None:
    bound = pod_object("a", "g")
    bound["spec"]["nodeName"] = "node-1"
    leaving = with_meta(pod_object("b", "g"), deletionTimestamp="2026-01-01T00:00:00Z")
    assert not pod_view(bound).pending and not pod_view(leaving).pending and pod_view(leaving).live


def test_node_mapping_prefers_the_label_then_the_name() -> None:
    nodes = [node_object("worker-b", "n1"), node_object("worker-a", "n1"), node_object("n2")]
    assert node_names(nodes) == {"n1": "worker-a", "n2": "n2"}


def test_the_view_joins_pods_to_groups_and_keeps_strangers_apart() -> None:
    group = with_meta(pod_group_object("g", 2), uid="gu", annotations={POD_GROUP_JOB_ANNOTATION: "7"})
    other_ns = pod_object("x", "g", ns="elsewhere")
    unmanaged = pod_object("y", "g")
    unmanaged["spec"]["schedulerName"] = "default-scheduler"
    pods = [pod_object("g-1", "g"), pod_object("g-0", "g"), other_ns, unmanaged]
    view = bridge_view(pods, [group], [], [], [])
    (g,) = view.groups
    assert (g.ref, g.min_member, g.job_id) == (Ref("ns", "g", "gu"), 2, 7)
    assert [p.ref.name for p in g.pods] == ["g-0", "g-1"]
    assert [p.ref.namespace for p in view.loose_pods] == ["elsewhere"]
