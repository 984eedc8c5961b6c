"""The dashboard's pure view functions: one table test per view, and the 1,000-TrainJob / 5,000-pod scale."""

from __future__ import annotations

import time

from objects import NOW, cluster_queue, event, job, jobset, local_queue, node, pod, trainjob, workload

from gangplane.server.ui import (
    cluster_view,
    detail_view,
    facts,
    gang_queues_view,
    jobs_view,
    kueue_view,
    timeline_view,
)


def test_job_rows_state_gang_progress_and_why_pending() -> None:
    jobs = [
        trainjob("waits", ago=10, waiting=("GangUnschedulable", "needs cpu=6, 3 free")),
        trainjob("runs", ago=20, labels={"kueue.x-k8s.io/queue-name": "lq-a"}),
        trainjob("starts", ago=30),
        trainjob("done", ago=40, done="Complete"),
    ]
    pods = [
        pod("waits", 0),
        pod("waits", 1),
        pod("runs", 0, node_name="n", phase="Running"),
        pod("runs", 1, node_name="n", phase="Running"),
        pod("starts", 0, node_name="n"),
    ]
    sets = [jobset("waits"), jobset("runs", scheduler="volcano"), jobset("starts")]
    rows = {r.name: r for r in jobs_view.job_rows(jobs, pods, sets, NOW)}
    assert [r.name for r in jobs_view.job_rows(jobs, pods, sets, NOW)] == ["waits", "runs", "starts", "done"]
    assert (rows["waits"].state, rows["waits"].bound, rows["waits"].total) == ("Waiting", 0, 2)
    assert (rows["waits"].reason, rows["waits"].message, rows["waits"].waiting_for) == (
        "GangUnschedulable",
        "needs cpu=6, 3 free",
        "30s",
    )
    assert (rows["runs"].state, rows["runs"].running, rows["runs"].queue) == ("Running", 2, "kueue/lq-a")
    assert (rows["starts"].state, rows["starts"].bound, rows["starts"].running) == ("Starting", 1, 0)
    assert rows["done"].state == "Complete" and rows["done"].total == 0
    assert [r.name for r in jobs_view.filter_rows(list(rows.values()), text="cpu=6")] == ["waits"]
    assert jobs_view.state_counts(rows.values())["Running"] == 1


def test_node_rows_bars_placements_cordons_and_slurm() -> None:
    slurm = node("s1", cpu="4")
    slurm["metadata"]["labels"]["slinky.slurm.net/slurm-nodename"] = "s1"
    nodes = [
        node("n1", gpu=4, unschedulable=True, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        slurm,
    ]
    pods = [
        pod("a", 0, node_name="n1", cpu="2", gpu=2),
        pod("a", 1, node_name="n1", cpu="2", gpu=1),
        pod("b", 0, node_name="s1", phase="Succeeded"),
        pod("b", 1),
    ]
    n1, s1 = cluster_view.node_rows(nodes, pods)
    assert n1.cordoned and n1.taints == ("k=v:NoSchedule",) and not n1.slurm and s1.slurm
    assert [(b.resource, b.text, b.percent) for b in n1.bars] == [
        ("cpu", "4 / 8", 50),
        ("memory", "2Gi / 32Gi", 6),
        ("nvidia.com/gpu", "3 / 4", 75),
    ]
    assert n1.placements == (cluster_view.Placement("default/a", ("a-node-0-0", "a-node-0-1")),)
    assert s1.pod_count == 0  # finished pods hold nothing
    assert [b.text for b in cluster_view.totals([n1, s1])] == ["4 / 12", "2Gi / 64Gi", "3 / 4"]


def test_kueue_rows_usage_borrowing_lending_and_order() -> None:
    cqs = [cluster_queue("a", "4", cohort="org", weight="2"), cluster_queue("b", "4", cohort="org")]
    wls = [
        workload("w1", "lq-a", "6", admitted_to="a", ago=50),
        workload("w2", "lq-a", "1", admitted_to="a"),
        workload("p2", "lq-b", "3", ago=10),
        workload("p1", "lq-b", "3", ago=20),
    ]
    lqs = [local_queue("lq-a", "a"), local_queue("lq-b", "b")]
    rows = kueue_view.queue_rows(cqs, [], lqs, wls)
    assert [(r.kind, r.name, r.depth) for r in rows] == [
        ("Cohort", "org", 0),
        ("ClusterQueue", "a", 1),
        ("ClusterQueue", "b", 1),
    ]
    a, b = rows[1], rows[2]
    assert (a.usage[0].used, a.usage[0].nominal, a.usage[0].borrowed, a.weight) == (7000, 4000, 3000, 2.0)
    assert (b.usage[0].used, b.usage[0].lent) == (0, 3000)
    assert [w.name for w in a.admitted] == ["w1", "w2"] and [w.name for w in b.pending] == ["p1", "p2"]
    visible = {
        "b": [{"metadata": {"name": "p2", "namespace": "default"}, "positionInClusterQueue": 0}],
        "a": [],
    }
    assert [w.name for w in kueue_view.queue_rows(cqs, [], lqs, wls, visible)[2].pending] == ["p2"]


def test_lending_limit_keeps_quota_back() -> None:
    cqs = [cluster_queue("a", "4", cohort="org"), cluster_queue("b", "4", cohort="org", lending_limit="1")]
    rows = kueue_view.queue_rows(cqs, [], [], [workload("w", "lq", "5", admitted_to="a")])
    assert rows[2].usage[0].lent == 1000  # millicores: b lends only what its lendingLimit lets go


def test_volcano_and_kai_trees() -> None:
    vq = [
        {
            "metadata": {"name": n},
            "spec": {"parent": p, "weight": 2, "deserved": {"cpu": "4"}},
            "status": {"allocated": {"cpu": "2"}, "running": 1},
        }
        for n, p in (("root", None), ("b", "a"), ("a", "root"))
    ]
    assert [(r.name, r.depth, r.allocated) for r in gang_queues_view.volcano_rows(vq)] == [
        ("root", 0, "cpu 2"),
        ("a", 1, "cpu 2"),
        ("b", 2, "cpu 2"),
    ]
    kq = [
        {"metadata": {"name": "team"},
         "spec": {"parentQueue": "dept", "resources": {"gpu": {"quota": 2, "overQuotaWeight": 1, "limit": -1}}},
         "status": {"allocated": {"nvidia.com/gpu": "1"}, "requested": {"nvidia.com/gpu": "6"}}},
        {"metadata": {"name": "dept"}, "spec": {"resources": {"gpu": {"quota": 4, "overQuotaWeight": 1, "limit": -1}}}},
    ]  # fmt: skip
    rows = gang_queues_view.kai_rows(kq, [node("n1", gpu=8)])
    assert [(r.name, r.depth) for r in rows] == [("dept", 0), ("team", 1)]
    # 8 GPUs: dept gets its quota 4 and, alone, the 2 more its subtree asks for; team gets all of dept's 6
    assert rows[1].resources == (gang_queues_view.KaiResource("gpu", "2", "1", "-1", "1", "6"),)
    assert rows[0].resources[0].fair_share == "6"


def test_detail_tree_and_timeline() -> None:
    pods = [pod("j", 0, node_name="n", phase="Running"), pod("j", 1), pod("other", 0, node_name="n")]
    events = [
        event("e1", "TrainJob", "j", "GangUnschedulable", "waiting", 9),
        event("e2", "TrainJob", "other", "Created", "x", 1),
    ]
    detail = detail_view.job_detail(trainjob("j"), jobset("j"), [job("j"), job("other")], pods, events, NOW)
    assert [j.name for j in detail.jobs] == ["j-node-0"] and len(detail.jobs[0].pods) == 2
    assert detail.jobs[0].pods[1].message.startswith("0/2 nodes are available")
    assert [e.reason for e in detail.events] == ["GangUnschedulable"]
    rows = timeline_view.timeline_rows(
        pods, [workload("w", "lq", "1", admitted_to="a", job_name="j")], events, NOW
    )
    assert [r.kind for r in rows] == ["other", "waiting", "bound", "bound", "admitted"]
    assert rows[-1].job == "default/j"


def test_views_at_1000_trainjobs_and_5000_pods_take_well_under_a_second_each() -> None:
    nodes = [node(f"n{i}", cpu="64", memory="256Gi", gpu=8) for i in range(100)]
    jobs = [
        trainjob(f"j{i}", ago=i, waiting=("PodsUnschedulable", "x") if i % 3 == 0 else None)
        for i in range(1000)
    ]
    sets = [jobset(f"j{i}", replicas=5) for i in range(1000)]
    pods = [
        pod(
            f"j{i}",
            k,
            node_name=f"n{(i * 5 + k) % 100}" if i % 3 else "",
            phase="Running" if i % 3 else "Pending",
        )
        for i in range(1000)
        for k in range(5)
    ]
    for name, build in (
        ("jobs", lambda: jobs_view.job_rows(jobs, pods, sets, NOW)),
        ("nodes", lambda: cluster_view.node_rows(nodes, pods)),
        ("timeline", lambda: timeline_view.timeline_rows(pods, [], [], NOW)),
    ):
        start = time.perf_counter()
        rows = build()
        elapsed = time.perf_counter() - start
        assert rows and elapsed < 1.5, f"{name}: {elapsed:.2f}s"
    shown, pages = facts.page(jobs_view.job_rows(jobs, pods, sets, NOW), 3, 100)
    assert pages == 10 and len(shown) == 100 and shown[0].name == "j300"


def test_eviction_rows_only_for_running_pods_whose_job_remains() -> None:
    running = pod("j", 0, node_name="n1", phase="Running")
    assert timeline_view.eviction_row(running, job("j"), NOW) == timeline_view.TimelineRow(
        NOW, "0s", "evicted", "Pod/j-node-0-0", "default/j",
        "taken off n1 while running; its Job remains (a scheduler's eviction, or a manual delete)",
    )  # fmt: skip
    suspended = job("j")
    suspended["spec"]["suspend"] = True
    row = timeline_view.eviction_row(running, suspended, NOW)
    assert row is not None and "suspended" in row.message
    assert (
        timeline_view.eviction_row(running, None, NOW) is None
    )  # the Job went first: a cascade, no eviction
    assert timeline_view.eviction_row(pod("j", 1), job("j"), NOW) is None  # never bound
    assert timeline_view.eviction_row(pod("j", 2, node_name="n", phase="Succeeded"), job("j"), NOW) is None


def test_histogram_spreads_rows_over_columns_oldest_first() -> None:
    def row(ago: float, kind: str) -> timeline_view.TimelineRow:
        return timeline_view.TimelineRow(NOW - ago, "", kind, "Pod/p", "", "")

    width, columns = timeline_view.histogram(
        [row(300, "bound"), row(0, "admitted"), row(1, "other")], NOW, 30
    )
    assert len(columns) == 30 and 10.0 < width < 10.1
    assert columns[0].counts["bound"] == 1 and columns[-1].counts["admitted"] == 1
    assert sum(c.total for c in columns) == 2  # "other" rows are no scheduling events
