"""Scheduling wire models against the upstream CRDs: round trips, schema validity, v1beta1 conversion, and the
schema checker itself (it must catch a wrong field name and a wrong type, or the other checks prove nothing).

Also checks every upstream ClusterTrainingRuntime against its CRD and through ``api.trainer``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from crdschema import (
    SHARED_DIR,
    errors_for_schema,
    load_yaml,
    load_yaml_all,
    normalize_int_or_string,
    validate_against_crd,
)
from gangplane.api.core import PodTemplateSpec, Taint, Toleration
from gangplane.api.meta import Condition, ObjectMeta
from gangplane.api.scheduling import MODELS, coscheduling, kai, kueue, kueue_workload, slurm, volcano
from gangplane.api.scheduling.common import LabelSelector, LabelSelectorRequirement
from gangplane.api.trainer import ClusterTrainingRuntime

pytestmark = pytest.mark.skipif(SHARED_DIR is None, reason="shared/crds not available")

T0 = "2026-08-01T10:00:00Z"


def meta(name: str, namespace: str | None = None, **labels: str) -> ObjectMeta:
    return ObjectMeta(name=name, namespace=namespace, labels=labels or None)


def pod_template(gpus: str = "1") -> PodTemplateSpec:
    container = {
        "name": "node",
        "image": "pytorch/pytorch:2.13.0",
        "resources": {"requests": {"nvidia.com/gpu": gpus}},
    }
    return PodTemplateSpec.from_dict({"spec": {"containers": [container], "restartPolicy": "Never"}})


# ---------------------------------------------------------------- examples built in Python


def coscheduling_pod_group() -> coscheduling.PodGroup:
    return coscheduling.PodGroup(
        metadata=meta("train-a", "ml"),
        spec=coscheduling.PodGroupSpec(
            min_member=4, min_resources={"cpu": "32", "memory": "128Gi"}, schedule_timeout_seconds=120
        ),
        status=coscheduling.PodGroupStatus(
            phase=coscheduling.PodGroupPhase.RUNNING,
            occupied_by="ml/train-a",
            running=4,
            succeeded=0,
            failed=0,
            schedule_start_time=T0,
        ),
    )


def volcano_pod_group() -> volcano.PodGroup:
    topology = volcano.NetworkTopology(mode=volcano.NetworkTopologyMode.HARD, highest_tier_allowed=1)
    sub_group = volcano.SubGroupPolicy(
        name="workers",
        sub_group_size=2,
        min_sub_groups=1,
        label_selector=LabelSelector(
            match_expressions=[LabelSelectorRequirement(key="role", operator="Exists")]
        ),
        match_label_keys=["jobset.sigs.k8s.io/job-index"],
        network_topology=volcano.NetworkTopology(mode="soft", highest_tier_name="rack"),
    )
    condition = volcano.PodGroupCondition(
        type=volcano.PodGroupConditionType.UNSCHEDULABLE,
        status="True",
        transition_id="5f1c",
        last_transition_time=T0,
        reason=volcano.PodGroupConditionReason.NOT_ENOUGH_RESOURCES,
        message="2/4 tasks in gang unschedulable",
    )
    return volcano.PodGroup(
        metadata=meta("train-a", "ml"),
        spec=volcano.PodGroupSpec(
            min_member=4,
            min_task_member={"node": 4},
            min_resources={"cpu": "32", "nvidia.com/gpu": "8"},
            queue="team-a",
            priority_class_name="high",
            network_topology=topology,
            sub_group_policy=[sub_group],
        ),
        status=volcano.PodGroupStatus(phase=volcano.PodGroupPhase.INQUEUE, conditions=[condition], running=2),
    )


def volcano_queue() -> volcano.Queue:
    return volcano.Queue(
        metadata=meta("team-a"),
        spec=volcano.QueueSpec(
            weight=2,
            capability={"cpu": "64", "nvidia.com/gpu": "16"},
            deserved={"cpu": "32", "nvidia.com/gpu": "8"},
            guarantee=volcano.Guarantee(resource={"nvidia.com/gpu": "4"}),
            reclaimable=True,
            parent="root",
            priority=10,
        ),
        status=volcano.QueueStatus(
            state=volcano.QueueState.OPEN,
            allocated={"cpu": "8"},
            running=1,
            pending=2,
            reservation=volcano.Reservation(nodes=["n1"], resource={"cpu": "4"}),
        ),
    )


def volcano_hyper_node() -> volcano.HyperNode:
    by_label = volcano.MemberSelector(label_match=LabelSelector(match_labels={"topology-rack": "rack-0"}))
    by_regex = volcano.MemberSelector(regex_match=volcano.RegexMatch(pattern="^gpu-rack0-.*"))
    return volcano.HyperNode(
        metadata=meta("rack-0"),
        spec=volcano.HyperNodeSpec(
            tier=1,
            tier_name="rack",
            members=[
                volcano.HyperNodeMember(type=volcano.MemberType.NODE, selector=by_label),
                volcano.HyperNodeMember(type=volcano.MemberType.NODE, selector=by_regex),
            ],
        ),
        status=volcano.HyperNodeStatus(
            node_count=8,
            conditions=[
                Condition(type="Ready", status="True", reason="Synced", message="", last_transition_time=T0)
            ],
        ),
    )


def kueue_resource_flavor() -> kueue.ResourceFlavor:
    return kueue.ResourceFlavor(
        metadata=meta("a100"),
        spec=kueue.ResourceFlavorSpec(
            node_labels={"gpu-type": "a100"},
            node_taints=[Taint(key="gpu", value="true", effect="NoSchedule")],
            tolerations=[Toleration(key="gpu", operator="Exists", effect="NoSchedule")],
            topology_name="default",
        ),
    )


def quota(name: str, nominal: str, **limits: str) -> kueue.ResourceQuota:
    return kueue.ResourceQuota(name=name, nominal_quota=nominal, **limits)


def gpu_group(*quotas: kueue.ResourceQuota) -> kueue.ResourceGroup:
    covered = [q.name for q in quotas]
    return kueue.ResourceGroup(
        covered_resources=covered, flavors=[kueue.FlavorQuotas(name="a100", resources=list(quotas))]
    )


def kueue_cluster_queue() -> kueue.ClusterQueue:
    group = gpu_group(
        quota("cpu", "64"), quota("nvidia.com/gpu", "8", borrowing_limit="8", lending_limit="4")
    )
    usage = kueue.FlavorUsage(
        name="a100", resources=[kueue.ResourceUsage(name="cpu", total="12", borrowed="0")]
    )
    return kueue.ClusterQueue(
        metadata=meta("team-a"),
        spec=kueue.ClusterQueueSpec(
            cohort_name="shared-pool",
            namespace_selector=LabelSelector(),
            queueing_strategy=kueue.QueueingStrategy.BEST_EFFORT_FIFO,
            resource_groups=[group],
            preemption=kueue.ClusterQueuePreemption(
                within_cluster_queue=kueue.PreemptionPolicy.LOWER_PRIORITY,
                reclaim_within_cohort=kueue.PreemptionPolicy.ANY,
                borrow_within_cohort=kueue.BorrowWithinCohort(
                    policy="LowerPriority", max_priority_threshold=100
                ),
            ),
            flavor_fungibility=kueue.FlavorFungibility(
                when_can_borrow="TryNextFlavor", when_can_preempt="TryNextFlavor"
            ),
            stop_policy=kueue.StopPolicy.NONE,
            fair_sharing=kueue.FairSharing(weight="2"),
            admission_checks_strategy=kueue.AdmissionChecksStrategy(
                admission_checks=[kueue.AdmissionCheckStrategyRule(name="prov", on_flavors=["a100"])]
            ),
        ),
        status=kueue.ClusterQueueStatus(
            conditions=[
                Condition(type="Active", status="True", reason="Ready", message="ok", last_transition_time=T0)
            ],
            flavors_usage=[usage],
            flavors_reservation=[usage],
            pending_workloads=3,
            reserving_workloads=1,
            admitted_workloads=1,
            fair_sharing=kueue.FairSharingStatus(weighted_share=200),
        ),
    )


def kueue_cohort() -> kueue.Cohort:
    return kueue.Cohort(
        metadata=meta("shared-pool"),
        spec=kueue.CohortSpec(
            parent_name="org",
            resource_groups=[gpu_group(quota("nvidia.com/gpu", "4", lending_limit="2"))],
            fair_sharing=kueue.FairSharing(weight="1"),
        ),
        status=kueue.CohortStatus(fair_sharing=kueue.FairSharingStatus(weighted_share=0)),
    )


def kueue_local_queue() -> kueue.LocalQueue:
    usage = kueue.FlavorUsage(name="a100", resources=[kueue.ResourceUsage(name="cpu", total="4")])
    return kueue.LocalQueue(
        metadata=meta("team-a", "ml"),
        spec=kueue.LocalQueueSpec(cluster_queue="team-a", stop_policy="None"),
        status=kueue.LocalQueueStatus(pending_workloads=1, admitted_workloads=2, flavors_usage=[usage]),
    )


def kueue_priority_class() -> kueue.WorkloadPriorityClass:
    return kueue.WorkloadPriorityClass(metadata=meta("high"), value=1000, description="production training")


def kueue_topology() -> kueue.Topology:
    levels = [
        kueue.TopologyLevel(node_label=label)
        for label in ("cloud/block", "cloud/rack", "kubernetes.io/hostname")
    ]
    return kueue.Topology(metadata=meta("default"), spec=kueue.TopologySpec(levels=levels))


def kueue_workload_example() -> kueue_workload.Workload:
    pod_set = kueue_workload.PodSet(
        name="node",
        count=4,
        template=pod_template("2"),
        topology_request=kueue_workload.PodSetTopologyRequest(
            required="cloud/rack", pod_index_label="batch.kubernetes.io/job-completion-index"
        ),
    )
    assignment = kueue_workload.PodSetAssignment(
        name="node", flavors={"nvidia.com/gpu": "a100"}, resource_usage={"nvidia.com/gpu": "8"}, count=4
    )
    admitted = Condition(
        type="Admitted", status="True", reason="Admitted", message="ok", last_transition_time=T0
    )
    return kueue_workload.Workload(
        metadata=meta("trainjob-train-a-3f2a1", "ml", **{kueue.QUEUE_NAME_LABEL: "team-a"}),
        spec=kueue_workload.WorkloadSpec(
            pod_sets=[pod_set],
            queue_name="team-a",
            priority=1000,
            priority_class_ref=kueue_workload.PriorityClassRef(
                group="kueue.x-k8s.io", kind="WorkloadPriorityClass", name="high"
            ),
            active=True,
        ),
        status=kueue_workload.WorkloadStatus(
            conditions=[admitted],
            admission=kueue_workload.Admission(cluster_queue="team-a", pod_set_assignments=[assignment]),
            requeue_state=kueue_workload.RequeueState(count=1, requeue_at=T0),
            reclaimable_pods=[kueue_workload.ReclaimablePod(name="node", count=0)],
            accumulated_past_execution_time_seconds=30,
        ),
    )


def kai_queue() -> kai.Queue:
    def share(quota: float) -> kai.QueueResource:
        return kai.QueueResource(quota=quota, limit=kai.UNLIMITED, over_quota_weight=1)

    return kai.Queue(
        metadata=meta("team-a"),
        spec=kai.QueueSpec(
            display_name="Team A",
            parent_queue=kai.DEFAULT_PARENT_QUEUE,
            priority=kai.DEFAULT_QUEUE_PRIORITY,
            resources=kai.QueueResources(gpu=share(8), cpu=share(64000), memory=share(256000.5)),
            reclaim_min_runtime="10m",
        ),
        status=kai.QueueStatus(
            child_queues=[],
            allocated={"nvidia.com/gpu": "2"},
            conditions=[kai.KaiCondition(type="Ready", status="True")],
        ),
    )


def kai_pod_group() -> kai.PodGroup:
    leaf = kai.SubGroup(name="node-replica-0", parent="node", min_member=4)
    reason = kai.UnschedulableExplanation(
        reason=kai.UnschedulableReason.OVER_LIMIT, message="queue over limit"
    )
    condition = kai.SchedulingCondition(
        type=kai.SCHEDULING_CONDITION_UNSCHEDULABLE_ON_NODE_POOL,
        node_pool="default",
        reasons=[reason],
        transition_id="1",
        last_transition_time=T0,
    )
    return kai.PodGroup(
        metadata=meta("pg-train-a-1234", "ml"),
        spec=kai.PodGroupSpec(
            min_sub_group=1,
            queue="team-a",
            priority_class_name="train",
            preemptibility=kai.Preemptibility.PREEMPTIBLE,
            topology_constraint=kai.TopologyConstraint(topology="default", required_topology_level="rack"),
            sub_groups=[kai.SubGroup(name="node", min_sub_group=1), leaf],
            mark_unschedulable=True,
        ),
        status=kai.PodGroupStatus(
            scheduling_conditions=[condition],
            resources_status=kai.PodGroupResourcesStatus(requested={"nvidia.com/gpu": "4"}),
        ),
    )


BUILT: dict[str, Callable[[], Any]] = {
    "coscheduling-PodGroup": coscheduling_pod_group,
    "volcano-PodGroup": volcano_pod_group,
    "volcano-Queue": volcano_queue,
    "volcano-HyperNode": volcano_hyper_node,
    "kueue-ResourceFlavor": kueue_resource_flavor,
    "kueue-ClusterQueue": kueue_cluster_queue,
    "kueue-Cohort": kueue_cohort,
    "kueue-LocalQueue": kueue_local_queue,
    "kueue-WorkloadPriorityClass": kueue_priority_class,
    "kueue-Topology": kueue_topology,
    "kueue-Workload": kueue_workload_example,
    "kai-Queue": kai_queue,
    "kai-PodGroup": kai_pod_group,
}


@pytest.mark.parametrize("factory", BUILT.values(), ids=BUILT.keys())
def test_built_example_round_trips_unchanged(factory: Callable[[], Any]) -> None:
    wire = factory().to_dict()
    model = MODELS[(wire["apiVersion"], wire["kind"])]
    assert model is type(factory())
    assert model.from_dict(wire).to_dict() == wire


@pytest.mark.parametrize("factory", BUILT.values(), ids=BUILT.keys())
def test_built_example_is_valid_for_the_upstream_crd(factory: Callable[[], Any]) -> None:
    assert validate_against_crd(factory().to_dict()) == []


# ---------------------------------------------------------------- examples as users write them (YAML)

YAML_EXAMPLES = {
    "coscheduling-PodGroup": """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: train-a, namespace: ml}
spec: {minMember: 4, scheduleTimeoutSeconds: 120, minResources: {cpu: 32, memory: 128Gi, nvidia.com/gpu: 4}}
""",
    "volcano-PodGroup": """
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: train-a, namespace: ml}
spec:
  minMember: 4
  queue: team-a
  priorityClassName: high
  minResources: {cpu: "32", memory: 128Gi, nvidia.com/gpu: "8"}
  networkTopology: {mode: hard, highestTierAllowed: 1}
""",
    "volcano-Queue": """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team-a}
spec:
  weight: 1
  reclaimable: true
  capability: {cpu: 64, memory: 256Gi}
  guarantee: {resource: {nvidia.com/gpu: 2}}
""",
    "volcano-HyperNode": """
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: spine-0}
spec:
  tier: 2
  tierName: spine
  members:
  - {type: HyperNode, selector: {exactMatch: {name: rack-0}}}
  - {type: HyperNode, selector: {exactMatch: {name: rack-1}}}
""",
    "kueue-ResourceFlavor": """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
spec: {nodeLabels: {gpu-type: a100}, nodeTaints: [{key: gpu, value: "true", effect: NoSchedule}],
       tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]}
""",
    "kueue-ClusterQueue": """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: shared-pool
  namespaceSelector: {}
  queueingStrategy: BestEffortFIFO
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: a100
      resources:
      - {name: cpu, nominalQuota: 64}
      - {name: memory, nominalQuota: 512Gi}
      - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 8, lendingLimit: 4}
  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}
""",
    "kueue-Cohort": """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: shared-pool}
spec:
  parentName: org
  fairSharing: {weight: 2}
""",
    "kueue-LocalQueue": """
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team-a, namespace: ml}
spec: {clusterQueue: team-a}
""",
    "kueue-WorkloadPriorityClass": """
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 10000
description: production training
""",
    "kueue-Topology": """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: default}
spec: {levels: [{nodeLabel: cloud/block}, {nodeLabel: kubernetes.io/hostname}]}
""",
    "kueue-Workload": """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: trainjob-train-a-3f2a1, namespace: ml}
spec:
  queueName: team-a
  podSets:
  - name: node
    count: 2
    template:
      spec:
        containers: [{name: node, image: pytorch/pytorch, resources: {requests: {cpu: 4, nvidia.com/gpu: 1}}}]
status:
  admission:
    clusterQueue: team-a
    podSetAssignments:
    - {name: node, count: 2, flavors: {nvidia.com/gpu: a100}, resourceUsage: {nvidia.com/gpu: 2}}
""",
    "kai-Queue": """
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-a}
spec:
  parentQueue: default-parent-queue
  priority: 100
  resources:
    gpu:    {quota: 8,     limit: -1, overQuotaWeight: 1}
    cpu:    {quota: 64000, limit: -1, overQuotaWeight: 1}
    memory: {quota: 256000, limit: -1, overQuotaWeight: 0.5}
""",
    "kai-PodGroup": """
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: pg-t-1234, namespace: ml}
spec:
  queue: team-a
  priorityClassName: train
  minSubGroup: 1
  subGroups:
  - {name: node, minSubGroup: 1}
  - {name: node-replica-0, parent: node, minMember: 4}
""",
}


def load(text: str) -> dict[str, Any]:
    document = load_yaml(text)
    assert isinstance(document, dict)
    return document


def test_every_kind_has_a_built_and_a_yaml_example() -> None:
    assert YAML_EXAMPLES.keys() == BUILT.keys()


@pytest.mark.parametrize("text", YAML_EXAMPLES.values(), ids=YAML_EXAMPLES.keys())
def test_yaml_example_round_trips_exactly(text: str) -> None:
    document = load(text)
    wire = MODELS[(document["apiVersion"], document["kind"])].from_dict(document).to_dict()
    assert wire == document
    assert validate_against_crd(wire) == []


def test_models_cover_every_served_version_of_every_scheduling_crd() -> None:
    served = set()
    for path in sorted((SHARED_DIR / "crds").glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        if group not in {"trainer.kubeflow.org", "jobset.x-k8s.io"}:
            served |= {(f"{group}/{v['name']}", kind) for v in crd["spec"]["versions"] if v.get("served")}
    assert served == set(MODELS)


def test_open_models_keep_fields_they_do_not_model() -> None:
    document = load(YAML_EXAMPLES["volcano-Queue"])
    document["spec"]["extendClusters"] = [{"name": "east", "weight": 1}]
    document["spec"]["futureField"] = {"x": 1}
    assert volcano.Queue.from_dict(document).to_dict() == document


# ---------------------------------------------------------------- Kueue v1beta1 input


def test_v1beta1_cluster_queue_is_read_as_v1beta2() -> None:
    old = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a"},
        "spec": {
            "cohort": "shared-pool",
            "admissionChecks": ["prov"],
            "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
        },
    }
    wire = kueue.ClusterQueue.from_dict(old).to_dict()
    assert wire["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert wire["spec"] == {
        "cohortName": "shared-pool",
        "admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}]},
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
    }
    assert validate_against_crd(old) == []
    assert validate_against_crd(wire) == []


def test_v1beta2_field_wins_over_its_v1beta1_name() -> None:
    spec = kueue.ClusterQueueSpec.from_dict({"cohort": "old", "cohortName": "new"})
    assert spec.to_dict() == {"cohortName": "new"}


@pytest.mark.parametrize(
    ("source", "ref"),
    [
        (
            "kueue.x-k8s.io/workloadpriorityclass",
            {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass"},
        ),
        ("scheduling.k8s.io/priorityclass", {"group": "scheduling.k8s.io", "kind": "PriorityClass"}),
        ("", None),
    ],
    ids=["workload-priority-class", "pod-priority-class", "no-source"],
)
def test_v1beta1_workload_priority_class_becomes_a_ref(source: str, ref: dict[str, str] | None) -> None:
    old = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ml"},
        "spec": {
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}],
            "priority": 10,
            "priorityClassName": "high",
            "priorityClassSource": source,
        },
        "status": {"accumulatedPastExexcutionTimeSeconds": 5},
    }
    wire = kueue_workload.Workload.from_dict(old).to_dict()
    assert wire["spec"].get("priorityClassRef") == (ref and {**ref, "name": "high"})
    assert wire["status"] == {"accumulatedPastExecutionTimeSeconds": 5}
    assert validate_against_crd(wire) == []


# ---------------------------------------------------------------- the schema checker catches mistakes


def edited(
    factory: Callable[[], Any], path: tuple[str | int, ...], rename: str | None = None, value: Any = None
) -> dict:
    """The built example with the key at ``path`` renamed (wrong alias) or set to ``value`` (wrong type)."""
    wire = factory().to_dict()
    parent = wire
    for step in path[:-1]:
        parent = parent[step]
    if rename is not None:
        parent[rename] = parent.pop(path[-1])
    else:
        parent[path[-1]] = value
    return wire


WRONG_NAMES = [
    (coscheduling_pod_group, ("spec", "scheduleTimeoutSeconds"), "scheduleTimeoutSecond", "$.spec"),
    (
        volcano_pod_group,
        ("spec", "networkTopology", "highestTierAllowed"),
        "highestTierAlowed",
        "$.spec.networkTopology",
    ),
    (
        volcano_pod_group,
        ("status", "conditions", 0, "transitionID"),
        "transitionId",
        "$.status.conditions[0]",
    ),
    (kueue_cluster_queue, ("spec", "cohortName"), "cohort", "$.spec"),
    (
        kueue_workload_example,
        ("spec", "podSets", 0, "topologyRequest"),
        "topology_request",
        "$.spec.podSets[0]",
    ),
    (kai_queue, ("spec", "resources", "gpu", "overQuotaWeight"), "overquotaWeight", "$.spec.resources.gpu"),
]


@pytest.mark.parametrize(("factory", "path", "wrong", "at"), WRONG_NAMES, ids=[w[2] for w in WRONG_NAMES])
def test_checker_rejects_a_wrong_field_name(
    factory: Callable[[], Any], path: tuple, wrong: str, at: str
) -> None:
    errors = validate_against_crd(edited(factory, path, rename=wrong))
    assert len(errors) == 1
    assert errors[0].startswith(f"{at}: Additional properties are not allowed ('{wrong}' was unexpected)")


WRONG_TYPES = [
    (
        coscheduling_pod_group,
        ("spec", "minMember"),
        "four",
        "$.spec.minMember: 'four' is not of type 'integer'",
    ),
    (volcano_queue, ("spec", "reclaimable"), "yes", "$.spec.reclaimable: 'yes' is not of type 'boolean'"),
    (
        volcano_hyper_node,
        ("spec", "members"),
        {"type": "Node"},
        "$.spec.members: {'type': 'Node'} is not of type",
    ),
    (kueue_local_queue, ("spec", "clusterQueue"), 7, "$.spec.clusterQueue: 7 is not of type 'string'"),
    (kueue_priority_class, ("value",), "1000", "$.value: '1000' is not of type 'integer'"),
    (kai_pod_group, ("spec", "markUnschedulable"), "true", "$.spec.markUnschedulable: 'true' is not of type"),
    (
        kai_queue,
        ("spec", "resources", "gpu", "quota"),
        "8",
        "$.spec.resources.gpu.quota: '8' is not of type 'number'",
    ),
]


@pytest.mark.parametrize(
    ("factory", "path", "value", "error"), WRONG_TYPES, ids=[e[3].split(":")[0] for e in WRONG_TYPES]
)
def test_checker_rejects_a_wrong_type(
    factory: Callable[[], Any], path: tuple, value: Any, error: str
) -> None:
    errors = validate_against_crd(edited(factory, path, value=value))
    assert len(errors) == 1
    assert errors[0].startswith(error)


@pytest.mark.parametrize(
    ("quantity", "valid"),
    [
        ("8", True),
        (8, True),
        ("500m", True),
        ("1.5Gi", True),
        ("8 GPUs", False),
        (True, False),
        (None, False),
    ],
)
def test_checker_treats_int_or_string_like_the_api_server(quantity: Any, valid: bool) -> None:
    wire = edited(coscheduling_pod_group, ("spec", "minResources", "cpu"), value=quantity)
    assert (validate_against_crd(wire) == []) is valid


def test_checker_rejects_duplicate_keys_of_a_map_list() -> None:
    wire = kueue_cluster_queue().to_dict()
    flavors = wire["spec"]["resourceGroups"][0]["flavors"]
    flavors.append(flavors[0])
    assert validate_against_crd(wire) == [
        "$.spec.resourceGroups[0].flavors: items 0 and 1 have the same map key {'name': 'a100'}"
    ]


def test_checker_applies_map_key_defaults() -> None:
    wire = kueue_workload_example().to_dict()
    pod_set = wire["spec"]["podSets"][0]
    wire["spec"]["podSets"] = [{**pod_set, "name": "main"}, {k: v for k, v in pod_set.items() if k != "name"}]
    assert validate_against_crd(wire) == [
        "$.spec.podSets: items 0 and 1 have the same map key {'name': 'main'}"
    ]


def test_checker_accepts_any_top_level_metadata() -> None:
    wire = kueue_local_queue().to_dict()
    wire["metadata"]["notAMetadataField"] = {"x": 1}
    assert validate_against_crd(wire) == []


@pytest.mark.parametrize(
    ("api_version", "kind", "error"),
    [
        ("kueue.x-k8s.io/v1alpha1", "Workload", "$.apiVersion: Workload.kueue.x-k8s.io serves"),
        ("example.com/v1", "Widget", "$: no CRD for Widget.example.com"),
        ("v1", "Pod", "$: apiVersion group/version and kind are required"),
    ],
)
def test_checker_reports_objects_it_cannot_check(api_version: str, kind: str, error: str) -> None:
    errors = validate_against_crd({"apiVersion": api_version, "kind": kind})
    assert len(errors) == 1
    assert errors[0].startswith(error)


STRING = {"type": "string"}
EXTENSIONS = {
    "type": "object",
    "properties": {
        "closed": {"type": "object", "properties": {"a": STRING}},
        "open": {"type": "object", "properties": {"a": STRING}, "x-kubernetes-preserve-unknown-fields": True},
        "nullable": {"type": "string", "nullable": True},
        "set": {"type": "array", "items": STRING, "x-kubernetes-list-type": "set"},
        "embedded": {
            "type": "object",
            "properties": {"spec": {"type": "object"}},
            "x-kubernetes-embedded-resource": True,
        },
    },
}


@pytest.mark.parametrize(
    ("instance", "errors"),
    [
        (
            {"closed": {"a": "x", "b": 1}},
            ["$.closed: Additional properties are not allowed ('b' was unexpected)"],
        ),
        ({"open": {"a": "x", "b": 1}}, []),
        ({"nullable": None}, []),
        ({"set": ["a", "b"]}, []),
        ({"set": ["a", "a"]}, ["$.set: ['a', 'a'] has non-unique elements"]),
        ({"embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}}, []),
        (
            {"embedded": {"status": {}}},
            ["$.embedded: Additional properties are not allowed ('status' was unexpected)"],
        ),
    ],
    ids=["closed", "preserve-unknown", "nullable", "set", "set-duplicate", "embedded", "embedded-unknown"],
)
def test_checker_translates_kubernetes_extensions(instance: dict[str, Any], errors: list[str]) -> None:
    """No scheduling CRD uses these extensions today; a future CRD copy may."""
    assert errors_for_schema(EXTENSIONS, instance) == errors


# ---------------------------------------------------------------- keys the integrations agree on


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (coscheduling.POD_GROUP_LABEL, "scheduling.x-k8s.io/pod-group"),
        (coscheduling.SCHEDULER_NAME, "scheduler-plugins-scheduler"),
        (volcano.GROUP_NAME_ANNOTATION, "scheduling.k8s.io/group-name"),
        (volcano.QUEUE_NAME_ANNOTATION, "scheduling.volcano.sh/queue-name"),
        (volcano.SCHEDULER_NAME, "volcano"),
        (volcano.DEFAULT_QUEUE, "default"),
        (kueue.QUEUE_NAME_LABEL, "kueue.x-k8s.io/queue-name"),
        (kueue.PRIORITY_CLASS_LABEL, "kueue.x-k8s.io/priority-class"),
        (kueue.PODSET_LABEL, "kueue.x-k8s.io/podset"),
        (kueue.MANAGER, "kueue.x-k8s.io/manager"),
        (kai.SCHEDULER_NAME, "kai-scheduler"),
        (kai.QUEUE_LABEL, "kai.scheduler/queue"),
        (slurm.SCHEDULER_NAME, "slurm-bridge-scheduler"),
        (slurm.SlurmJobAnnotation.PARTITION, "slurmjob.slinky.slurm.net/partition"),
        (slurm.SlurmJobAnnotation.TIME_LIMIT, "slurmjob.slinky.slurm.net/timelimit"),
    ],
)
def test_keys(key: str, expected: str) -> None:
    assert key == expected


def test_slurm_job_annotations_share_the_prefix() -> None:
    assert all(a.value.startswith(slurm.SLURM_JOB_ANNOTATION_PREFIX) for a in slurm.SlurmJobAnnotation)


# ---------------------------------------------------------------- upstream ClusterTrainingRuntimes


def upstream_runtimes() -> list[Any]:
    if SHARED_DIR is None:
        return []
    found = []
    root = SHARED_DIR / "upstream" / "runtimes"
    for path in sorted(root.rglob("*.yaml")):
        for index, document in enumerate(load_yaml_all(path.read_text())):
            if document:
                found.append(pytest.param(document, id=f"{path.relative_to(root)}#{index}"))
    return found


RUNTIMES = upstream_runtimes()


def test_upstream_runtimes_were_found() -> None:
    assert len(RUNTIMES) >= 9


@pytest.mark.parametrize("document", RUNTIMES)
def test_upstream_runtime_is_valid_for_its_crd(document: dict[str, Any]) -> None:
    assert validate_against_crd(document) == []


@pytest.mark.parametrize("document", RUNTIMES)
def test_upstream_runtime_round_trips_through_the_trainer_api(document: dict[str, Any]) -> None:
    """Quantities come back as strings, other int-or-string values (probe ports) as written: compare both
    normalised."""
    wire = ClusterTrainingRuntime.from_dict(document).to_dict()
    assert normalize_int_or_string(wire) == normalize_int_or_string(document)
    assert validate_against_crd(wire) == []
