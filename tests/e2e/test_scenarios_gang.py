"""Each gang scheduler's signature behaviour, end to end: TrainJobs applied to the embedded cluster (Trainer
admission, controllers, the scheduler loop with every embedded scheduler, node agents running real processes).

Nodes advertise ``nvidia.com/gpu`` as an accounting unit (no devices): pods request it, nothing uses it.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import pytest
from e2e_harness import Cluster, wait_for

from gangplane.agent.nodes import GPU_RESOURCE, ClusterConfig, NodeGroup
from gangplane.api.quantity import parse
from gangplane.api.scheduling import kai
from gangplane.api.scheduling import volcano as vc
from gangplane.client.informer import Informer
from gangplane.store import catalog
from gangplane.store.base import Object

pytestmark = pytest.mark.slow

JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
WAITING = "gangplane.dev/Waiting"


# -- builders -------------------------------------------------------------------------------------------------
def gpu_nodes(count: int, gpus: int, *, racks: int = 1) -> ClusterConfig:
    """``count`` nodes of ``gpus`` GPUs each, dealt into ``racks`` groups labelled ``rack=rack-<i>``."""
    per_rack = count // racks
    return ClusterConfig(
        node_groups=[
            NodeGroup(
                name=f"rack-{r}",
                count=per_rack,
                name_prefix="node-",
                first_index=r * per_rack,
                capacity={"cpu": "8", "memory": "16Gi", GPU_RESOURCE: str(gpus)},
                labels={"rack": f"rack-{r}"},
            )
            for r in range(racks)
        ]
    )


def runtime(
    name: str,
    scheduler: str,
    *,
    annotations: dict[str, str] | None = None,
    pod_group_policy: dict[str, Any] | None = None,
) -> Object:
    """A torch ClusterTrainingRuntime whose single replicated job uses ``scheduler``."""
    spec: dict[str, Any] = {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {
            "metadata": {"annotations": dict(annotations or {})},
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {
                                "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                            },
                            "spec": {
                                "template": {
                                    "spec": {
                                        "schedulerName": scheduler,
                                        "containers": [{"name": "node", "image": "python:3.12"}],
                                    }
                                }
                            },
                        },
                    }
                ]
            },
        },
    }
    if pod_group_policy is not None:
        spec["podGroupPolicy"] = pod_group_policy
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name},
        "spec": spec,
    }


def volcano_runtime(name: str, queue: str, topology: dict[str, Any] | None = None) -> Object:
    policy: dict[str, Any] = {"volcano": {"networkTopology": topology} if topology else {}}
    return runtime(name, "volcano", annotations={vc.QUEUE_NAME_ANNOTATION: queue}, pod_group_policy=policy)


def trainjob(
    name: str,
    runtime_name: str,
    *,
    nodes: int,
    gpus: int,
    seconds: float,
    labels: dict[str, str] | None = None,
) -> Object:
    """``nodes`` pods of ``gpus`` GPUs each, every one sleeping ``seconds``."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default", "labels": dict(labels or {})},
        "spec": {
            "runtimeRef": {"name": runtime_name},
            "trainer": {
                "numNodes": nodes,
                "command": [sys.executable, "-c", f"import time; time.sleep({seconds})"],
                "resourcesPerNode": {"requests": {GPU_RESOURCE: str(gpus)}},
            },
        },
    }


def volcano_queue(name: str, weight: int, **spec: Any) -> Object:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": weight, **spec},
    }


# -- observing ------------------------------------------------------------------------------------------------
def live(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def bound(pods: list[Object]) -> list[Object]:
    return [p for p in pods if p["spec"].get("nodeName") and live(p)]


def gpus_of(pod: Object) -> int:
    return sum(
        int(parse((c.get("resources") or {}).get("requests", {}).get(GPU_RESOURCE, 0)))
        for c in pod["spec"]["containers"]
    )


def job_of(pod: Object) -> str:
    return str(pod["metadata"].get("labels", {}).get(JOBSET_NAME, ""))


def gpus_by_job(cluster: Cluster) -> Counter[str]:
    """GPUs each job runs on now: bound, live pods not being deleted (an evicted pod may take a moment to
    stop; it still holds its node, but it no longer counts as the job's)."""
    used: Counter[str] = Counter()
    for pod in bound(cluster.store.list(catalog.PODS).items):
        if not pod["metadata"].get("deletionTimestamp"):
            used[job_of(pod)] += gpus_of(pod)
    return used


def evicted_since(cluster: Cluster, first: dict[str, set[str]]) -> list[str]:
    """Jobs some of whose ``first`` pods were deleted (evicted), whatever the time it took to notice."""
    return [n for n, uids in first.items() if not uids <= {p["metadata"]["uid"] for p in cluster.pods(n)}]


def outcome(cluster: Cluster, name: str, timeout: float = 150) -> str:
    """``Complete`` or ``Failed``, once the TrainJob finishes."""
    return str(wait_for(partial(cluster.finished, name), timeout=timeout, what=f"{name} to finish"))


def waiting(cluster: Cluster, name: str) -> dict[str, Any] | None:
    return cluster.condition(name, WAITING)


def hypernode(name: str, tier: int, *, nodes: Sequence[str] = (), children: Sequence[str] = ()) -> Object:
    members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": c}}} for c in children]
    return {
        "apiVersion": vc.TOPOLOGY_API_VERSION,
        "kind": vc.HYPER_NODE_KIND,
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": members},
    }


def kai_queue(name: str, gpu_quota: int, *, parent: str | None = None) -> Object:
    unbounded = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": gpu_quota, "limit": -1, "overQuotaWeight": 1},
            "cpu": dict(unbounded),
            "memory": dict(unbounded),
        }
    }
    if parent is not None:
        spec["parentQueue"] = parent
    return {
        "apiVersion": kai.QUEUE_API_VERSION,
        "kind": kai.QUEUE_KIND,
        "metadata": {"name": name},
        "spec": spec,
    }


def gpu_queue_runtimes(cluster: Cluster) -> None:
    """The coscheduling, Volcano (queue ``shared``) and KAI runtimes of the mixed-scheduler scenario."""
    cluster.create(
        runtime(
            "cosched",
            "scheduler-plugins-scheduler",
            pod_group_policy={"coscheduling": {"scheduleTimeoutSeconds": 600}},
        )
    )
    cluster.create(volcano_queue("shared", 1))
    cluster.create(volcano_runtime("vc-shared", "shared"))
    cluster.create(kai_queue("dept", -1))
    cluster.create(kai_queue("team", 4, parent="dept"))
    cluster.create(runtime("kai", kai.SCHEDULER_NAME))


# -- invariants, checked after every pod event ----------------------------------------------------------------
PARTIAL_GRACE = 2.0  # seconds a gang may look partly bound while one pass's bind (or evict) writes land


class Invariants:
    """Watches pods and checks, after every event the store delivers: no node holds more GPUs in bound,
    non-terminal pods than it has; no gang stays partly bound (some but fewer than ``gangs[job]`` of its
    pods on nodes) for longer than a pass takes to write. A scheduler pass writes one binding at a time, so
    the store may show a gang half-bound for milliseconds; it must never stay that way."""

    def __init__(self, cluster: Cluster, gangs: dict[str, int]) -> None:
        self.gangs = gangs
        self.allocatable = {
            n["metadata"]["name"]: int(parse(n["status"]["allocatable"].get(GPU_RESOURCE, 0)))
            for n in cluster.store.list(catalog.NODES).items
        }
        self.violations: list[str] = []
        self.partial_since: dict[str, float] = {}
        self.peak: dict[str, int] = Counter()  # most GPUs each job held at once
        # at every event: (jobs holding GPUs, jobs whose pods exist with none of them bound)
        self.moments: list[tuple[frozenset[str], frozenset[str]]] = []
        self._lock = threading.Lock()
        self.informer = Informer(cluster.store, catalog.PODS)
        self.informer.add_handler(lambda *_: self.check())

    def __enter__(self) -> Invariants:
        self.informer.start()
        assert self.informer.wait_synced(10)
        return self

    def __exit__(self, *_: object) -> None:
        self.informer.stop()
        self.check()

    def check(self) -> None:
        pods = self.informer.list()
        with self._lock:
            self._check_nodes(pods)
            self._check_gangs(pods)

    def _check_nodes(self, pods: list[Object]) -> None:
        used: Counter[str] = Counter()
        for pod in bound(pods):
            used[pod["spec"]["nodeName"]] += gpus_of(pod)
        for node, gpus in used.items():
            if gpus > self.allocatable[node]:
                self.violations.append(f"{node} over-committed: {gpus} GPUs bound, {self.allocatable[node]}")

    def _check_gangs(self, pods: list[Object]) -> None:
        now = time.monotonic()
        holding: Counter[str] = Counter()
        on_nodes: Counter[str] = Counter()
        existing = {job_of(p) for p in pods if not p["metadata"].get("deletionTimestamp")}
        for pod in pods:
            placed = pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp")
            if placed and (pod.get("status") or {}).get("phase") != "Failed":
                on_nodes[job_of(pod)] += 1
                holding[job_of(pod)] += gpus_of(pod) if live(pod) else 0
        for job, size in self.gangs.items():
            self.peak[job] = max(self.peak[job], holding[job])
            if 0 < on_nodes[job] < size:
                since = self.partial_since.setdefault(job, now)
                if now - since > PARTIAL_GRACE:
                    self.violations.append(
                        f"{job}: {on_nodes[job]} of {size} pods bound for {now - since:.1f}s"
                    )
            else:
                self.partial_since.pop(job, None)
        held = frozenset(job for job, gpus in holding.items() if gpus and job in self.gangs)
        self.moments.append((held, frozenset(j for j in self.gangs if j in existing and not on_nodes[j])))


# -- 1 + 6. Volcano: queue weights split a contended cluster; the waiting jobs say why -------------------------
def test_volcano_queue_weights_split_a_contended_cluster_and_waiting_jobs_say_why(
    cluster_factory: Callable[[ClusterConfig], Cluster],
) -> None:
    # 16 GPUs; queues light:heavy weigh 1:3; gangs of 2 × 1 GPU. light asks 6, heavy 14: deserved 4 and 12.
    # Pods appear one TrainJob at a time, so a queue may briefly hold more than it deserves (deserved follows
    # the requests seen so far); proportion's reclaim then gives the excess back. The split we wait for is
    # the steady state while both queues still have gangs waiting.
    cluster = cluster_factory(gpu_nodes(4, 4))
    queues = {"light": 1, "heavy": 3}
    jobs = {"light": [f"light-{i}" for i in range(3)], "heavy": [f"heavy-{i}" for i in range(7)]}
    for queue, weight in queues.items():
        cluster.create(volcano_queue(queue, weight))
        cluster.create(volcano_runtime(f"vc-{queue}", queue))
    for queue, names in jobs.items():
        for name in names:
            cluster.create(trainjob(name, f"vc-{queue}", nodes=2, gpus=1, seconds=30))

    def split() -> dict[str, int]:
        used = gpus_by_job(cluster)
        return {queue: sum(used[name] for name in names) for queue, names in jobs.items()}

    try:
        wait_for(lambda: split() == {"light": 4, "heavy": 12}, timeout=40, what="the 4:12 split")
    except AssertionError as err:
        raise AssertionError(f"{err}; GPUs by queue now {split()}") from None
    used = gpus_by_job(cluster)
    waiting_jobs = {q: [n for n in names if not used[n]] for q, names in jobs.items()}
    assert len(waiting_jobs["light"]) == 1 and len(waiting_jobs["heavy"]) == 1, waiting_jobs
    assert all(used[n] in (0, 2) for names in jobs.values() for n in names), used  # gangs whole or not at all
    # 6. Why pending: each waiting TrainJob names its PodGroup and the limit that holds it, with numbers.
    # An admitted (Inqueue) job is held by its queue's deserved share. At most one more can be admitted on
    # the full cluster (1.2 × 16 GPUs − 16 in use = 3.2); a job admitted during the start-up transient keeps
    # Inqueue, so either both wait on their queues, or one waits on its queue and the other is kept Pending
    # by the overcommit plugin.
    held = {
        "light": "queue light is overused: it holds its deserved share (nvidia.com/gpu=4 of 4 in use)",
        "heavy": "queue heavy is overused: it holds its deserved share (nvidia.com/gpu=12 of 12 in use)",
    }
    not_admitted = (
        "not admitted (Pending): cluster is full: the overcommit factor 1.2 admits 1.2 × nvidia.com/gpu=16; "
        "16 in use, 2 admitted (Inqueue), 2 more requested"
    )
    messages = {}
    for queue, names in waiting_jobs.items():
        prefix = f"volcano PodGroup {names[0]}: 2/2 tasks in gang unschedulable: "
        expected = (prefix + held[queue], prefix + not_admitted)
        messages[queue] = wait_for_message(cluster, names[0], "GangUnschedulable", expected.__contains__)
    assert any(m.endswith(held[q]) for q, m in messages.items()), messages


def wait_for_message(cluster: Cluster, name: str, reason: str, accept: Callable[[str], bool]) -> str:
    """The TrainJob's Waiting message once it has ``reason`` and a message ``accept`` takes (the controller
    may first show a passing reason, e.g. before the scheduler's first answer)."""
    seen: list[dict[str, Any] | None] = [None]

    def matches() -> str | None:
        condition = seen[0] = waiting(cluster, name)
        ok = condition is not None and condition["reason"] == reason and accept(condition["message"])
        return condition["message"] if ok and condition else None

    try:
        return str(wait_for(matches, timeout=15))
    except AssertionError:
        raise AssertionError(f"{name}: Waiting condition {seen[0]}, expected reason {reason}") from None


# -- 2. Volcano: reclaim of a borrowed share ------------------------------------------------------------------
def test_volcano_reclaims_a_borrowed_share_and_the_lender_job_restarts(
    cluster_factory: Callable[[ClusterConfig], Cluster],
) -> None:
    # 16 GPUs. lender (reclaimable, the default) fills the cluster with 4 gangs of 2 × 2 GPUs while borrower
    # is idle. Volcano's default overcommit plugin (factor 1.2) admits a job only while inqueue + minResources
    # ≤ 1.2 × 16 − 16 in use = 3.2 GPUs, and reclaim acts only for admitted jobs: borrower's gang asks 2 × 1
    # GPU, within that, so it is admitted and reclaims. (A gang above 3.2 GPUs would stay Pending on a full
    # cluster, never reclaiming: upstream behaviour, see docs/volcano.md.)
    cluster = cluster_factory(gpu_nodes(4, 4))
    for queue in ("lender", "borrower"):
        cluster.create(volcano_queue(queue, 1))
        cluster.create(volcano_runtime(f"vc-{queue}", queue))
    lenders = [f"lend-{i}" for i in range(4)]
    gangs = {**dict.fromkeys(lenders, 2), "borrow": 2}
    with Invariants(cluster, gangs) as invariants:
        for name in lenders:
            # long enough that borrow can run only by reclaiming, even on a slow machine
            cluster.create(trainjob(name, "vc-lender", nodes=2, gpus=2, seconds=30))
        wait_for(
            lambda: sum(gpus_by_job(cluster).values()) == 16, timeout=30, what="lender to fill the cluster"
        )
        first = {name: {p["metadata"]["uid"] for p in cluster.pods(name)} for name in lenders}
        cluster.create(trainjob("borrow", "vc-borrower", nodes=2, gpus=1, seconds=4))
        wait_for(lambda: gpus_by_job(cluster)["borrow"] == 2, timeout=30, what="borrow's gang to run")
        used = gpus_by_job(cluster)
        reclaimed = evicted_since(cluster, first)
        assert len(reclaimed) == 1, f"expected exactly one lender gang reclaimed, GPUs now {dict(used)}"
        assert all(used[n] == 4 for n in lenders if n not in reclaimed)  # the other three kept running
        victim = reclaimed[0]
        # What JobSet's failure policy leaves to happen: the evicted pods are deleted and the victim's Job
        # creates replacements; the Job does not fail and the JobSet never restarts. (The embedded Job
        # controller does not count deleted pods as failed; Kubernetes would count 2 failures, within the
        # default backoffLimit of 6, with the same outcome.) The replacements wait whole until there is room.
        replaced = wait_for(
            lambda: len(cluster.pods(victim)) == 2 and cluster.pods(victim), what="replacements"
        )
        assert not {p["metadata"]["uid"] for p in replaced} & first[victim]
        assert not any(p["spec"].get("nodeName") for p in replaced)
        share = "queue lender at its deserved share nvidia.com/gpu=14, 12 in use, 4 more requested"
        wait_for_message(cluster, victim, "GangUnschedulable", lambda m: m.endswith(share))
        for name in [*lenders, "borrow"]:
            assert outcome(cluster, name) == "Complete"
    jobset = cluster.store.get(catalog.JOBSETS, "default", victim)
    assert not (jobset.get("status") or {}).get("restarts")  # the JobSet itself never restarted
    assert invariants.violations == []


# -- 3. Volcano: a hard-topology gang inside one HyperNode ----------------------------------------------------
def test_volcano_hard_topology_gang_lands_inside_one_rack(
    cluster_factory: Callable[[ClusterConfig], Cluster],
) -> None:
    # Two racks of two 2-GPU nodes, as HyperNodes of tier 1 under a tier-2 spine. A filler takes one node;
    # then a gang of 3 × 1 GPU with networkTopology hard / highestTierAllowed 1 must fit one rack: the
    # filler's rack has 2 GPUs free, the other 4, so it lands in the other rack. (Bin-packing without the
    # constraint would fill the filler's rack first and straddle.)
    cluster = cluster_factory(gpu_nodes(4, 2, racks=2))
    cluster.create(volcano_queue("q", 1))
    cluster.create(hypernode("rack-0", 1, nodes=["node-0", "node-1"]))
    cluster.create(hypernode("rack-1", 1, nodes=["node-2", "node-3"]))
    cluster.create(hypernode("spine", 2, children=["rack-0", "rack-1"]))
    cluster.create(volcano_runtime("vc-flat", "q"))
    cluster.create(volcano_runtime("vc-rack", "q", {"mode": "hard", "highestTierAllowed": 1}))
    rack = {f"node-{i}": f"rack-{i // 2}" for i in range(4)}
    cluster.create(trainjob("filler", "vc-flat", nodes=1, gpus=2, seconds=15))
    filler = wait_for(lambda: bound(cluster.pods("filler")), timeout=30, what="filler to run")
    cluster.create(trainjob("ring", "vc-rack", nodes=3, gpus=1, seconds=1))
    group = wait_for(lambda: _get(cluster, catalog.VOLCANO_PODGROUPS, "ring"), what="ring's PodGroup")
    assert group["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}
    assert outcome(cluster, "ring", timeout=30) == "Complete"
    racks = {rack[p["spec"]["nodeName"]] for p in cluster.pods("ring")}
    assert len(cluster.pods("ring")) == 3 and len(racks) == 1, racks
    assert racks != {rack[filler[0]["spec"]["nodeName"]]}


def _get(cluster: Cluster, rt: Any, name: str) -> Object | None:
    return next((o for o in cluster.store.list(rt).items if o["metadata"]["name"] == name), None)


# -- Volcano: minTaskMember — a gang never starts short of its master -----------------------------------------
def role_pod(name: str, role: str, gpus: int) -> Object:
    """A bare Volcano pod of PodGroup ``roles`` with task role ``role``."""
    annotations = {vc.GROUP_NAME_ANNOTATION: "roles", vc.TASK_SPEC_KEY: role}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {
            "schedulerName": "volcano",
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "python:3.12",
                    "command": [sys.executable, "-c", "import time; time.sleep(1)"],
                    "resources": {"requests": {GPU_RESOURCE: str(gpus)}},
                }
            ],
        },
    }


def test_volcano_gang_waits_for_its_master_under_min_task_member(
    cluster_factory: Callable[[ClusterConfig], Cluster],
) -> None:
    # minMember 2 is met by the two workers alone, but minTaskMember asks for a master, and the first master
    # asks more GPUs than a node has: nothing may start (issue #16). A master that fits lets the gang run.
    cluster = cluster_factory(gpu_nodes(2, 4))
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "roles", "namespace": "default"},
        "spec": {"minMember": 2, "minTaskMember": {"master": 1, "worker": 1}, "queue": "default"},
    }
    cluster.create(group)
    for name, role, gpus in (
        ("worker-0", "worker", 1),
        ("worker-1", "worker", 1),
        ("master-big", "master", 8),
    ):
        cluster.create(role_pod(name, role, gpus))

    def group_pods() -> list[Object]:
        items = cluster.store.list(catalog.PODS).items
        return [p for p in items if (p["metadata"].get("annotations") or {}).get(vc.GROUP_NAME_ANNOTATION)]

    def why() -> str | None:
        for pod in group_pods():
            for c in (pod.get("status") or {}).get("conditions") or ():
                if c["type"] == "PodScheduled" and "minTaskMember not met" in c.get("message", ""):
                    return str(c["message"])
        return None

    assert "role 'master' needs 1 more" in str(wait_for(why, timeout=20, what="the minTaskMember reason"))
    assert not any(p["spec"].get("nodeName") for p in group_pods())
    cluster.store.delete(catalog.PODS, "default", "master-big")
    cluster.create(role_pod("master", "master", 2))
    wait_for(
        lambda: len(group_pods()) == 3 and all(p["spec"].get("nodeName") for p in group_pods()),
        timeout=30,
        what="the whole gang to be bound once a master fits",
    )


# -- 4. KAI: over-quota work reclaimed when a queue under its quota submits -----------------------------------
OVER = ["over-0", "over-1"]


def kai_teams_filled_by_team_a(cluster: Cluster) -> dict[str, set[str]]:
    """8 GPUs; team-a and team-b each have a quota of 4 under dept; team-a fills the cluster with two gangs of
    2 × 2 GPUs (4 over its quota; priority class "train", 50 < 100, so preemptible). The gangs' pod UIDs."""
    cluster.create(kai_queue("dept", -1))
    cluster.create(kai_queue("team-a", 4, parent="dept"))
    cluster.create(kai_queue("team-b", 4, parent="dept"))
    cluster.create(runtime("kai", kai.SCHEDULER_NAME))
    for name in OVER:
        cluster.create(trainjob(name, "kai", nodes=2, gpus=2, seconds=30, labels={kai.QUEUE_LABEL: "team-a"}))
    wait_for(lambda: sum(gpus_by_job(cluster).values()) == 8, timeout=30, what="team-a to fill the cluster")
    return {name: {p["metadata"]["uid"] for p in cluster.pods(name)} for name in OVER}


def test_kai_reclaims_over_quota_work_for_a_queue_within_its_quota(
    cluster_factory: Callable[[ClusterConfig], Cluster],
) -> None:
    # team-b submits 2 × 2 GPUs, within its quota: one team-a gang is evicted whole and team-b's runs. Only
    # one: the next cycles, which may see the victims' evictions half written, pipeline team-b's gang onto
    # the releasing room (tests/schedulers/kai/test_kai_reclaim_in_flight.py).
    cluster = cluster_factory(gpu_nodes(2, 4))
    over = OVER
    with Invariants(cluster, {**dict.fromkeys(over, 2), "within": 2}) as invariants:
        first = kai_teams_filled_by_team_a(cluster)
        job = trainjob("within", "kai", nodes=2, gpus=2, seconds=4, labels={kai.QUEUE_LABEL: "team-b"})
        cluster.create(job)
        wait_for(lambda: gpus_by_job(cluster)["within"] == 4, timeout=30, what="team-b's gang to run")
        used = gpus_by_job(cluster)
        reclaimed = evicted_since(cluster, first)
        assert len(reclaimed) == 1 and all(used[n] == 4 for n in over if n not in reclaimed), dict(used)
        victim = reclaimed[0]
        replaced = wait_for(
            lambda: len(cluster.pods(victim)) == 2 and cluster.pods(victim), what="replacements"
        )
        assert not {p["metadata"]["uid"] for p in replaced} & first[victim]
        # 6. Why pending: the reclaimed gang finds no room, and its queue (at its fair share) may not reclaim.
        share = "; no reclaim: queue team-a at its fair share of 4 GPUs: 4 in use, 4 more requested"
        # The embedded pod-grouper wrote the PodGroup, so the reason comes from KAI's condition on it.
        message = wait_for_message(cluster, victim, "GangUnschedulable", lambda m: m.endswith(share))
        assert (
            "NotEnoughResources: gang needs 2 pods (nvidia.com/gpu=2 each); largest placement found 0"
            in message
        )
        for name in [*over, "within"]:
            assert outcome(cluster, name) == "Complete"
    assert invariants.violations == []


def test_kai_non_preemptible_job_reclaims_within_its_quota(
    cluster_factory: Callable[[ClusterConfig], Cluster],
) -> None:
    # As above, but team-b's job is non-preemptible (label kai.scheduler/preemptibility): it may reclaim since
    # team-b's non-preemptible allocation (0) plus its 4 GPUs stays within team-b's quota of 4
    # (reclaimable.go CanReclaimResources; issue #16 — it used to wait forever).
    cluster = cluster_factory(gpu_nodes(2, 4))
    with Invariants(cluster, {**dict.fromkeys(OVER, 2), "steady": 2}) as invariants:
        first = kai_teams_filled_by_team_a(cluster)
        labels = {kai.QUEUE_LABEL: "team-b", kai.PREEMPTIBILITY_LABEL: "non-preemptible"}
        cluster.create(trainjob("steady", "kai", nodes=2, gpus=2, seconds=2, labels=labels))
        wait_for(
            lambda: gpus_by_job(cluster)["steady"] == 4, timeout=30, what="the non-preemptible gang to run"
        )
        assert evicted_since(cluster, first)  # team-a gave room back
        assert outcome(cluster, "steady", timeout=60) == "Complete"
    assert invariants.violations == []


# -- 5. Several schedulers on one cluster, sharing node accounting ------------------------------------------
def test_coscheduling_volcano_and_kai_share_one_cluster(
    cluster_factory: Callable[[ClusterConfig], Cluster],
) -> None:
    # 2 nodes × 4 GPUs; one gang of 2 × 2 GPUs per scheduler: 12 GPUs asked of 8. Two run, the third waits
    # whole, then runs; no node ever holds more than it has.
    cluster = cluster_factory(gpu_nodes(2, 4))
    gpu_queue_runtimes(cluster)
    jobs = {
        "by-coscheduling": trainjob("by-coscheduling", "cosched", nodes=2, gpus=2, seconds=3),
        "by-volcano": trainjob("by-volcano", "vc-shared", nodes=2, gpus=2, seconds=3),
        "by-kai": trainjob("by-kai", "kai", nodes=2, gpus=2, seconds=3, labels={kai.QUEUE_LABEL: "team"}),
    }
    with Invariants(cluster, dict.fromkeys(jobs, 2)) as invariants:
        for job in jobs.values():
            cluster.create(job)
        for name in jobs:
            assert outcome(cluster, name) == "Complete"
    assert invariants.violations == []
    assert all(invariants.peak[name] == 4 for name in jobs), invariants.peak  # each gang held 4 GPUs at once
    # the third gang waited whole while the other two held the cluster
    assert any(len(held) == 2 and len(whole) == 1 for held, whole in invariants.moments)
    schedulers = {p["spec"]["schedulerName"] for name in jobs for p in cluster.pods(name)}
    assert schedulers == {"scheduler-plugins-scheduler", "volcano", kai.SCHEDULER_NAME}
