"""The proportion plugin's water-filling kept across the passes of a kept session (``LastFilling``): the
queue book (``book.QueueBook``) asks it for each pass's real capabilities and deserved shares, and it
computes them again only when what they are computed from moved."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from gangplane.schedulers.volcano import proportion as prop
from gangplane.schedulers.volcano import vec
from gangplane.schedulers.volcano.carried import Carried
from gangplane.schedulers.volcano.proportion import QueuePolicy
from gangplane.schedulers.volcano.vec import Vec


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
        self._names: tuple[str, ...] = ()  # the names of ``_policies``, in their order
        self._guarantees: dict[str, list[float]] = {}
        self._caps_of: tuple[bytes, tuple[object, ...]] | None = None
        self._caps: dict[str, Vec] = {}
        self._requests: dict[str, Vec | None] = {}  # the requests last read (held: no id is reused)
        self._dims: dict[str, frozenset[int]] = {}  # per queue, the dimensions its request is not +0.0 on
        self._guaranteed: dict[str, frozenset[int]] = {}  # ... its guarantee is not +0.0 on
        self._on: list[int] | None = None  # the dimensions some request or guarantee is not +0.0 on
        self._bounds: tuple[list[int], Bounds] | None = None  # ``_bounds_on``, with the ``on`` it is for
        self._within: dict[str, tuple[Vec, Vec, bool]] = {}  # ``within``: per queue, by its two vectors
        self._spans: dict[str, tuple[prop.Rounds, prop.Span | None]] = {}  # ``_same_rounds``: by rounds
        self.carried = Carried()  # the book's and enqueue's other answers, carried the same way

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
        changed = [name for name in self._names if requests.get(name) is not last.get(name, _UNREAD)]
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

    def within(self, name: str, allocated: Vec, deserved: Vec) -> bool:
        """``vec.le(allocated, deserved)`` of a queue, kept while both are the vectors it was answered for
        (held, so no id is reused; a queue's vectors are replaced, never changed in place): reclaim asks it
        of every queue holding a victim each pass, and most queues' allocation and share do not move."""
        found = self._within.get(name)
        if found is not None and found[0] is allocated and found[1] is deserved:
            return found[2]
        answer = vec.le(allocated, deserved)
        self._within[name] = (allocated, deserved, answer)
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
            self._names = tuple(p.name for p in policies)
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
            if request != old and not self._same_rounds(name, [old[d] for d in on], [request[d] for d in on]):
                return False
        return True

    def _same_rounds(self, name: str, old: list[float], new: list[float]) -> bool:
        """``proportion.same_rounds`` for the queue; over one dimension from the span of requests its rounds
        leave alone (``proportion.rounds_span``), taken once per filling: a busy queue's request moves
        nearly every pass while the filling stands."""
        rounds = self._rounds.get(name, [])
        if len(old) != 1:
            return prop.same_rounds(rounds, old, new)
        found = self._spans.get(name)
        if found is None or found[0] is not rounds:
            found = self._spans[name] = (rounds, prop.rounds_span(rounds, old[0]))
        known = None if found[1] is None else prop.in_span(found[1], new[0])
        return prop.same_rounds(rounds, old, new) if known is None else known


_UNREAD = object()  # no request read yet (``None`` is a queue without one)
Bounds = tuple[tuple[dict[str, list[float]], dict[str, list[float]]], tuple[list[float], bool]]


def _nonzero(values: list[float]) -> frozenset[int]:
    """The dimensions ``proportion.active`` counts for one vector."""
    return frozenset([d for d, v in enumerate(values) if v or math.copysign(1.0, v) < 0])  # ``v``: v != 0.0


__all__ = ["LastFilling"]
