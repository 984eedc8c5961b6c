"""The checker catches broken schedules: it must be able to fail."""

from __future__ import annotations

from sim_builders import jobs

from gangplane.simulator.bounds import check
from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.metrics import summarise
from gangplane.simulator.timeline import JobRecord, Segment, SimResult

CLUSTER = uniform_cluster(1, 4)


def _result(*records: JobRecord) -> SimResult:
    return SimResult("forged", CLUSTER, records, 0, 0)


def _ran(
    job_row: tuple[float, int, int, float], start: float, end: float, nodes: tuple[str, ...]
) -> JobRecord:
    (job,) = jobs(job_row)
    return JobRecord(
        job, start, start, end, segments=[Segment(start, nodes, end, "completed", work=end - start)]
    )


def _checks(result: SimResult) -> set[str]:
    return {v.check for v in check(result, summarise(result))}


def test_a_sound_schedule_passes() -> None:
    assert _checks(_result(_ran((0, 1, 4, 10), 0, 10, ("node-000",)))) == set()


def test_finishing_early_breaks_the_duration_and_both_bounds() -> None:
    assert _checks(_result(_ran((0, 1, 4, 10), 0, 5, ("node-000",)))) == {"duration", "makespan", "mean JCT"}


def test_starting_before_arrival_is_caught() -> None:
    assert "start" in _checks(_result(_ran((5, 1, 4, 10), 0, 10, ("node-000",))))


def test_overcommitted_node_is_caught() -> None:
    first = _ran((0, 1, 4, 10), 0, 10, ("node-000",))
    second = _ran((0, 1, 4, 10), 5, 15, ("node-000",))
    second.job = jobs((0, 1, 4, 10), (0, 1, 4, 10))[1]
    violations = check(_result(first, second), summarise(_result(first, second)))
    assert [v.check for v in violations] == ["makespan", "node capacity"]  # 80 GPU-s on 4 GPUs take >= 20 s
    assert "node-000 holds 8 GPUs of 4" in str(violations[1])


def test_back_to_back_runs_on_one_node_are_fine() -> None:
    first = _ran((0, 1, 4, 10), 0, 10, ("node-000",))
    second = _ran((0, 1, 4, 10), 10, 20, ("node-000",))
    second.job = jobs((0, 1, 4, 10), (0, 1, 4, 10))[1]
    assert _checks(_result(first, second)) == set()


def test_partial_gang_is_caught() -> None:
    (job,) = jobs((0, 2, 2, 10))
    record = JobRecord(job, 0, 0, 10, segments=[Segment(0, ("node-000",), 10, "completed", work=10)])
    assert "gang" in _checks(_result(record))


def test_keeping_more_work_than_a_run_did_is_caught() -> None:
    (job,) = jobs((0, 1, 4, 10))
    record = JobRecord(job, 0, 0, 5, segments=[Segment(0, ("node-000",), 5, "completed", work=10)])
    assert "duration" in _checks(_result(record))
