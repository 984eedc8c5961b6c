"""Trace loaders, gang packing and scenario files."""

from __future__ import annotations

import itertools
from pathlib import Path

import pydantic
import pytest

from gangplane.simulator.jobs import pack_gang
from gangplane.simulator.scenario import Scenario, generate, load_scenario
from gangplane.simulator.traces import TraceError, load_generic, load_philly, load_tiresias


@pytest.mark.parametrize(
    ("gpus", "per_node", "shape"),
    [
        (1, 8, (1, 1)),
        (8, 8, (1, 8)),
        (16, 8, (2, 8)),
        (12, 8, (2, 6)),
        (24, 8, (3, 8)),
        (8, 4, (2, 4)),
        (13, 8, (13, 1)),
        (128, 8, (16, 8)),
    ],
)
def test_pack_gang(gpus: int, per_node: int, shape: tuple[int, int]) -> None:
    assert pack_gang(gpus, per_node) == shape


def test_tiresias_trace(tiresias_csv: Path) -> None:
    jobs = load_tiresias(tiresias_csv, gpus_per_node=4)
    assert len(jobs) == 60
    assert sum(j.gpus * j.duration for j in jobs) == 26_624  # performance-anchors.md §2.2
    assert sum(j.duration for j in jobs) == 10_705
    assert sorted({j.gpus for j in jobs}) == [1, 2, 4, 8]
    assert {j.shape for j in jobs if j.gpus == 8} == {(2, 4)}
    assert [j.id for j in jobs] == list(range(60))
    assert jobs[0].arrival == 0 and jobs[-1].arrival == 1_779


def test_philly_trace_whole_and_one_vc(philly_csv: Path) -> None:
    whole = load_philly(philly_csv, gpus_per_node=8)
    assert len(whole) == 82_247
    assert all(a.arrival <= b.arrival for a, b in itertools.pairwise(whole))
    assert round(sum(j.gpus * j.duration for j in whole) / 3600) == 978_078  # §2.1
    vc = load_philly(philly_csv, gpus_per_node=8, vc="ee9e8c")
    assert len(vc) == 1_511 and max(j.gpus for j in vc) == 128
    assert {j.queue for j in vc} == {"ee9e8c"}


def test_generic_csv(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(
        "arrival,gang_size,gpus_per_member,duration,queue,priority\n30,2,4,100,a,5\n10,1,1,50,b,0\n"
    )
    first, second = load_generic(path)
    assert (first.arrival, first.members, first.queue) == (0.0, 1, "b")
    assert (second.arrival, second.gpus, second.priority, second.queue) == (20.0, 8, 5, "a")


def test_generic_csv_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("arrival,duration\n1,2\n")
    with pytest.raises(TraceError, match="gang_size"):
        load_generic(path)


def test_generic_csv_bad_value(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("arrival,gang_size,gpus_per_member,duration\n1,two,1,5\n")
    with pytest.raises(TraceError, match="gang_size"):
        load_generic(path)


SCENARIO_YAML = """
name: racks
seed: 5
cluster:
  nodeGroups:
    - {name: a100, count: 8, gpus: 8, cpu: 96, memory: 1Ti, labels: {pool: a100},
       topology: [{key: example.com/block, size: 4}, {key: example.com/rack, size: 2}]}
queues: [{name: team-a, nominalGpus: 32, weight: 2}]
workloads:
  - {class: small, queue: team-a, count: 5, gpusPerMember: 1, duration: {fixed: 60}, arrival: {every: 10}}
  - {class: big, count: 2, members: 2, gpusPerMember: 8, priority: 100,
     duration: {distribution: uniform, low: 10, high: 20}, arrival: {poisson: 0.1, start: 5}}
"""


def test_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO_YAML)
    scenario = load_scenario(path)
    cluster = scenario.cluster_spec()
    assert cluster.total_gpus == 64 and cluster.nodes[0].memory == 2**40
    assert dict(cluster.nodes[5].labels) == {
        "pool": "a100",
        "example.com/block": "block-1",
        "example.com/rack": "rack-2",
    }
    assert cluster.queues[0].nominal_gpus == 32 and cluster.queues[0].weight == 2
    jobs = generate(scenario)
    assert len(jobs) == 7 and [j.id for j in jobs] == list(range(7))
    assert [j.arrival for j in jobs if j.name.startswith("small")] == [0, 10, 20, 30, 40]
    big = [j for j in jobs if j.name.startswith("big")]
    assert big[0].arrival == 5 and all(10 <= j.duration <= 20 and j.priority == 100 for j in big)


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        (
            {"duration": {"fixed": 1, "distribution": "exponential", "mean": 3}},
            "either fixed or distribution",
        ),
        ({"duration": {"distribution": "lognormal"}}, "lognormal needs median"),
        ({"arrival": {}}, "either every or poisson"),
        ({"count": 0}, "greater than or equal to 1"),
        ({"gpus": 1}, "Extra inputs"),
    ],
)
def test_scenario_rejects_bad_workloads(workload: dict[str, object], message: str) -> None:
    base = {"class": "x", "count": 1, "duration": {"fixed": 1}, "arrival": {"every": 1}}
    document = {
        "cluster": {"nodeGroups": [{"name": "n", "count": 1, "gpus": 1}]},
        "workloads": [{**base, **workload}],
    }
    with pytest.raises(pydantic.ValidationError, match=message):
        Scenario.model_validate(document)


def test_scenario_needs_jobs() -> None:
    with pytest.raises(pydantic.ValidationError, match="workloads or a trace"):
        Scenario.model_validate({"cluster": {"nodeGroups": [{"name": "n", "count": 1, "gpus": 1}]}})
