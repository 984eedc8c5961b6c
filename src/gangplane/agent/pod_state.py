"""The pod lifecycle on a node, as pure functions: what to start or stop next, and the pod status to report.

The agent keeps one ``PodRun`` per pod (a record per container) and feeds it process events (``started``,
``exited``, ...); ``plan`` says which containers to start or stop now and when to look again; ``pod_status``
renders the ``status`` the API shows. Rules follow the kubelet:

- init containers run first, one at a time, in order; a restartable init container (``restartPolicy:
  Always``, a sidecar) only has to be running for the next one to start, and is stopped once the regular
  containers are done (``kuberuntime_manager.go`` ``computePodActions``);
- a terminated container restarts per the pod's ``restartPolicy`` (init containers of an ``Always`` pod as
  ``OnFailure``), after a back-off measured from its exit: none for the first restart, then 10 s doubling to
  5 min, reset after 10 min of running (``kuberuntime_manager.go`` ``doBackOff``, ``flowcontrol.Backoff``);
- the phase is the kubelet's ``getPhase`` (``kubelet_pods.go``), and a pod being deleted, past its
  ``activeDeadlineSeconds`` or refused admission becomes terminal once nothing runs.

Nothing here performs I/O or reads the clock; times are seconds since the epoch passed in by the caller.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gangplane.clock import parse_rfc3339

INITIAL_BACKOFF = 10.0
MAX_BACKOFF = 300.0
BACKOFF_RESET = 2 * MAX_BACKOFF  # a container that ran this long starts its back-off afresh
START_ERROR_EXIT = 128  # containerd's exit code for a process that could not be started


class Phase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


TERMINAL = (Phase.SUCCEEDED, Phase.FAILED)


@dataclass(frozen=True, slots=True)
class Termination:
    exit_code: int
    reason: str  # Completed | Error | StartError | OOMKilled
    finished_at: float
    started_at: float | None = None
    message: str = ""
    signal: int | None = None


def termination(
    exit_code: int, finished_at: float, started_at: float | None = None, signal: int | None = None
) -> Termination:
    """A process exit as Kubernetes reports it: ``Completed`` for 0, else ``Error``."""
    reason = "Completed" if exit_code == 0 else "Error"
    return Termination(exit_code, reason, finished_at, started_at, signal=signal)


@dataclass(frozen=True, slots=True)
class ContainerRecord:
    """What the node knows of one container: its current instance and the one before (``lastState``)."""

    name: str
    started_at: float | None = None  # the current instance started (None: never started)
    terminated: Termination | None = None  # the current instance ended
    last: Termination | None = None
    restart_count: int = 0
    backoff: float = 0.0  # the delay before the next restart after this instance ends
    waiting_reason: str = ""  # set while the container cannot be created (CreateContainerConfigError)
    waiting_message: str = ""
    pid: int | None = None
    probe_ready: bool = True  # the readiness (and startup) probes' verdict; True without probes

    @property
    def running(self) -> bool:
        return self.started_at is not None and self.terminated is None

    @property
    def succeeded(self) -> bool:
        return self.terminated is not None and self.terminated.exit_code == 0


@dataclass(frozen=True, slots=True)
class PodRun:
    containers: Mapping[str, ContainerRecord]
    start_time: float
    failure: tuple[str, str] | None = None  # pod-level (reason, message): DeadlineExceeded, ...
    terminating: bool = False  # being deleted or failed: nothing (re)starts


@dataclass(frozen=True, slots=True)
class Plan:
    start: tuple[str, ...] = ()
    stop: tuple[str, ...] = ()
    wake_at: float | None = None  # look again at this time (a back-off or a deadline ends)


@dataclass(frozen=True, slots=True)
class Spec:
    """The parts of a pod spec the lifecycle reads."""

    init: tuple[str, ...]
    sidecars: frozenset[str]
    regular: tuple[str, ...]
    restart_policy: str = "Always"
    active_deadline: float | None = None
    images: Mapping[str, str] = field(default_factory=dict)


_NO_SIDECARS: frozenset[str] = frozenset()  # most pods have none: one set for all (an empty one is 216 bytes)


def spec_of(pod: Mapping[str, Any]) -> Spec:
    spec = pod.get("spec") or {}
    inits = spec.get("initContainers") or []
    regular = spec.get("containers") or []
    deadline = spec.get("activeDeadlineSeconds")
    sidecars = frozenset(str(c["name"]) for c in inits if c.get("restartPolicy") == "Always")
    return Spec(
        init=tuple(str(c["name"]) for c in inits),
        sidecars=sidecars or _NO_SIDECARS,
        regular=tuple(str(c["name"]) for c in regular),
        restart_policy=str(spec.get("restartPolicy") or "Always"),
        active_deadline=float(deadline) if deadline is not None else None,
        images={str(c["name"]): str(c.get("image") or "") for c in [*inits, *regular]},
    )


def new_run(spec: Spec, now: float) -> PodRun:
    names = (*spec.init, *spec.regular)
    return PodRun({n: ContainerRecord(n) for n in names}, start_time=now)


# --- events -----------------------------------------------------------------------------------------------


def _with(run: PodRun, record: ContainerRecord) -> PodRun:
    return dataclasses.replace(run, containers={**run.containers, record.name: record})


def started(run: PodRun, name: str, now: float, pid: int | None = None) -> PodRun:
    """A new instance of ``name`` is running; a previous one becomes ``lastState`` and the back-off grows."""
    old = run.containers[name]
    restarted = old.terminated is not None
    record = dataclasses.replace(
        old,
        started_at=now,
        terminated=None,
        last=old.terminated if restarted else old.last,
        restart_count=old.restart_count + (1 if restarted else 0),
        backoff=_grown(old.backoff) if restarted else old.backoff,
        waiting_reason="",
        waiting_message="",
        pid=pid,
        probe_ready=True,
    )
    return _with(run, record)


def set_probe_ready(run: PodRun, name: str, ready: bool) -> PodRun:
    """The probes decided whether the running container is ready."""
    record = run.containers[name]
    return run if record.probe_ready == ready else _with(run, dataclasses.replace(record, probe_ready=ready))


def _grown(backoff: float) -> float:
    return INITIAL_BACKOFF if backoff == 0 else min(MAX_BACKOFF, backoff * 2)


def exited(run: PodRun, name: str, ended: Termination) -> PodRun:
    """The current instance of ``name`` ended; after a long run its back-off starts afresh."""
    old = run.containers[name]
    started_at = ended.started_at if ended.started_at is not None else old.started_at
    ran = ended.finished_at - (started_at if started_at is not None else ended.finished_at)
    record = dataclasses.replace(
        old,
        terminated=dataclasses.replace(ended, started_at=started_at),
        backoff=0.0 if ran > BACKOFF_RESET else old.backoff,
        pid=None,
    )
    return _with(run, record)


def start_failed(run: PodRun, name: str, now: float, message: str) -> PodRun:
    """The process could not be started (no such executable, ...): a terminated ``StartError`` instance."""
    run = started(run, name, now)
    ended = Termination(START_ERROR_EXIT, "StartError", now, now, message)
    return exited(run, name, ended)


def cannot_create(run: PodRun, name: str, reason: str, message: str) -> PodRun:
    """The container's configuration cannot be resolved yet (a missing ConfigMap key, ...)."""
    record = dataclasses.replace(run.containers[name], waiting_reason=reason, waiting_message=message)
    return _with(run, record)


def fail(run: PodRun, reason: str, message: str) -> PodRun:
    """The pod fails as a whole: running containers are to be stopped and nothing restarts."""
    return dataclasses.replace(run, failure=run.failure or (reason, message), terminating=True)


def terminate(run: PodRun) -> PodRun:
    """The pod is being deleted: nothing restarts, and it ends terminal once its containers are stopped."""
    return dataclasses.replace(run, terminating=True)


def expire(spec: Spec, run: PodRun, now: float) -> PodRun:
    """Fail a pod that outlived ``activeDeadlineSeconds`` (kubelet ``pastActiveDeadline``)."""
    deadline = _deadline(spec, run)
    if deadline is None or now < deadline or pod_phase(spec, run) in TERMINAL:
        return run
    return fail(run, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline")


def _deadline(spec: Spec, run: PodRun) -> float | None:
    return None if spec.active_deadline is None else run.start_time + spec.active_deadline


# --- decisions --------------------------------------------------------------------------------------------


def container_policy(spec: Spec, name: str) -> str:
    """A sidecar always restarts; other init containers of an ``Always`` pod restart on failure."""
    if name in spec.sidecars:
        return "Always"
    if name in spec.init and spec.restart_policy == "Always":
        return "OnFailure"
    return spec.restart_policy


def will_restart(spec: Spec, run: PodRun, record: ContainerRecord) -> bool:
    """A terminated container that the policy brings back (never while the pod is terminating, and a sidecar
    not once the regular containers are done)."""
    if record.name in spec.sidecars and regular_done(spec, run):
        return False
    return _restarts(spec, run, record)


def restart_at(spec: Spec, run: PodRun, record: ContainerRecord) -> float | None:
    """When a not-running container should start: now-ish for a new one, after its back-off for a restart."""
    if record.running:
        return None
    if record.terminated is None:
        return -1.0  # never started: start right away
    return record.terminated.finished_at + record.backoff if will_restart(spec, run, record) else None


def regular_done(spec: Spec, run: PodRun) -> bool:
    """Every regular container has ended for good (so sidecars are stopped and the pod can complete)."""
    records = [run.containers[n] for n in spec.regular]
    return bool(records) and all(r.terminated is not None and not _restarts(spec, run, r) for r in records)


def _restarts(spec: Spec, run: PodRun, record: ContainerRecord) -> bool:
    ended = record.terminated
    if ended is None or run.terminating:
        return False
    policy = container_policy(spec, record.name)
    return policy == "Always" or (policy == "OnFailure" and ended.exit_code != 0)


def initialized(spec: Spec, run: PodRun) -> bool:
    """Init containers are done: each ordinary one succeeded and each sidecar started (sticky once a regular
    container has started)."""
    if any(_ever_started(run.containers[n]) for n in spec.regular):
        return True
    return all(_init_done(spec, run.containers[n]) for n in spec.init)


def _ever_started(record: ContainerRecord) -> bool:
    return record.started_at is not None or record.terminated is not None


def _init_done(spec: Spec, record: ContainerRecord) -> bool:
    return record.running if record.name in spec.sidecars else record.succeeded


def plan(spec: Spec, run: PodRun, now: float) -> Plan:
    """Which containers to start and stop now, and when a back-off or deadline next needs a look."""
    if run.terminating:
        return Plan(stop=tuple(n for n, r in run.containers.items() if r.running))
    if initialized(spec, run):
        names = tuple(n for n in (*spec.init, *spec.regular) if n in spec.sidecars or n in spec.regular)
    else:
        names = _next_init(spec, run)
    due = {n: restart_at(spec, run, run.containers[n]) for n in names}
    start = tuple(n for n, at in due.items() if at is not None and at <= now)
    wakes = [at for at in due.values() if at is not None and at > now]
    deadline = _deadline(spec, run)
    if deadline is not None and pod_phase(spec, run) not in TERMINAL:
        wakes.append(deadline)
    stop = _sidecars_to_stop(spec, run)
    return Plan(start=start, stop=stop, wake_at=min(wakes) if wakes else None)


def _next_init(spec: Spec, run: PodRun) -> tuple[str, ...]:
    """Before initialization completes: the first init container not yet done, if it can go on."""
    for name in spec.init:
        record = run.containers[name]
        if not _init_done(spec, record):
            return () if record.running else (name,)
    return ()


def _sidecars_to_stop(spec: Spec, run: PodRun) -> tuple[str, ...]:
    if not regular_done(spec, run):
        return ()
    return tuple(n for n in spec.init if n in spec.sidecars and run.containers[n].running)


# --- the phase --------------------------------------------------------------------------------------------


def pod_phase(spec: Spec, run: PodRun) -> Phase:
    """The kubelet's ``getPhase`` over the regular containers, after the init containers."""
    if run.failure is not None:
        return Phase.FAILED
    if spec.restart_policy == "Never" and any(_init_failed(spec, run.containers[n]) for n in spec.init):
        return Phase.FAILED
    if not initialized(spec, run) or not spec.regular:
        return Phase.PENDING
    records = [run.containers[n] for n in spec.regular]
    if any(not _ever_started(r) for r in records):
        return Phase.PENDING
    if any(r.running for r in records) or any(run.containers[n].running for n in spec.sidecars):
        return Phase.RUNNING
    return _all_stopped_phase(spec, run, records)


def _init_failed(spec: Spec, record: ContainerRecord) -> bool:
    ended = record.terminated
    return record.name not in spec.sidecars and ended is not None and ended.exit_code != 0


def _all_stopped_phase(spec: Spec, run: PodRun, records: list[ContainerRecord]) -> Phase:
    succeeded = all(r.succeeded and not will_restart(spec, run, r) for r in records)
    if run.terminating:
        return Phase.SUCCEEDED if succeeded else Phase.FAILED
    if spec.restart_policy == "Always":
        return Phase.RUNNING
    if succeeded:
        return Phase.SUCCEEDED
    return Phase.FAILED if spec.restart_policy == "Never" else Phase.RUNNING


# --- recovery ---------------------------------------------------------------------------------------------

LOST_REASON = "ContainerStatusUnknown"
LOST_MESSAGE = "The container could not be located when the pod was terminated"


def recover_run(spec: Spec, status: Mapping[str, Any], now: float) -> PodRun:
    """The run of a pod a previous agent started (its processes are gone): finished containers keep their
    exits, those that were running or waiting to restart end as ``ContainerStatusUnknown`` (exit 137), as
    the kubelet reports containers it can no longer find; restart policies then apply as usual."""
    start = parse_rfc3339(str(status["startTime"])) if status.get("startTime") else now
    given = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    by_name = {str(s.get("name")): s for s in given}
    run = new_run(spec, start)
    records = {n: _recovered(r, by_name.get(n), now) for n, r in run.containers.items()}
    return dataclasses.replace(run, containers=records)


def _recovered(record: ContainerRecord, seen: Mapping[str, Any] | None, now: float) -> ContainerRecord:
    if not seen:
        return record
    restarts = int(seen.get("restartCount") or 0)
    state = seen.get("state") or {}
    last = (seen.get("lastState") or {}).get("terminated")
    ended = state.get("terminated")
    if ended is None and "waiting" in state and last:
        ended, last = last, None  # it was waiting out a back-off
    elif ended is None and "running" in state:
        started_at = state["running"].get("startedAt")
        ended = {"exitCode": 137, "reason": LOST_REASON, "message": LOST_MESSAGE, "startedAt": started_at}
    if ended is None:
        return dataclasses.replace(record, restart_count=restarts)
    return dataclasses.replace(
        record,
        started_at=_time(ended.get("startedAt"), now),
        terminated=_termination(ended, now),
        last=_termination(last, now) if last else None,
        restart_count=restarts,
    )


def _termination(body: Mapping[str, Any], now: float) -> Termination:
    return Termination(
        exit_code=int(body.get("exitCode") or 0),
        reason=str(body.get("reason") or ""),
        finished_at=_time(body.get("finishedAt"), now),
        started_at=_time(body.get("startedAt"), now),
        message=str(body.get("message") or ""),
    )


def _time(text: Any, default: float) -> float:
    return parse_rfc3339(str(text)) if text else default
