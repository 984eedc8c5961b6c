"""The node agent (kubelet equivalent): runs the pods bound to one node as local process groups.

One ``NodeAgent`` per node. It registers the Node and keeps its Lease fresh (``heartbeat.py``), watches the
pods whose ``spec.nodeName`` is its node through an informer, and reconciles each pod key on a work queue
served by ``POD_WORKERS`` threads (never two at once for one pod, as the kubelet's pod workers):

- a new pod gets its GPUs, then its containers as ``pod_state.plan`` says; process exits come back as queue
  events;
- one status write per change, computed by ``pod_status`` from the pod's ``PodRun``; the kubelet's events
  about containers are queued and written by one thread (``EventSink``), never holding up a pod;
- a delete of a running pod only marks it (``deletionTimestamp``, ``deletionGracePeriodSeconds``: the store's
  graceful deletion, ``store/graceful.py``, as kube-apiserver's); its process groups are stopped (SIGTERM,
  the grace period, SIGKILL) by the ``Supervisor`` that watches every container on one thread
  (``supervisor.py``); once none is left its final status is written and the agent deletes it with grace 0
  and a UID precondition, as the kubelet's status manager does, so the pod disappears only after its
  processes. No finalizer: the kubelet keeps none (pods of an agent that went away are the pod garbage
  collector's, ``controllers/podgc.py``);
- a finished pod releases its GPUs and ports; a pod that vanished (or was replaced under the same name) has
  its processes stopped in the background.

The decisions are the pure ``pod_state`` / ``pod_status`` functions; this module only does the I/O.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gangplane.agent import pod_state as ps
from gangplane.agent import sandbox
from gangplane.agent.env import ConfigError
from gangplane.agent.heartbeat import Heartbeat, register
from gangplane.agent.images_build import EnvironmentCache, cache_dir
from gangplane.agent.images_prepare import ImageEnvironments
from gangplane.agent.kubelet_events import EventSink, backoff_message, backoffs_to_report, container_event
from gangplane.agent.launch import (
    DevicePool,
    LaunchContext,
    PodPlace,
    build_launch,
    container_gpus,
    pod_gpus,
)
from gangplane.agent.leftovers import kill_groups, leftover_groups
from gangplane.agent.names import PortAllocator, job_identity
from gangplane.agent.nodes import GPU_RESOURCE, NodeSpec
from gangplane.agent.pod_access import (
    container_of,
    grace_of,
    newer,
    remembered,
    result_after,
    same_but_version,
    store_reader,
    uid_of,
    version_of,
    with_memory_cgroup,
)
from gangplane.agent.pod_deletion import LEGACY_FINALIZER, confirm_deleted, without_legacy_finalizer
from gangplane.agent.pod_status import pod_status
from gangplane.agent.prober import Prober, Target, gates_readiness, restart_message
from gangplane.agent.probes import probes_of
from gangplane.agent.process import (
    ContainerProcess,
    Launch,
    StartError,
    base_environment,
    rotate_log,
    start,
)
from gangplane.agent.rsh_pods import adapt as adapt_for_mpi
from gangplane.agent.rsh_pods import is_root
from gangplane.agent.service_account import ApiEndpoint, service_account_volume, token_source
from gangplane.agent.supervisor import Supervisor
from gangplane.agent.volumes import has_projections, pod_volumes
from gangplane.client import Controller, Informer, Result
from gangplane.client.events import EventRecorder
from gangplane.client.informer import Key, object_key
from gangplane.clock import Clock
from gangplane.store.base import EventType, ListOptions, Object, Store
from gangplane.store.catalog import PODS

_log = logging.getLogger(__name__)

CONFIG_RETRY_SECONDS = 2.0
# Pods reconciled at once per node: the kubelet gives every pod its own worker, so a slow start (a process
# spawn, a cgroup, a status write) holds back only its own pod; here a few threads share the node's queue,
# and the queue never hands one pod to two of them.
POD_WORKERS = 8
VOLUME_SYNC_SECONDS = 60.0  # the kubelet's default syncFrequency


@dataclass(slots=True)
class _Pod:
    """The agent's record of one pod (one uid)."""

    uid: str
    spec: ps.Spec
    run: ps.PodRun
    gpus: tuple[int, ...] = ()
    procs: dict[str, ContainerProcess] = field(default_factory=dict)
    latest: Object | None = None  # the pod as our last write returned it
    released: bool = False
    backoff_reported: dict[str, int] = field(default_factory=dict)  # container -> restart count reported
    deletion_grace: float | None = None  # the grace its containers are being stopped with, once deleted
    writing: Object | None = None  # the pod as the status write in flight will be echoed (version aside)


class NodeAgent:
    """Runs the pods of one node. ``start`` registers the node and begins; ``stop`` kills every process."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        node: NodeSpec,
        logs_dir: Path,
        ports: PortAllocator,
        *,
        workdir: Path | None = None,
        base_env: Mapping[str, str] | None = None,
        heartbeat_seconds: float = 10.0,
        stop_grace_seconds: float = 5.0,
        isolation: str | None = None,
        images: ImageEnvironments | None = None,
        supervisor: Supervisor | None = None,
    ) -> None:
        self.store, self.clock, self.node, self.ports = store, clock, node, ports
        self._own_supervisor = supervisor is None
        self._supervisor = supervisor or Supervisor(clock)
        self.name = f"node-agent-{node.name}"
        self._devices = DevicePool(node.gpu_devices)
        state = logs_dir.parent  # the control plane's state directory
        self._pods_root = state / "pods"
        self._memory = sandbox.MemoryRoot(state, node.name)  # the token volumes (on a tmpfs)
        self._rsh_dir = state / "rsh"  # MPI pods' remote-shell sockets (rsh_pods.py)
        self._images = images or ImageEnvironments([], EnvironmentCache(cache_dir(state)))
        self._read = store_reader(store)
        self._ctx = LaunchContext(
            logs_dir=logs_dir,
            workdir=workdir,
            base_env=base_environment(base_env),
            allocatable=node.capacity,
            read=self._read,
            real_gpus=bool(node.gpu_devices),
            isolation=isolation or sandbox.mode(),
            state_root=state,
        )
        self._api = ApiEndpoint(state)  # pods' service-account tokens and KUBERNETES_SERVICE_* (once served)
        self._stop_grace = stop_grace_seconds
        self._pods: dict[Key, _Pod] = {}
        self._reaping: list[threading.Event] = []  # set once an abandoned pod's processes are all gone
        self._lock = threading.Lock()
        self.informer = Informer(store, PODS, ListOptions(field_selector=f"spec.nodeName={node.name}"))
        self.controller = Controller(self, clock, workers=POD_WORKERS)
        self.informer.add_handler(self._on_pod_event)
        self._heartbeat = Heartbeat(store, clock, node.name, heartbeat_seconds)
        self.events = EventRecorder(store, clock, "kubelet", host=node.name)
        self._container_events = EventSink(self.events)
        self._prober = Prober(clock, self.events, self.controller.enqueue)

    # -- lifecycle ------------------------------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> None:
        self._memory.clear()  # a crashed agent's: its pods' processes were reaped, a restart rewrites them
        register(self.store, self.clock, self.node)
        self._heartbeat.start()
        self.informer.start()
        if not self.informer.wait_synced(timeout):
            raise TimeoutError(f"{self.name}: pod informer did not sync within {timeout}s")
        self.controller.start()
        self._prober.start()

    def stop(self) -> int:
        """Stop reconciling, then stop every process group of this node (grace ``stop_grace_seconds``);
        returns how many container processes were stopped."""
        self._prober.stop()
        self.controller.stop()
        self.informer.stop()
        self._heartbeat.stop()
        with self._lock:
            pods, self._pods = list(self._pods.values()), {}
        procs = [proc for pod in pods for proc in pod.procs.values()]
        for pod in pods:
            for name in list(pod.procs):
                self._stop(pod, name, self._stop_grace)
        for proc in procs:
            proc.wait()
        for reaped in self._reaping:
            reaped.wait()
        for pod in pods:
            self._release(pod)
        self._container_events.close()
        self._memory.clear(stopping=True)
        if self._own_supervisor:
            self._supervisor.close()
        return len(procs)

    def processes(self) -> dict[Key, list[int]]:
        """Live process-group leaders by pod key (for tests and ``status``)."""
        with self._lock:
            return {k: [p.pid for p in v.procs.values() if p.alive()] for k, v in self._pods.items()}

    # -- reconcile ------------------------------------------------------------------------------------------
    def _on_pod_event(self, kind: EventType, pod: Object, old: Object | None) -> None:
        """Queue the pod, except for the echo of this agent's own writes to it: the reconcile that made a
        write already acted on that version (a status write is conditional on the version it read). (The
        kubelet's pod config goes further and ignores every status-only change, ``checkAndUpdatePod``.)"""
        key = object_key(pod)
        if kind is EventType.MODIFIED and self._own_echo(key, pod):
            return
        self.controller.enqueue(key)

    def _own_echo(self, key: Key, pod: Object) -> bool:
        state = self._pods.get(key)  # no lock: one dict read, and a stale answer only costs a reconcile
        if state is None or state.latest is None:
            return False
        seen, ours = (int(o["metadata"].get("resourceVersion") or 0) for o in (pod, state.latest))
        if seen == ours:
            state.latest = pod  # the informer's (shared) dict, equal to our write's private copy, now freed
        if seen <= ours:  # or older: the watch is behind our writes, each made on the version it read
            return True
        # an in-process store tells its watchers before the write returns: the echo can come first
        writing = state.writing
        return writing is not None and same_but_version(pod, writing)

    def reconcile(self, key: Key) -> Result:
        pod = self.informer.get(*key)
        with self._lock:
            state = self._pods.get(key)
        if state is not None and (pod is None or uid_of(pod) != state.uid):
            self._abandon(key, state)
            state = None
        if pod is None:
            return Result()
        if state is None:
            state = self._admit(key, pod)
            if state is None:
                return Result()
        # once the informer has caught up, keep its (shared) dict: our write's private copy is freed
        pod = state.latest = newer(pod, state.latest)
        self._absorb_exits(state)
        if pod["metadata"].get("deletionTimestamp"):
            return self._terminate(key, pod, state)
        return self._sync(key, pod, state)

    def _admit(self, key: Key, pod: Object) -> _Pod | None:
        """A pod seen for the first time: give it devices, start its run. One being deleted (marked while this
        agent was away) is let go at once: nothing of it runs here any more."""
        status = pod.get("status") or {}
        if status.get("startTime"):
            kill_groups(leftover_groups(status))  # a crashed control plane's processes must not live on
        if pod["metadata"].get("deletionTimestamp"):
            confirm_deleted(self.store, without_legacy_finalizer(self.store, pod))
            return None
        if status.get("phase") in ps.TERMINAL:
            without_legacy_finalizer(self.store, pod)
            return None
        pod = without_legacy_finalizer(self.store, pod)
        spec, now = ps.spec_of(pod), self.clock.now()
        run = ps.recover_run(spec, status, now) if status.get("startTime") else ps.new_run(spec, now)
        state = _Pod(uid_of(pod), spec, run, latest=pod)
        self._assign_devices(pod, state)
        with self._lock:
            self._pods[key] = state
        return state

    def _assign_devices(self, pod: Object, state: _Pod) -> None:
        wanted = pod_gpus(pod)
        if not wanted or not self.node.gpu_devices:
            return
        devices = self._devices.allocate(state.uid, wanted)
        if devices is None:
            message = (
                f"Allocate failed due to requested number of devices unavailable for {GPU_RESOURCE}. "
                f"Requested: {wanted}, Available: {self._devices.available()}"
            )
            state.run = ps.fail(state.run, "UnexpectedAdmissionError", message)
        else:
            state.gpus = devices

    def _absorb_exits(self, state: _Pod) -> None:
        for name, proc in list(state.procs.items()):
            if proc.ended is not None:
                state.run = ps.exited(state.run, name, proc.ended)
                del state.procs[name]
                self._prober.forget(state.uid, name)
        if not state.procs:  # an emptied dict keeps its table (184 bytes; 64 anew): finished pods stay here
            state.procs = {}

    def _sync(self, key: Key, pod: Object, state: _Pod) -> Result:
        now = self.clock.now()
        state.run = ps.expire(state.spec, state.run, now)
        grace = grace_of(pod)
        self._apply_probes(pod, state, grace)
        plan = ps.plan(state.spec, state.run, now)
        for name in plan.stop:
            if name in state.procs and not state.procs[name].stopping:
                self._stop(state, name, grace, pod)
        plan, started, retry = self._start_planned(key, pod, state, plan, now)
        refresh = self._refresh_volumes(pod, state, rewrite=not started)
        self._report_backoff(pod, state, now)
        self._write_status(pod, state)
        if ps.pod_phase(state.spec, state.run) in ps.TERMINAL and not state.procs:
            self._release(state)
            self._memory.remove(pod)  # a finished pod's tmpfs volumes are torn down, as the kubelet's are
        retry_at = CONFIG_RETRY_SECONDS if retry else refresh
        return result_after(now, plan.wake_at, retry_at)

    def _start_planned(
        self, key: Key, pod: Object, state: _Pod, plan: ps.Plan, now: float
    ) -> tuple[ps.Plan, bool, bool]:
        """Start what ``plan`` says, then what the plan of the new state says (a started sidecar lets the next
        init container go), until a plan starts nothing: this pass's own status write does not bring the pod
        back (``_on_pod_event``). Returns that last plan (its ``wake_at``), whether anything started, and
        whether a container's configuration is to be retried."""
        tried: set[str] = set()  # each container is tried at most once a pass
        retry = False
        while not retry and (names := [n for n in plan.start if n not in tried]):
            tried.update(names)
            retry = any([self._start(key, pod, state, name) for name in names])
            plan = ps.plan(state.spec, state.run, now)
        return plan, bool(tried), retry or bool(plan.start)  # one tried again this pass: look again soon

    def _refresh_volumes(self, pod: Object, state: _Pod, *, rewrite: bool) -> float | None:
        """While containers run, ConfigMap/Secret/downward API volumes follow their sources, rewritten (only
        when changed; ``rewrite`` False: they were just written for a start) every ``VOLUME_SYNC_SECONDS`` as
        the kubelet's periodic sync does; a source that vanished leaves the files as they were."""
        if not state.procs or not has_projections(pod):
            return None
        if rewrite:
            with contextlib.suppress(ConfigError, OSError):
                self._place(pod)
        return VOLUME_SYNC_SECONDS

    def _start(self, key: Key, pod: Object, state: _Pod, name: str) -> bool:
        """Start one container; True when its configuration is not resolvable yet (try again later)."""
        container = container_of(pod, name)
        job = job_identity(pod)
        port_map = self.ports.port_map(job.key, state.uid) if job else (lambda port: port)
        gpus = container_gpus(pod, state.gpus).get(name, ())
        now = self.clock.now()
        restarted = state.run.containers[name].terminated is not None
        image = self._images.prepare((state.uid, name), container, lambda: self.controller.enqueue(key))
        for event in image.events:
            self._container_event(pod, name, *event)
        if image.container is None:  # the image's environment is being built, or failed to build
            state.run = image.held(state.run, name)
            return not image.failure
        container = image.container
        try:
            container = adapt_for_mpi(pod, container, self._rsh_dir, sys.executable, is_root())
            launch = build_launch(pod, container, image.context(self._ctx), port_map, gpus, self._place(pod))
            launch = with_memory_cgroup(container, state.uid, launch)
            rotate_log(launch.log_path, keep_previous=restarted)
            proc = start(launch, self.clock)
        except ConfigError as err:
            state.run = ps.cannot_create(state.run, name, "CreateContainerConfigError", str(err))
            self._container_event(pod, name, "Warning", "Failed", f"Error: {err}")
            return True
        except StartError as err:
            state.run = ps.start_failed(state.run, name, now, str(err))
            self._container_event(pod, name, "Warning", "Failed", f"Error: {err}")
            return False
        state.procs[name] = proc
        self._supervisor.watch(proc, lambda _: self.controller.enqueue(key))
        state.run = ps.started(state.run, name, proc.started_at, proc.pid)
        self._watch_probes(key, pod, state, container, launch, proc)
        self._container_event(pod, name, "Normal", "Created", f"Created container: {name}")
        self._container_event(pod, name, "Normal", "Started", f"Started container {name}")
        return False

    def _watch_probes(
        self,
        key: Key,
        pod: Object,
        state: _Pod,
        container: dict[str, Any],
        launch: Launch,
        proc: ContainerProcess,
    ) -> None:
        found = probes_of(container)
        if not found:
            return
        name, in_namespace = str(container["name"]), self._ctx.isolation == sandbox.NAMESPACE
        target = Target(
            key, pod, container, found, proc.started_at, launch.env, launch.cwd, proc.pid, in_namespace
        )
        self._prober.watch(state.uid, name, target)
        if gates_readiness(found):
            state.run = ps.set_probe_ready(state.run, name, False)

    def _apply_probes(self, pod: Object, state: _Pod, grace: float) -> None:
        """The probes' verdicts: readiness into the status; a failed liveness/startup probe restarts."""
        for name, proc in state.procs.items():
            verdicts = self._prober.verdicts(state.uid, name)
            if verdicts is None or proc.stopping:
                continue
            state.run = ps.set_probe_ready(state.run, name, verdicts.ready)
            if verdicts.restart:
                self._container_event(pod, name, "Normal", "Killing", restart_message(name, verdicts.restart))
                self._prober.forget(state.uid, name)
                self._stop(state, name, grace)

    def _place(self, pod: Object) -> PodPlace:
        """The pod's sandbox directory, with its volumes (re)written: a ConfigMap or Secret change reaches
        the files by the next container start."""
        folder = sandbox.pod_dir(self._pods_root, pod)
        folder.mkdir(parents=True, exist_ok=True)
        access, read, memory = self._api.get(), remembered(self._read), self._memory.pod_dir(pod)
        token = token_source(pod, read, access)
        volumes = pod_volumes(pod, folder, read, self.node.capacity, token, memory)
        volumes |= service_account_volume(pod, memory or folder, read, access)
        return PodPlace(folder, volumes, access.env() if access else {}, memory)

    def _report_backoff(self, pod: Object, state: _Pod, now: float) -> None:
        """kubelet's ``BackOff`` event, once per restart a container waits out (repeats are counted)."""
        for name, count in backoffs_to_report(state.spec, state.run, state.backoff_reported, now):
            state.backoff_reported[name] = count
            self._container_event(pod, name, "Warning", "BackOff", backoff_message(pod, name))

    def _container_event(self, pod: Object, name: str, type_: str, reason: str, message: str) -> None:
        container_event(self._container_events, pod, name, type_, reason, message)

    def _terminate(self, key: Key, pod: Object, state: _Pod) -> Result:
        """Deletion: stop everything; when nothing runs any more, report and let the pod go. A later delete
        with a shorter grace period (``kubectl delete --grace-period``) shortens the wait for SIGKILL, as the
        kubelet's pod workers do."""
        state.run = ps.terminate(state.run)
        grace = grace_of(pod)
        shorter = state.deletion_grace is not None and grace < state.deletion_grace
        for name, proc in state.procs.items():
            if not proc.stopping:
                self._stop(state, name, grace, pod)
            elif shorter:
                self._supervisor.stop(proc, grace)  # the earlier SIGKILL deadline still stands if sooner
        state.deletion_grace = grace if state.deletion_grace is None else min(grace, state.deletion_grace)
        if state.procs:
            return Result()  # each exit enqueues the key again
        self._write_status(pod, state)
        self._release(state)
        with self._lock:
            self._pods.pop(key, None)
        self._remove_dirs(pod)
        confirm_deleted(self.store, newer(pod, state.latest))
        return Result()

    def _abandon(self, key: Key, state: _Pod) -> None:
        """The pod is gone from the API (or replaced): stop its processes in the background."""
        with self._lock:
            self._pods.pop(key, None)
        grace = float((state.latest or {}).get("spec", {}).get("terminationGracePeriodSeconds") or 0)
        reaped, left = threading.Event(), [len(state.procs)]

        def reap(_: ContainerProcess | None = None) -> None:
            with self._lock:
                left[0] -= 1
                if left[0] > 0:
                    return
            self._release(state)
            if state.latest is not None:
                self._remove_dirs(state.latest)
            reaped.set()

        with self._lock:
            self._reaping = [e for e in self._reaping if not e.is_set()] + [reaped]
        if not state.procs:
            left[0] = 1
            reap()
        for name in list(state.procs):
            self._stop(state, name, grace, then=reap)

    # -- I/O helpers ----------------------------------------------------------------------------------------
    def _remove_dirs(self, pod: Object) -> None:
        """The pod's sandbox (its emptyDirs go with the pod) and its token volume in memory."""
        shutil.rmtree(sandbox.pod_dir(self._pods_root, pod), ignore_errors=True)
        self._memory.remove(pod)

    def _stop(
        self,
        state: _Pod,
        name: str,
        grace: float,
        pod: Object | None = None,
        then: Callable[[ContainerProcess], None] | None = None,
    ) -> None:
        proc = state.procs[name]
        if pod is not None:
            self._container_event(pod, name, "Normal", "Killing", f"Stopping container {name}")
        self._supervisor.stop(proc, grace, then)

    def _release(self, state: _Pod) -> None:
        if state.released:
            return
        state.released = True
        self._images.forget(state.uid)
        self._devices.release(state.uid)
        job = job_identity(state.latest or {})
        if job is not None:
            self.ports.release(job.key, state.uid)

    def _write_status(self, pod: Object, state: _Pod) -> None:
        status = pod_status(pod, state.spec, state.run, self.clock.now())
        if status == pod.get("status"):
            return
        state.writing = {**pod, "status": status}
        try:
            written = self.store.update_status(PODS, state.writing)
            cached = self.informer.get(*object_key(pod))  # its echo already seen: keep the shared dict
            same = cached is not None and version_of(cached) == version_of(written)
            state.latest = cached if same else written
        finally:
            state.writing = None


__all__ = ["LEGACY_FINALIZER", "NodeAgent"]
