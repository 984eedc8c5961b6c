"""Leader election with a coordination.k8s.io/v1 Lease, as client-go's ``leaderelection`` does it.

The decision is pure (``next_lease``): a replica may take the lease when it is free, expired
(``renewTime + leaseDurationSeconds`` passed) or already its own; every write is an optimistic-concurrency
update, so two replicas can never both believe they lead. ``LeaderElector`` is the shell: it retries every
``retry_period`` and calls ``on_stopped`` when a renewal fails for longer than ``renew_deadline``, after which
the process is expected to stop its controllers (controller-runtime exits).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from gangplane.clock import Clock
from gangplane.errors import AlreadyExists, ApiError, Conflict, NotFound
from gangplane.store.base import Object, Store
from gangplane.store.catalog import LEASES

_log = logging.getLogger(__name__)


def _micro(seconds: float) -> str:
    """Lease times are MicroTime: RFC 3339 with microseconds."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(text: str | None) -> float:
    if not text:
        return 0.0
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True, slots=True)
class LeaseConfig:
    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


def next_lease(lease: Object | None, config: LeaseConfig, now: float) -> Object | None:
    """The Lease to write to hold leadership now, or None when another live holder has it."""
    spec = dict((lease or {}).get("spec") or {})
    holder = spec.get("holderIdentity")
    expires = _parse(spec.get("renewTime")) + float(spec.get("leaseDurationSeconds") or 0)
    if holder and holder != config.identity and now < expires:
        return None
    taking_over = holder != config.identity
    spec.update(
        holderIdentity=config.identity,
        leaseDurationSeconds=int(config.lease_duration),
        renewTime=_micro(now),
    )
    if taking_over:
        spec["acquireTime"] = _micro(now)
        spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if holder else 0)
    metadata = dict((lease or {}).get("metadata") or {"namespace": config.namespace, "name": config.name})
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}


class LeaderElector:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        config: LeaseConfig,
        *,
        on_started: Callable[[], None],
        on_stopped: Callable[[], None],
    ) -> None:
        self.store, self.clock, self.config = store, clock, config
        self._on_started, self._on_stopped = on_started, on_stopped
        self._leading = False
        self._last_renew = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def leading(self) -> bool:
        return self._leading

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this replica holds the lease afterwards."""
        try:
            current: Object | None = self.store.get(LEASES, self.config.namespace, self.config.name)
        except NotFound:
            current = None
        desired = next_lease(current, self.config, self.clock.now())
        if desired is None:
            return False
        try:
            if current is None:
                self.store.create(LEASES, desired)
            else:
                self.store.update(LEASES, desired)
        except (Conflict, AlreadyExists):
            return False
        return True

    def step(self) -> None:
        """Acquire or renew once and fire the callbacks on transitions."""
        try:
            held = self.try_acquire_or_renew()
        except ApiError as err:
            _log.warning("leader election: %s", err)
            held = False
        now = self.clock.now()
        if held:
            self._last_renew = now
            if not self._leading:
                self._leading = True
                self._on_started()
        elif self._leading and now - self._last_renew > self.config.renew_deadline:
            self._leading = False
            self._on_stopped()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.step()
            self._stop.wait(self.config.retry_period)

    def stop(self) -> None:
        """Stop campaigning; a leader releases the lease so another replica takes over at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._leading:
            self._leading = False
            with contextlib.suppress(ApiError):
                self._release()

    def _release(self) -> None:
        lease = self.store.get(LEASES, self.config.namespace, self.config.name)
        if (lease.get("spec") or {}).get("holderIdentity") == self.config.identity:
            lease["spec"]["holderIdentity"] = ""
            lease["spec"]["leaseDurationSeconds"] = 1
            self.store.update(LEASES, lease)


__all__ = ["LeaderElector", "LeaseConfig", "next_lease"]
