"""Per-cycle queue accounting: the callbacks Volcano's ``proportion`` or ``capacity`` plugin registers
(QueueOrder, Overused, Allocatable, JobEnqueueable, Preemptive, Reclaimable; volcano.md §8).

A ``QueueBook`` is built once per cycle from the queues' policies and the jobs' usage, then moved by
``allocate``/``release`` as actions place or evict tasks, so queue order and quota checks see the cycle's own
decisions (upstream's allocate/deallocate event handlers). It never reads the cluster itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from functools import cache

import numpy as np

from gangplane.api.quantity import format_quantity
from gangplane.schedulers.volcano import proportion as prop
from gangplane.schedulers.volcano import vec
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

    def order_key(self, name: str) -> tuple[int, float, int, tuple[str, str]]:
        """QueueOrder: higher priority, then lower share, then (capacity) deserved before best-effort."""
        attr = self.attrs[name]
        best_effort = int(self.policy == SharePolicy.CAPACITY and attr.policy.deserved is None)
        return (-attr.policy.priority, self.share(name), best_effort, attr.policy.order)

    # ------------------------------------------------------------ callbacks

    def overused(self, name: str) -> bool:
        """Proportion: deserved ≤ allocated everywhere. Capacity: real capability ≤ allocated everywhere."""
        attr = self.attrs[name]
        bound = attr.deserved if self.policy == SharePolicy.PROPORTION else attr.real_capability
        return vec.le(bound, attr.allocated)

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
        return self.policy != SharePolicy.PROPORTION or not self._kept.within(victim_queue, attr)

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


class LastFilling:
    """The proportion plugin's last ``deserved`` with what it was computed from (the total, each queue's
    weight, capability, guarantee and request, and the rounds of the filling): a pass reuses it while the
    total and specs recur and every changed request would have capped no round differently
    (``proportion.same_rounds``: a queue still short of its request, as a busy queue is). It also keeps
    each queue's last "holds no more than its share" answer (``within``)."""

    def __init__(self) -> None:
        self._spec: tuple[object, ...] = ()
        self._asked: dict[str, list[float]] = {}
        self._rounds: dict[str, prop.Rounds] = {}
        self._value: dict[str, Vec] = {}
        self._policies: Sequence[QueuePolicy] = ()  # the sequence last read (held: no id is reused)
        self._queue_specs: tuple[object, ...] = ()
        self._guarantees: dict[str, list[float]] = {}
        self._caps_of: tuple[bytes, tuple[object, ...]] | None = None
        self._caps: dict[str, Vec] = {}
        self._requests: dict[str, Vec | None] = {}  # the requests last read (held: no id is reused)
        self._dims: dict[str, frozenset[int]] = {}  # per queue, the dimensions its request is not +0.0 on
        self._guaranteed: dict[str, frozenset[int]] = {}  # ... its guarantee is not +0.0 on
        self._on: list[int] | None = None  # the dimensions some request or guarantee is not +0.0 on
        self._bounds: tuple[list[int], Bounds] | None = None  # ``_bounds_on``, with the ``on`` it is for
        self._within: dict[str, tuple[Vec, Vec, bool]] = {}  # ``within``: per queue, by its two vectors

    def capabilities(self, total: Vec, policies: Sequence[QueuePolicy]) -> dict[str, Vec]:
        """``proportion.real_capabilities``, computed again only when the total or a queue's spec changed."""
        key = (total.tobytes(), self._specs(policies))
        if key != self._caps_of:
            self._caps = prop.real_capabilities(total, policies)
            self._caps_of, self._bounds = key, None
        return self._caps

    def deserved(
        self, total: Vec, policies: Sequence[QueuePolicy], requests: Mapping[str, Vec]
    ) -> dict[str, Vec]:
        """The water-filling for these requests. A request is replaced, never changed in place, when its
        queue's jobs change (``Kept.demands``): only the requests that are new objects are read again, and
        the active dimensions are found again only when one of theirs moved."""
        queue_specs = self._specs(policies)
        last = self._requests
        changed = [p.name for p in policies if requests.get(p.name, None) is not last.get(p.name, _UNREAD)]
        total_bytes = total.tobytes()
        if not changed and self._spec[:1] == (total_bytes,) and self._spec[2:] == (queue_specs,):
            return self._value
        fresh = {}
        for name in changed:
            request = last[name] = requests.get(name)
            fresh[name] = [0.0] * len(total) if request is None else request.tolist()
            dims = _nonzero(fresh[name])
            if dims != self._dims.get(name):
                self._dims[name], self._on = dims, None
        if self._on is None:
            self._on = sorted(
                set().union(*(self._dims[p.name] for p in policies), *self._guaranteed.values())
            )
        spec = (total_bytes, self._on, queue_specs)
        same = spec == self._spec and self._same(fresh, self._on)
        self._asked.update(fresh)
        if not same:
            self._rounds = {}
            asked = {p.name: prop.pick(self._asked[p.name], self._on) for p in policies}
            filled = prop.water_fill(policies, asked, *self._bounds_on(total, policies), self._rounds)
            self._value = prop.spread(filled, self._on, len(total))
            self._spec = spec
        return self._value

    def within(self, name: str, attr: QueueAttr) -> bool:
        """``vec.le(allocated, deserved)`` of a queue, kept while both are the vectors it was answered for
        (held, so no id is reused; a queue's vectors are replaced, never changed in place): reclaim asks it
        of every queue holding a victim each pass, and most queues' allocation and share do not move."""
        found = self._within.get(name)
        if found is not None and found[0] is attr.allocated and found[1] is attr.deserved:
            return found[2]
        answer = vec.le(attr.allocated, attr.deserved)
        self._within[name] = (attr.allocated, attr.deserved, answer)
        return answer

    def _bounds_on(self, total: Vec, policies: Sequence[QueuePolicy]) -> Bounds:
        """The capabilities and guarantees, what is left to give and whether a dimension outside the active
        ones has some, on the active dimensions: kept while the capabilities and those dimensions are."""
        caps, on = self.capabilities(total, policies), self._on
        assert on is not None
        if self._bounds is None or self._bounds[0] != on:
            left = total.tolist()
            bounds = (
                ({n: prop.pick(c.tolist(), on) for n, c in caps.items()},
                 {n: prop.pick(g, on) for n, g in self._guarantees.items()}),
                (prop.pick(left, on), prop.idle_beyond(left, on)),
            )  # fmt: skip
            self._bounds = (on, bounds)
        return self._bounds[1]

    def _specs(self, policies: Sequence[QueuePolicy]) -> tuple[object, ...]:
        """Each queue's name, weight, capability and guarantee; read again only when a policy is a new
        object (the memo keeps one per Queue resourceVersion; held here, so no id is reused). The same
        sequence as last time is not compared again: it is read-only (a kept pass hands on its inputs')."""
        if policies is not self._policies and (
            len(policies) != len(self._policies)
            or any(p is not q for p, q in zip(policies, self._policies, strict=False))
        ):
            self._queue_specs = tuple(
                (p.name, p.weight, p.capability.tobytes(), p.guarantee.tobytes()) for p in policies
            )
            self._guarantees = {p.name: p.guarantee.tolist() for p in policies}
            self._guaranteed = {name: _nonzero(g) for name, g in self._guarantees.items()}
            self._asked = {p.name: self._asked[p.name] for p in policies if p.name in self._asked}
            self._requests, self._on, self._bounds = {}, None, None  # read every request again
        self._policies = policies
        return self._queue_specs

    def _same(self, fresh: Mapping[str, list[float]], on: list[int]) -> bool:
        """The rounds hold the active dimensions only (the same ones: they are part of the spec); only the
        ``fresh`` (changed) requests can differ from those the rounds were computed with."""
        for name, request in fresh.items():
            old = self._asked.get(name)
            if old is None:
                return False
            if request != old and not prop.same_rounds(
                self._rounds.get(name, []), [old[d] for d in on], [request[d] for d in on]
            ):
                return False
        return True


_UNREAD = object()  # no request read yet (``None`` is a queue without one)
Bounds = tuple[tuple[dict[str, list[float]], dict[str, list[float]]], tuple[list[float], bool]]


def _nonzero(values: list[float]) -> frozenset[int]:
    """The dimensions ``proportion.active`` counts for one vector."""
    return frozenset(d for d, v in enumerate(values) if v != 0.0 or math.copysign(1.0, v) < 0)


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
