"""Per-cycle queue accounting: the callbacks Volcano's ``proportion`` or ``capacity`` plugin registers
(QueueOrder, Overused, Allocatable, JobEnqueueable, Preemptive, Reclaimable; volcano.md §8).

A ``QueueBook`` is built once per cycle from the queues' policies and the jobs' usage, then moved by
``allocate``/``release`` as actions place or evict tasks, so queue order and quota checks see the cycle's own
decisions (upstream's allocate/deallocate event handlers). It never reads the cluster itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from functools import cache

import numpy as np

from gangplane.api.quantity import format_quantity
from gangplane.schedulers.volcano import proportion as prop
from gangplane.schedulers.volcano import vec
from gangplane.schedulers.volcano.carried import OrderKey
from gangplane.schedulers.volcano.filling import LastFilling
from gangplane.schedulers.volcano.proportion import ROOT, QueuePolicy
from gangplane.schedulers.volcano.vec import Vec


class SharePolicy(StrEnum):
    PROPORTION = "proportion"
    CAPACITY = "capacity"


@dataclass(frozen=True, slots=True)
class QueueDemand:
    """What a queue's jobs hold and want at cycle start (volcano.md §8 queue attributes)."""

    allocated: Vec
    request: Vec  # allocated + pending
    inqueue: Vec
    elastic: Vec


@dataclass(slots=True)
class QueueAttr:
    policy: QueuePolicy
    deserved: Vec
    real_capability: Vec
    allocated: Vec
    request: Vec
    inqueue: Vec
    elastic: Vec


class QueueBook:
    """The share plugin's view of every queue for one cycle."""

    def __init__(
        self,
        names: Sequence[str],
        total: Vec,
        policies: Sequence[QueuePolicy],
        demands: Mapping[str, QueueDemand],
        policy: SharePolicy = SharePolicy.PROPORTION,
        hierarchical: bool = False,
        kept: LastFilling | None = None,
    ) -> None:
        """``kept``: the last water-filling, reused while its inputs recur (a session kept across passes)."""
        self.names = tuple(names)
        self.total = total
        self.policy = policy
        self.hierarchical = hierarchical and policy == SharePolicy.CAPACITY
        self._kept = kept or LastFilling()
        self.carried = self._kept.carried
        self.attrs = _build_attrs(total, policies, demands, policy, self.hierarchical, self._kept)
        tree = [p for p in policies if p.name != ROOT] if self.hierarchical else []  # flat: never read
        self.parents = {p.name: (p.parent or ROOT) for p in tree}
        self._children = {p.parent or ROOT for p in tree}

    # ------------------------------------------------------------ lookups

    def __contains__(self, name: object) -> bool:
        return name in self.attrs

    def attr(self, name: str) -> QueueAttr:
        return self.attrs[name]

    def is_leaf(self, name: str) -> bool:
        return not self.hierarchical or name not in self._children

    def chain(self, name: str) -> list[str]:
        """The queue and, under capacity's hierarchy, its ancestors below ``root``."""
        names = [name]
        while self.hierarchical and (parent := self.parents.get(names[-1])) not in (None, ROOT):
            names.append(parent)
        return names

    def share(self, name: str) -> float:
        attr = self.attrs[name]
        if self.policy == SharePolicy.CAPACITY and attr.policy.deserved is None:
            return 1.0
        return vec.share(attr.allocated, attr.deserved)

    def order_key(self, name: str) -> OrderKey:
        """QueueOrder: higher priority, then lower share, then (capacity) deserved before best-effort. Kept
        (``Carried``) while the queue's allocation, deserved share and policy are the same objects: allocate
        asks it of every queue with turns each pass, and most queues' do not move."""
        attr = self.attrs[name]
        found = self.carried.order_keys.get(name)
        if (
            found is not None
            and found[0] is attr.allocated
            and found[1] is attr.deserved
            and found[2] is attr.policy
            and found[3] is self.policy
        ):
            return found[4]
        key = self._order_key(name, attr)
        self.carried.order_keys[name] = (attr.allocated, attr.deserved, attr.policy, self.policy, key)
        return key

    def _order_key(self, name: str, attr: QueueAttr) -> OrderKey:
        best_effort = int(self.policy == SharePolicy.CAPACITY and attr.policy.deserved is None)
        return (-attr.policy.priority, self.share(name), best_effort, attr.policy.order)

    # ------------------------------------------------------------ callbacks

    def overused(self, name: str) -> bool:
        """Proportion: deserved ≤ allocated everywhere. Capacity: real capability ≤ allocated everywhere.
        Kept (``Carried``) while the bound and the allocation are the same objects."""
        attr = self.attrs[name]
        bound = attr.deserved if self.policy == SharePolicy.PROPORTION else attr.real_capability
        found = self.carried.overused.get(name)
        if found is not None and found[0] is bound and found[1] is attr.allocated:
            return found[2]
        answer = vec.le(bound, attr.allocated)
        self.carried.overused[name] = (bound, attr.allocated, answer)
        return answer

    def allocatable(self, name: str, request: Vec) -> bool:
        """``allocatable_reason(...) is None`` without building the message (hot path: without the
        hierarchy the chain is the queue alone, tested without building it)."""
        if not self.hierarchical:
            attr = self.attrs[name]
            bound = attr.deserved if self.policy == SharePolicy.PROPORTION else attr.real_capability
            return attr.policy.is_open and vec.le_on(attr.allocated + request, bound, request)
        for queue in self.chain(name):
            attr = self.attrs[queue]
            if not attr.policy.is_open or not vec.le_on(
                attr.allocated + request, self._quota(attr)[0], request
            ):
                return False
        return True

    def allocatable_reason(self, name: str, request: Vec) -> str | None:
        """``None`` when ``request`` may be added to the queue; else why not (plain words with numbers)."""
        for queue in self.chain(name):
            attr = self.attrs[queue]
            if not attr.policy.is_open:
                return f"queue {queue} is {attr.policy.state.value}"
            bound, label = self._quota(attr)
            if not vec.le_on(attr.allocated + request, bound, request):
                return _over(self.names, queue, label, bound, attr.allocated, request)
        return None

    def overused_reason(self, name: str) -> str:
        """Why an Overused queue gets nothing more this cycle, with what it holds against its bound."""
        attr = self.attrs[name]
        bound, label = self._quota(attr)
        held = [i for i, used in enumerate(attr.allocated.tolist()) if used > 0] or [0]
        parts = ", ".join(
            f"{self.names[i]}={quantity_text(self.names[i], attr.allocated[i])} of "
            f"{quantity_text(self.names[i], bound[i])}"
            for i in held
        )
        return f"queue {name} is overused: it holds its {label} ({parts} in use)"

    def _quota(self, attr: QueueAttr) -> tuple[Vec, str]:
        if self.policy == SharePolicy.PROPORTION:
            return attr.deserved, "deserved share"
        return attr.real_capability, "capability"

    def enqueueable(self, name: str, min_resources: Vec) -> bool:
        """``enqueue_reason(...) is None`` without building the message (hot path)."""
        if not self.hierarchical:  # the chain is the queue alone
            attr = self.attrs[name]
            held = attr.allocated + attr.inqueue - attr.elastic
            return attr.policy.is_open and vec.le_on(
                held + min_resources, attr.real_capability, min_resources
            )
        for queue in self.chain(name):
            attr = self.attrs[queue]
            held = attr.allocated + attr.inqueue - attr.elastic
            if not attr.policy.is_open or not vec.le_on(
                held + min_resources, attr.real_capability, min_resources
            ):
                return False
        return True

    def enqueue_reason(self, name: str, min_resources: Vec) -> str | None:
        """JobEnqueueable: ``minResources + allocated + inqueue − elastic ≤ realCapability`` (every level)."""
        for queue in self.chain(name):
            attr = self.attrs[queue]
            if not attr.policy.is_open:
                return f"queue {queue} is {attr.policy.state.value}"
            held = attr.allocated + attr.inqueue - attr.elastic
            if not vec.le_on(held + min_resources, attr.real_capability, min_resources):
                return _over(self.names, queue, "capability", attr.real_capability, held, min_resources)
        return None

    def preemptive(self, name: str, request: Vec) -> bool:
        """May this queue take ``request`` by reclaiming? Capacity also needs headroom under deserved. With
        the hierarchy only the queue's own real capability counts, as capacity's PreemptiveFn checks it:
        the victims may well be under the same ancestor and free its room."""
        attr = self.attrs[name]
        if self.hierarchical:
            if not attr.policy.is_open or not vec.le_on(
                attr.allocated + request, attr.real_capability, request
            ):
                return False
        elif self.allocatable_reason(name, request) is not None:
            return False
        if self.policy == SharePolicy.PROPORTION:
            return True
        wanted = request > 0
        return bool(np.any((attr.allocated + request)[wanted] <= attr.deserved[wanted] + 1e-9))

    def reclaimable(self, victim_queue: str, victim: Vec) -> bool:
        """May a task holding ``victim`` be taken back from ``victim_queue`` now?"""
        attr = self.attrs[victim_queue]
        if not self.may_give(victim_queue):
            return False
        if self.policy == SharePolicy.PROPORTION:
            return True
        if not vec.le(attr.policy.guarantee, attr.allocated - victim):
            return False
        relevant = (victim > 0) & (attr.deserved > 0)  # ``GreaterPartlyWithRelevantDimensions``
        if not np.any(relevant):
            return True  # ``isImmediateVictim``: nothing the victim uses is in the queue's deserved
        return bool(np.any((attr.allocated > attr.deserved + 1e-9) & relevant))

    def may_give(self, victim_queue: str) -> bool:
        """``reclaimable`` can hold for some victim of this queue: it is reclaimable and (proportion) above
        its deserved share. Releasing victims only lowers ``allocated``, so once false it stays false while
        victims are being removed."""
        attr = self.attrs[victim_queue]
        if not attr.policy.reclaimable:
            return False
        return self.policy != SharePolicy.PROPORTION or not self._kept.within(
            victim_queue, attr.allocated, attr.deserved
        )

    # ------------------------------------------------------------ events

    def allocate(self, name: str, request: Vec) -> None:
        for queue in self.chain(name):
            self.attrs[queue].allocated = self.attrs[queue].allocated + request

    def release(self, name: str, request: Vec) -> None:
        for queue in self.chain(name):
            self.attrs[queue].allocated = self.attrs[queue].allocated - request

    def add_inqueue(self, name: str, min_resources: Vec) -> None:
        for queue in self.chain(name):
            self.attrs[queue].inqueue = self.attrs[queue].inqueue + min_resources


def _over(names: Sequence[str], queue: str, label: str, bound: Vec, used: Vec, request: Vec) -> str:
    dim = int(np.argmax(np.where(request > 0, used + request - bound, -np.inf)))
    return (
        f"queue {queue} at its {label} {names[dim]}={quantity_text(names[dim], bound[dim])}, "
        f"{quantity_text(names[dim], used[dim])} in use, {quantity_text(names[dim], request[dim])} more requested"
    )


def quantity_text(name: str, value: float) -> str:
    """A quantity as people write it: cpu in cores (vectors hold millicores), memory with a binary suffix."""
    if np.isinf(value):
        return "unbounded"
    amount = Decimal(round(value)) / 1000 if name == "cpu" else Decimal(round(value))
    return format_quantity(amount, binary=name == "memory")


def _build_attrs(
    total: Vec,
    policies: Sequence[QueuePolicy],
    demands: Mapping[str, QueueDemand],
    policy: SharePolicy,
    hierarchical: bool,
    kept: LastFilling,
) -> dict[str, QueueAttr]:
    empty = _no_demand(len(total))
    caps = (
        prop.hierarchical_capabilities(total, policies)
        if hierarchical
        else kept.capabilities(total, policies)
    )
    if policy == SharePolicy.PROPORTION:
        requests = {name: d.request for name, d in demands.items()}
        deserved = kept.deserved(total, policies, requests)
    else:
        deserved = {p.name: prop.capacity_deserved(p, caps[p.name]) for p in policies}
    attrs = {}
    for p in policies:
        d = demands.get(p.name, empty)
        attrs[p.name] = QueueAttr(
            p, deserved[p.name], caps[p.name], d.allocated, d.request, d.inqueue, d.elastic
        )
    if hierarchical:
        _roll_up(attrs, policies)
    return attrs


@cache
def _no_demand(dims: int) -> QueueDemand:
    """A queue without jobs holds and wants nothing (shared: a queue's vectors are replaced, never changed
    in place)."""
    return QueueDemand(vec.zeros(dims), vec.zeros(dims), vec.zeros(dims), vec.zeros(dims))


def _roll_up(attrs: dict[str, QueueAttr], policies: Sequence[QueuePolicy]) -> None:
    """Inner queues hold the sums of their subtree's usage (upstream sums ``allocated`` up the parent chain)."""
    children = prop.hierarchy(policies)

    def visit(name: str) -> None:
        for child in children.get(name, []):
            visit(child)
            if name in attrs and name != ROOT:
                for field_name in ("allocated", "request", "inqueue", "elastic"):
                    total = getattr(attrs[name], field_name) + getattr(attrs[child], field_name)
                    setattr(attrs[name], field_name, total)

    visit(ROOT)
