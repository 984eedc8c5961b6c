"""The pod lifecycle state machine and the status it renders (pure, virtual time)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangplane.agent import pod_state as ps
from gangplane.agent.pod_status import go_duration, pod_status, qos_class

T0 = 1_767_225_600.0


def spec(
    *containers: str, init: tuple[str, ...] = (), sidecars: tuple[str, ...] = (), **fields: Any
) -> ps.Spec:
    pod = {
        "spec": {
            "containers": [{"name": n, "image": f"img/{n}"} for n in containers],
            "initContainers": [
                {"name": n, **({"restartPolicy": "Always"} if n in sidecars else {})} for n in init
            ],
            **fields,
        }
    }
    return ps.spec_of(pod)


def run_to_exit(s: ps.Spec, run: ps.PodRun, name: str, code: int, at: float) -> ps.PodRun:
    run = ps.started(run, name, at)
    return ps.exited(run, name, ps.termination(code, at + 1))


@pytest.mark.parametrize(
    ("policy", "code", "phase", "restarts"),
    [
        ("Never", 0, ps.Phase.SUCCEEDED, False),
        ("Never", 3, ps.Phase.FAILED, False),
        ("OnFailure", 0, ps.Phase.SUCCEEDED, False),
        ("OnFailure", 3, ps.Phase.RUNNING, True),
        ("Always", 0, ps.Phase.RUNNING, True),
        ("Always", 3, ps.Phase.RUNNING, True),
    ],
)
def test_restart_policy_decides_phase_and_restart(
    policy: str, code: int, phase: ps.Phase, restarts: bool
) -> None:
    s = spec("main", restartPolicy=policy)
    run = ps.new_run(s, T0)
    assert ps.plan(s, run, T0).start == ("main",)
    assert ps.pod_phase(s, run) is ps.Phase.PENDING
    run = ps.started(run, "main", T0)
    assert ps.pod_phase(s, run) is ps.Phase.RUNNING
    run = ps.exited(run, "main", ps.termination(code, T0 + 5))
    assert ps.pod_phase(s, run) is phase
    assert ps.plan(s, run, T0 + 5).start == (("main",) if restarts else ())


def test_back_off_is_immediate_then_doubles_from_ten_seconds_to_five_minutes() -> None:
    s = spec("main", restartPolicy="Always")
    run = ps.new_run(s, T0)
    now, delays = T0, []
    for _ in range(9):
        run = ps.started(run, "main", now)
        now += 1
        run = ps.exited(run, "main", ps.termination(1, now))
        due = ps.restart_at(s, run, run.containers["main"])
        assert due is not None
        delays.append(due - now)
        assert ps.plan(s, run, now).wake_at == (None if due <= now else due)
        now = due
    assert delays == [0, 10, 20, 40, 80, 160, 300, 300, 300]
    assert run.containers["main"].restart_count == 8


def test_back_off_resets_after_a_long_run() -> None:
    s = spec("main")
    run = ps.new_run(s, T0)
    for i in range(4):
        run = run_to_exit(s, run, "main", 1, T0 + 10 * i)
    assert run.containers["main"].backoff == 40
    run = ps.started(run, "main", T0 + 100)
    run = ps.exited(run, "main", ps.termination(1, T0 + 100 + ps.BACKOFF_RESET + 1))
    assert ps.restart_at(s, run, run.containers["main"]) == T0 + 100 + ps.BACKOFF_RESET + 1


def test_init_containers_run_one_at_a_time_before_the_main_ones() -> None:
    s = spec("main", init=("a", "b"), restartPolicy="Never")
    run = ps.new_run(s, T0)
    assert ps.plan(s, run, T0).start == ("a",)
    run = ps.started(run, "a", T0)
    assert ps.plan(s, run, T0).start == ()
    run = ps.exited(run, "a", ps.termination(0, T0 + 1))
    assert ps.plan(s, run, T0 + 1).start == ("b",)
    assert ps.pod_phase(s, run) is ps.Phase.PENDING
    run = run_to_exit(s, run, "b", 0, T0 + 2)
    assert ps.initialized(s, run)
    assert ps.plan(s, run, T0 + 3).start == ("main",)


@pytest.mark.parametrize(
    ("policy", "phase", "retried"), [("Never", "Failed", False), ("Always", "Pending", True)]
)
def test_a_failed_init_container(policy: str, phase: str, retried: bool) -> None:
    s = spec("main", init=("a",), restartPolicy=policy)
    run = run_to_exit(s, ps.new_run(s, T0), "a", 1, T0)
    assert ps.pod_phase(s, run) == phase
    assert ps.plan(s, run, T0 + 1).start == (("a",) if retried else ())


def test_sidecar_starts_the_next_init_once_running_and_is_stopped_when_main_completes() -> None:
    s = spec("main", init=("proxy", "setup"), sidecars=("proxy",), restartPolicy="Never")
    run = ps.new_run(s, T0)
    assert ps.plan(s, run, T0).start == ("proxy",)
    run = ps.started(run, "proxy", T0)
    assert ps.plan(s, run, T0).start == ("setup",)
    run = run_to_exit(s, run, "setup", 0, T0)
    run = ps.started(run, "main", T0 + 2)
    run = run_to_exit(s, run, "proxy", 1, T0 + 3)  # the sidecar crashes: restarted while main runs
    assert ps.plan(s, run, T0 + 10).start == ("proxy",)
    run = ps.started(run, "proxy", T0 + 10)
    run = ps.exited(run, "main", ps.termination(0, T0 + 20))
    assert ps.pod_phase(s, run) is ps.Phase.RUNNING
    assert ps.plan(s, run, T0 + 20).stop == ("proxy",)
    run = ps.exited(run, "proxy", ps.termination(143, T0 + 21))
    assert ps.plan(s, run, T0 + 30).start == ()
    assert ps.pod_phase(s, run) is ps.Phase.SUCCEEDED


def test_terminating_pod_restarts_nothing_and_ends_failed() -> None:
    s = spec("main", restartPolicy="Always")
    run = ps.terminate(ps.started(ps.new_run(s, T0), "main", T0))
    assert ps.plan(s, run, T0).stop == ("main",)
    run = ps.exited(run, "main", ps.termination(143, T0 + 1, signal=15))
    assert ps.plan(s, run, T0 + 100) == ps.Plan()
    assert ps.pod_phase(s, run) is ps.Phase.FAILED


def test_active_deadline_fails_the_pod() -> None:
    s = spec("main", activeDeadlineSeconds=30)
    run = ps.started(ps.new_run(s, T0), "main", T0)
    assert ps.plan(s, run, T0 + 1).wake_at == T0 + 30
    assert ps.expire(s, run, T0 + 29) is run
    run = ps.expire(s, run, T0 + 30)
    assert run.failure is not None and run.failure[0] == "DeadlineExceeded"
    assert ps.pod_phase(s, run) is ps.Phase.FAILED
    assert ps.plan(s, run, T0 + 30).stop == ("main",)


def test_start_error_and_config_error() -> None:
    s = spec("main", restartPolicy="Never")
    run = ps.start_failed(ps.new_run(s, T0), "main", T0, "no such file")
    ended = run.containers["main"].terminated
    assert ended is not None and (ended.exit_code, ended.reason) == (128, "StartError")
    assert ps.pod_phase(s, run) is ps.Phase.FAILED
    waiting = ps.cannot_create(ps.new_run(s, T0), "main", "CreateContainerConfigError", "missing")
    status = pod_status({}, s, waiting, T0)
    assert status["containerStatuses"][0]["state"] == {
        "waiting": {"reason": "CreateContainerConfigError", "message": "missing"}
    }


def test_status_of_a_crash_looping_container() -> None:
    s = spec("main", restartPolicy="OnFailure")
    run = ps.new_run(s, T0)
    run = run_to_exit(s, run, "main", 2, T0)
    run = run_to_exit(s, run, "main", 2, T0 + 2)
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "status": {"conditions": []}}
    status = pod_status(pod, s, run, T0 + 3)
    (main,) = status["containerStatuses"]
    assert main["restartCount"] == 1
    assert main["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert main["state"]["waiting"]["message"] == "back-off 10s restarting failed container=main pod=p_ns(u)"
    assert main["lastState"]["terminated"]["exitCode"] == 2
    assert status["phase"] == "Running"
    ready = {c["type"]: c["status"] for c in status["conditions"]}
    assert ready == {
        "PodScheduled": "True",
        "Initialized": "True",
        "ContainersReady": "False",
        "Ready": "False",
    }


def test_status_keeps_foreign_conditions_and_transition_times() -> None:
    s = spec("main")
    run = ps.started(ps.new_run(s, T0), "main", T0)
    old = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"},
        {"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:01Z"},
        {"type": "DisruptionTarget", "status": "False"},
    ]
    status = pod_status({"status": {"conditions": old, "nominatedNodeName": "n"}}, s, run, T0 + 60)
    by_type = {c["type"]: c for c in status["conditions"]}
    assert by_type["PodScheduled"] == old[0]
    assert by_type["DisruptionTarget"] == old[2]
    assert by_type["Ready"]["lastTransitionTime"] == "2025-01-01T00:00:01Z"
    assert by_type["ContainersReady"]["lastTransitionTime"] == "2026-01-01T00:01:00Z"
    assert status["nominatedNodeName"] == "n"
    assert status["containerStatuses"][0]["image"] == "img/main"


def test_init_container_statuses_and_waiting_reasons() -> None:
    s = spec("main", init=("a", "b"))
    run = ps.started(ps.new_run(s, T0), "a", T0)
    status = pod_status({}, s, run, T0)
    a, b = status["initContainerStatuses"]
    assert "running" in a["state"]
    assert b["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    initialized = next(c for c in status["conditions"] if c["type"] == "Initialized")
    assert initialized["message"] == "containers with incomplete status: [a b]"


def test_recover_run_after_an_agent_restart() -> None:
    s = spec("done", "busy", "looping", restartPolicy="OnFailure")
    status = {
        "startTime": "2026-01-01T00:00:00Z",
        "containerStatuses": [
            {
                "name": "done",
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
            },
            {"name": "busy", "restartCount": 2, "state": {"running": {"startedAt": "2026-01-01T00:00:05Z"}}},
            {
                "name": "looping",
                "restartCount": 1,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2026-01-01T00:00:09Z"}},
            },
        ],
    }
    run = ps.recover_run(s, status, T0 + 60)
    assert run.start_time == T0
    assert run.containers["done"].succeeded
    busy = run.containers["busy"].terminated
    assert busy is not None and (busy.exit_code, busy.reason) == (137, ps.LOST_REASON)
    assert run.containers["busy"].restart_count == 2
    assert ps.plan(s, run, T0 + 60).start == ("busy", "looping")


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ({}, "BestEffort"),
        ({"requests": {"cpu": "1"}}, "Burstable"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        (
            {"requests": {"cpu": "1000m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            "Guaranteed",
        ),
        ({"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "Burstable"),
    ],
)
def test_qos_class(resources: dict[str, Any], qos: str) -> None:
    assert qos_class({"spec": {"containers": [{"name": "c", "resources": resources}]}}) == qos


def test_go_duration() -> None:
    assert [go_duration(s) for s in (10, 80, 300)] == ["10s", "1m20s", "5m0s"]


@given(st.lists(st.tuples(st.sampled_from(["exit0", "exit1", "wait"]), st.floats(0, 400)), max_size=30))
def test_terminal_phases_are_final_and_restarts_never_come_early(events: list[tuple[str, float]]) -> None:
    s = spec("main", restartPolicy="OnFailure")
    run, now, terminal = ps.new_run(s, T0), T0, None
    for kind, dt in events:
        now += dt
        for name in ps.plan(s, run, now).start:
            ended = run.containers[name].terminated
            assert ended is None or ended.finished_at + run.containers[name].backoff <= now
            run = ps.started(run, name, now)
        if kind != "wait" and run.containers["main"].running:
            run = ps.exited(run, "main", ps.termination(0 if kind == "exit0" else 1, now))
        phase = ps.pod_phase(s, run)
        if terminal is not None:
            assert phase is terminal
        if phase in ps.TERMINAL:
            terminal = phase
