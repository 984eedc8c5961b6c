"""Per-cycle KAI queue accounting: fair shares (``fairshare.divide_tree`` per resource), usage rolled up the
queue tree, the queue comparator, capacity checks and the reclaim strategies (kai.md §7).

Moved by ``allocate``/``release`` as actions place or evict, so later decisions in the cycle see earlier
ones. Vectors are (GPU, CPU millicores, memory MB).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gangplane.schedulers.kai.fairshare import queue_fair_shares
from gangplane.schedulers.kai.memo import KaiMemo
from gangplane.schedulers.kai.model import RESOURCES, KaiQueue, Res

_EPS = 1e-9
OrderKey = tuple[int, int, int, int, float, float, float, tuple[str, str]]


@dataclass(slots=True)
class QueueState:
    queue: KaiQueue
    fair: Res
    deserved: Res
    allocated: Res
    allocated_non_preemptible: Res
    requested: Res


_ZERO = np.zeros(len(RESOURCES), dtype=np.float64)
_ZERO.flags.writeable = False  # shared by every new state: states replace their arrays, never write them


def _zeros() -> Res:
    return _ZERO


class KaiBook:
    def __init__(
        self,
        total: Res,
        queues: Sequence[KaiQueue],
        usage: Mapping[str, tuple[Res, Res, Res]],
        k_value: float = 1.0,
        memo: KaiMemo | None = None,
    ) -> None:
        """``usage[leaf]`` = (allocated, allocated non-preemptible, requested = allocated + pending);
        ``memo`` keeps the last fair shares, reused while total, queues and requests are unchanged."""
        self.total = total
        self.k_value = k_value
        self.queues = {q.name: q for q in queues}
        self.children: dict[str | None, list[str]] = {}
        for q in queues:
            parent = q.parent if q.parent in self.queues else None
            self.children.setdefault(parent, []).append(q.name)
        self.states = {
            q.name: QueueState(q, _zeros(), _zeros(), _zeros(), _zeros(), _zeros()) for q in queues
        }
        # the comparator's keys per queue, valid until that queue's state moves (a key reads only its own
        # queue's state); ``leveled`` pairs (the tree is fixed)
        self._keys: dict[str, dict[bytes, OrderKey]] = {}
        self._levels: dict[tuple[str, str], tuple[str, str]] = {}
        # per queue, the allocatable share as an array and as floats with its sum (the comparator's scalar
        # arithmetic), kept while the queue's fair and deserved arrays are the same (read-only) objects
        self._shares: dict[str, tuple[Res, Res, Res, list[float], float]] = {}
        # what ``refresh`` compares: the usage last counted, the queues ``allocate`` moved since, each
        # queue's usage keys (in usage order) and the fair share it last divided by (``_set_fair``)
        self._usage: Mapping[str, tuple[Res, Res, Res]] = {}
        self._moved: set[str] = set()
        self._under: dict[str, list[str]] = {}
        self._fair: Mapping[str, Res] | None = None
        self._deserved_of: dict[str, Res] = {}
        self.refresh(usage, memo)

    def refresh(self, usage: Mapping[str, tuple[Res, Res, Res]], memo: KaiMemo | None = None) -> None:
        """Bring a book kept from an earlier cycle to what a new one over ``usage`` holds (same total, queues
        and ``k_value``): only the queues above a usage entry that changed (a new tuple: ``KeptJobs`` keeps
        each unchanged queue's), or that ``allocate`` moved since, are summed again, in the order a new book
        sums them, so every value is bit for bit the same; an unchanged value keeps its array and the
        comparator keys read from it."""
        if list(usage) != list(self._usage):
            self._under = {name: [k for k in usage if name in self.chain(k)] for name in self.states}
            stale = set(self.states)
        else:
            stale = {q for k, parts in usage.items() if parts is not self._usage[k] for q in self.chain(k)}
            stale |= self._moved
        self._usage, self._moved = usage, set()
        for name in stale:
            self._count(name)
        self._divide(self.k_value, memo)

    def _count(self, name: str) -> None:
        state, sums = self.states[name], [_ZERO, _ZERO, _ZERO]
        for key in self._under[name]:
            sums = [total + part for total, part in zip(sums, self._usage[key], strict=True)]
        current = (state.allocated, state.allocated_non_preemptible, state.requested)
        if any(a.tobytes() != b.tobytes() for a, b in zip(sums, current, strict=True)):
            state.allocated, state.allocated_non_preemptible, state.requested = sums
            self._keys.pop(name, None)

    def _divide(self, k_value: float, memo: KaiMemo | None) -> None:
        """Fair shares per resource; only when queue demand (``requested``), the queues or the total changed
        since the memo's last book (the division reads nothing else)."""
        queues = tuple(self.queues.values())
        key = (k_value, self.total.tobytes(), tuple(self.states[q.name].requested.tobytes() for q in queues))
        if memo is not None and memo.shares is not None:
            kept_key, kept_queues, fair = memo.shares
            if (
                kept_key == key
                and len(kept_queues) == len(queues)
                and all(a is b for a, b in zip(kept_queues, queues, strict=True))
            ):
                self._set_fair(fair)
                return
        requested = {name: state.requested for name, state in self.states.items()}
        fair = queue_fair_shares(self.total, self.queues, self.children, requested, k_value)
        if memo is not None:
            memo.shares = (key, queues, fair)
        self._set_fair(fair)

    def _set_fair(self, fair: Mapping[str, Res]) -> None:
        """Each queue's fair share and deserved quota; a value equal to the one held keeps its array (and
        the comparator keys read from it), and deserved is derived again only from a new parent share."""
        if fair is self._fair:
            return
        self._fair = fair
        for name, value in fair.items():
            state = self.states[name]
            if value.tobytes() != state.fair.tobytes():
                state.fair = fair_share = value.copy()
                fair_share.flags.writeable = False
                self._keys.pop(name, None)
        for name, state in self.states.items():
            parent = state.queue.parent
            parent_total = self.total if parent not in self.states else self.states[parent].fair
            if self._deserved_of.get(name) is not parent_total:
                self._deserved_of[name] = parent_total
                deserved = state.queue.deserved(parent_total)
                if deserved.tobytes() != state.deserved.tobytes():
                    state.deserved = deserved
                    state.deserved.flags.writeable = False
                    self._keys.pop(name, None)

    # ------------------------------------------------------------ lookups

    def is_leaf(self, name: str) -> bool:
        return not self.children.get(name)

    def chain(self, name: str) -> list[str]:
        names = [name]
        while (parent := self.queues[names[-1]].parent) in self.queues and parent not in names:
            names.append(parent)
        return names

    def allocatable_share(self, name: str) -> Res:
        """min(max allowed, max(deserved, fair share)) (a read-only array)."""
        return self._share(name)[2]

    def _share(self, name: str) -> tuple[Res, Res, Res, list[float], float]:
        state = self.states[name]
        kept = self._shares.get(name)
        if kept is None or kept[0] is not state.fair or kept[1] is not state.deserved:
            share = np.minimum(state.queue.max_allowed(), np.maximum(state.deserved, state.fair))
            share.flags.writeable = False
            kept = self._shares[name] = (
                state.fair,
                state.deserved,
                share,
                share.tolist(),
                float(share.sum()),
            )
        return kept

    def dominant_share(self, name: str, extra: Res | None = None) -> float:
        used = self.states[name].allocated if extra is None else self.states[name].allocated + extra
        return _dominant(used.tolist(), self._share(name)[3])

    def order_key(self, name: str, request: Res) -> OrderKey:
        """The queue comparator, first decisive rule wins (kai.md §7 rules 1-8); kept until the book moves."""
        kept = self._keys.setdefault(name, {})
        found = kept.get(request.tobytes())
        if found is None:
            found = kept[request.tobytes()] = self._order_key(name, request)
        return found

    def _order_key(self, name: str, request: Res) -> OrderKey:
        """In Python floats (the same IEEE arithmetic as the arrays, without numpy's per-call cost on
        3-vectors)."""
        state = self.states[name]
        _, _, _, share, share_sum = self._share(name)
        allocated = state.allocated.tolist()
        after = [a + r for a, r in zip(allocated, request.tolist(), strict=True)]
        starved = int(not all(x <= d + _EPS for x, d in zip(after, state.deserved.tolist(), strict=True)))
        blocked = int(any(s <= _EPS and x > _EPS for s, x in zip(share, after, strict=True)))
        return (
            int(self.over_utilized(name)),
            starved,
            -state.queue.priority,
            blocked,
            _dominant(after, share),
            _dominant(allocated, share),
            share_sum,
            state.queue.order,
        )

    # ------------------------------------------------------------ checks

    def capacity_reason(self, name: str, request: Res, preemptible: bool) -> tuple[str, str] | None:
        """``(reason, message)`` when the request breaks a limit (queue or ancestor) or, for non-preemptible
        work, the quota; else ``None``."""
        for queue in self.chain(name):
            state = self.states[queue]
            after = state.allocated + request
            limit = state.queue.max_allowed()
            if np.any(after > limit + _EPS):
                r = int(np.argmax(after - limit))
                return "OverLimit", _message(queue, "limit", limit[r], state.allocated[r], request[r], r)
            if not preemptible:
                quota = state.deserved
                after_np = state.allocated_non_preemptible + request
                if np.any((after_np > quota + _EPS) & (request > 0)):
                    r = int(np.argmax(np.where(request > 0, after_np - quota, -np.inf)))
                    used = state.allocated_non_preemptible[r]
                    return "NonPreemptibleOverQuota", _message(queue, "quota", quota[r], used, request[r], r)
        return None

    def compare(self, first: tuple[str, Res], second: tuple[str, Res]) -> int:
        """The queue comparator over the tree (-1, 0, 1), each side a (leaf queue, its next job's request):
        the two queues' ancestors are compared at the level where their paths part — departments before
        leaves, and leaves only against leaves of the same department — as KAI walks the tree."""
        (q1, r1), (q2, r2) = first, second
        a, b = self.leveled(q1, q2)
        if a == b:
            return 0
        k1, k2 = self.order_key(a, r1), self.order_key(b, r2)
        return -1 if k1 < k2 else int(k1 > k2)

    def victim_order_key(self, name: str) -> tuple[int, int, float]:
        """The queue comparator reversed for victims: over its fair share first, then lower queue priority,
        then larger dominant share."""
        state = self.states[name]
        return (int(not self.over_utilized(name)), state.queue.priority, -self.dominant_share(name))

    def over_utilized(self, name: str) -> bool:
        """``prioritizeUnderUtilized``: fair share below the allocation in *every* resource (KAI's
        ``ResourceQuantities.Less``); over on GPUs alone is not over-utilized."""
        state = self.states[name]
        return bool(np.all(state.fair < state.allocated - _EPS))

    def may_reclaim(self, name: str, request: Res, preemptible: bool = True) -> bool:
        return self.reclaim_refusal(name, request, preemptible) is None

    def reclaim_refusal(self, name: str, request: Res, preemptible: bool = True) -> str | None:
        """Why the queue may not reclaim for ``request``, else ``None`` (``CanReclaimResources``): it would
        pass its fair share, or — for non-preemptible work — its non-preemptible allocation would pass its
        deserved quota."""
        state = self.states[name]
        share = np.maximum(state.fair, state.deserved)
        after = state.allocated + request
        if not np.all(after <= share + _EPS):
            r = int(np.argmax(after - share))
            return _message(name, "fair share", share[r], state.allocated[r], request[r], r)
        return None if preemptible else self._non_preemptible_refusal([name], request)

    def _non_preemptible_refusal(self, names: Sequence[str], request: Res) -> str | None:
        for queue in names:
            state = self.states[queue]
            after = state.allocated_non_preemptible + request
            if not np.all(after <= state.deserved + _EPS):
                r = int(np.argmax(after - state.deserved))
                used = state.allocated_non_preemptible[r]
                return _message(queue, "quota (non-preemptible)", state.deserved[r], used, request[r], r)
        return None

    def boundary_refusal(
        self,
        name: str,
        request: Res,
        preemptible: bool,
        reclaimed: Mapping[str, Res] | None = None,
        multiplier: float = 1.0,
    ) -> str | None:
        """After the victims are released (``reclaimed``: victim queue -> what it gave): at every level of the
        reclaimer's chain, a queue that would pass its fair share must stay less saturated than each sibling it
        reclaimed from, on the resources involved; and non-preemptible work stays within deserved for
        non-preemptible use (``reclaimingQueuesRemainWithinBoundaries``, KAI #374 ``relcaimerSaturationMultiplier``
        = ``multiplier``)."""
        involved = self._involved(reclaimed or {})
        asked = request > _EPS
        for queue in self.chain(name):
            state = self.states[queue]
            after = state.allocated + request
            for sibling, used in involved.items():
                if sibling == queue or self.queues[sibling].parent != state.queue.parent:
                    continue
                other = self.states[sibling]
                for r in np.flatnonzero(used | asked):
                    mine = _saturation(after[r], state.fair[r])
                    theirs = _saturation(other.allocated[r], other.fair[r])
                    if np.isinf(state.fair[r]) and np.isinf(other.fair[r]):
                        continue
                    if mine > 1 and other.fair[r] > 0 and mine * multiplier >= theirs:
                        return (
                            f"queue {queue} would be more saturated than {sibling} on {RESOURCES[r]} "
                            f"({mine:.2f} of its fair share against {theirs:.2f})"
                        )
        return None if preemptible else self._non_preemptible_refusal(self.chain(name), request)

    def _involved(self, reclaimed: Mapping[str, Res]) -> dict[str, np.ndarray]:
        """Each queue a victim sits under (the victim's queue and its ancestors) with the resources taken."""
        out: dict[str, np.ndarray] = {}
        for victim_queue, taken in reclaimed.items():
            for queue in self.chain(victim_queue):
                out[queue] = out.get(queue, np.zeros(len(taken), dtype=bool)) | (taken > _EPS)
        return out

    def independent(self, job_queue: str, victim_queue: str, preemptible: bool) -> bool:
        """Moving a victim of ``victim_queue`` cannot change whether the job's own capacity checks pass:
        another queue whose shared ancestors set no limit, and preemptible work (no quota check)."""
        shared = set(self.chain(job_queue)) & set(self.chain(victim_queue))
        unlimited = all(np.all(np.isinf(self.states[q].queue.max_allowed())) for q in shared)
        return job_queue != victim_queue and preemptible and unlimited

    def leveled(self, reclaimer: str, victim: str) -> tuple[str, str]:
        """The reclaimer's and the victim's ancestors at the first level where their paths differ
        (``getLeveledQueues``): siblings are what the strategies compare."""
        found = self._levels.get((reclaimer, victim))
        if found is not None:
            return found
        mine, theirs = self.chain(reclaimer)[::-1], self.chain(victim)[::-1]
        pair = (mine[0], theirs[0])
        for pair in zip(mine, theirs, strict=False):
            if pair[0] != pair[1]:
                break
        self._levels[(reclaimer, victim)] = pair
        return pair

    def reclaimable(self, reclaimer: str, request: Res, victim_queue: str) -> bool:
        """``FitsReclaimStrategy`` on the leveled pair, with the victim queue's allocation as it stands
        *before* this victim is subtracted (earlier victims of the search already are):
        MaintainFairShare — that allocation exceeds the queue's allocatable share somewhere; or
        GuaranteeDeservedQuota — the reclaimer stays within deserved and that allocation exceeds the victim
        queue's deserved somewhere (kai.md §6, §7)."""
        r_name, v_name = self.leveled(reclaimer, victim_queue)
        r, v = self.states[r_name], self.states[v_name]
        remaining = v.allocated
        maintain = bool(np.any(remaining > self.allocatable_share(v_name) + _EPS))
        guarantee = bool(np.all(r.allocated + request <= r.deserved + _EPS)) and bool(
            np.any(remaining > v.deserved + _EPS)
        )
        return maintain or guarantee

    def within_quota(self, name: str) -> bool:
        """Allocated within deserved everywhere: such a queue is never a reclaim victim. Releasing only
        lowers ``allocated``, so a queue within quota stays so while victims are being removed."""
        state = self.states[name]  # Python floats: the same comparisons without numpy's cost on 3-vectors
        return all(
            a <= d + _EPS for a, d in zip(state.allocated.tolist(), state.deserved.tolist(), strict=True)
        )

    # ------------------------------------------------------------ events

    def allocate(self, name: str, request: Res, preemptible: bool) -> None:
        for queue in self.chain(name):
            self._keys.pop(queue, None)
            self._moved.add(queue)
            state = self.states[queue]
            state.allocated = state.allocated + request
            if not preemptible:
                state.allocated_non_preemptible = state.allocated_non_preemptible + request

    def release(self, name: str, request: Res, preemptible: bool) -> None:
        self.allocate(name, -request, preemptible)


def _dominant(used: list[float], share: list[float]) -> float:
    """The largest used / share ratio (0 at least); a zero share weighs its use a thousandfold."""
    return max(0.0, *(u / s if s > _EPS else u * 1000.0 for u, s in zip(used, share, strict=True)))


def _message(queue: str, label: str, bound: float, used: float, request: float, r: int) -> str:
    unit = {"gpu": "GPUs", "cpu": "millicores CPU", "memory": "MB memory"}[RESOURCES[r]]
    bound_text = "unlimited" if np.isinf(bound) else f"{bound:g}"
    return f"queue {queue} at its {label} of {bound_text} {unit}: {used:g} in use, {request:g} more requested"


def _saturation(allocated: float, fair: float) -> float:
    """allocated / fair share; a zero fair share is infinitely saturated once anything is allocated."""
    if fair <= _EPS:
        return math.inf if allocated > _EPS else 0.0
    return 0.0 if math.isinf(fair) else allocated / fair
