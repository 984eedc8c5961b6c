"""Placing one KAI job: the pods its SubGroup tree still needs, all or nothing, inside the topology domain
its PodGroup asks for (kai.md §4.1, §8).

Topology levels are node label keys (KAI's ``Topology`` CRD lists them; the PodGroup names the level by its
label): a *required* level keeps the whole gang inside one domain of that label (nodes without it are
excluded), trying the domain with the least free GPUs that can hold the gang first; a *preferred* level
tries its domains, most free first, and falls back to the wider set. A try assumes into the snapshot and
never binds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from gangplane.schedulers.core.fit import Mask
from gangplane.schedulers.core.gang import place_gang
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.snapshot import Snapshot
from gangplane.schedulers.kai.model import KaiJob, Member, needed_members, needed_members_count, shape_of
from gangplane.schedulers.kai.session import KaiSession

NOT_ENOUGH_RESOURCES = "NotEnoughResources"


@dataclass(slots=True)
class Attempt:
    ok: bool
    placed: list[tuple[Member, int]] = field(default_factory=list)
    reason: str = ""
    message: str = ""


def _domains(session: KaiSession, level: str, within: Mask) -> list[Mask]:
    values = sorted(
        {n.labels[level] for i, n in enumerate(session.snapshot.nodes) if within[i] and level in n.labels}
    )
    return [within & np.array([n.labels.get(level) == v for n in session.snapshot.nodes]) for v in values]


def _free_gpus(session: KaiSession, mask: Mask) -> int:
    col = session.snapshot.index.position("nvidia.com/gpu")
    return int(session.snapshot.free()[mask, col].sum())


def _try(
    session: KaiSession, members: list[Member], minimum: int, allowed: Mask, explain: bool = True
) -> Attempt:
    result = place_gang(
        session.snapshot,
        [m.pod for m in members],
        min_member=minimum,
        strategy=session.config.strategy,
        allowed=allowed,
        explain=explain and session.config.explain,
    )
    if not result.ok:
        return Attempt(False, reason=NOT_ENOUGH_RESOURCES, message=result.message)
    by_key = {m.pod.key: m for m in members}
    return Attempt(
        True, [(by_key[b.pod_key], session.snapshot.node_position(b.node)) for b in result.bindings]
    )


def _try_domains(
    session: KaiSession, members: list[Member], minimum: int, domains: list[Mask]
) -> Attempt | None:
    for domain in domains:
        attempt = _try(session, members, minimum, domain)
        if attempt.ok:
            return attempt
    return None


Failed = dict[object, Attempt]  # gang shape -> the failed attempt of the first gang of that shape


def place(session: KaiSession, job: KaiJob, explain: bool = True, failed: Failed | None = None) -> Attempt:
    """``explain=False``: a failure's message may be empty (victim searches only need the outcome).
    ``failed``: allocate's record of gang shapes that found no nodes earlier in the action. Free room only
    shrinks during allocate, so a gang of such a shape cannot fit either and is not tried again (its
    reason names the gang that was)."""
    members = needed_members(job)
    if members is None:
        return Attempt(False, reason="NotEnoughPods", message="the gang has fewer pods than its minimum")
    if not members:
        return Attempt(False, reason="NotEnoughPods", message="no pending pods")
    gang_missing = needed_members_count(job, members)
    request = session.request(members)
    if (refusal := session.book.capacity_reason(job.queue, request, job.preemptible)) is not None:
        return Attempt(False, reason=refusal[0], message=refusal[1])
    if failed is None or job.topology:
        return _place_in_scopes(session, job, members, gang_missing, explain)
    shape = shape_of(members, gang_missing)
    if (first := failed.get(shape)) is not None:
        return Attempt(False, reason=first.reason, message=first.message)
    attempt = _place_in_scopes(session, job, members, gang_missing, explain)
    if not attempt.ok and attempt.reason == NOT_ENOUGH_RESOURCES:
        note = (
            f"{attempt.message} (found trying {job.key}, a gang of the same shape)" if attempt.message else ""
        )
        failed[shape] = Attempt(False, reason=attempt.reason, message=note)
    return attempt


def covered(failed: Failed, shape: object) -> bool:
    """Whether a gang of ``shape`` cannot fit where the gangs of ``failed``'s shapes found no room: the
    shape itself failed, or it is *uniform* (all members alike) and needs at least as many members as a
    failed uniform shape with the same constraints, each asking at least as much of every resource. A
    uniform gang fits exactly when the nodes its constraints allow take at least that many of its pods
    (``place_gang`` fills each node to ``floor(free / request)``), and a larger request leaves each node
    room for no more pods: the failed gang's count bounds the larger one's from above."""
    if shape in failed:
        return True
    mine = _uniform(shape)
    if mine is None or not failed:
        return False
    return any((other := _uniform(s)) is not None and _dominates(mine, other) for s in failed)


_Uniform = tuple[int, int, object, tuple[int, ...]]  # minimum, members, constraints, request row


@lru_cache(maxsize=4096)
def _uniform(shape: object) -> _Uniform | None:
    """``shape_of``'s shape as (minimum, members, constraints, request row) when its members are alike."""
    if not isinstance(shape, tuple) or len(shape) != 2 or not shape[1] or len(set(shape[1])) != 1:
        return None
    minimum, members = shape
    requests, constraints = members[0]
    return minimum, len(members), constraints, tuple(np.frombuffer(requests, dtype=np.int64).tolist())


def _dominates(mine: _Uniform, failed: _Uniform) -> bool:
    """``mine`` needs at least what ``failed`` needed, which held enough members to have met its minimum."""
    minimum, _, constraints, row = mine
    f_minimum, f_members, f_constraints, f_row = failed
    return (
        f_members >= max(f_minimum, 1)
        and minimum >= f_minimum
        and constraints == f_constraints
        and len(row) == len(f_row)
        and all(a >= b for a, b in zip(row, f_row, strict=True))
    )


def may_fit(snapshot: Snapshot, pods: Sequence[PodInfo], minimum: int) -> bool:
    """Whether the free room of every node together holds, in each resource, the ``minimum`` smallest
    requests of ``pods`` (at least one): no placement of the gang can succeed otherwise, whatever the
    nodes' masks and fragmentation, so a gang failing this is not searched node by node."""
    requests = np.stack([p.requests for p in pods])
    smallest = np.sort(requests, axis=0)[: max(minimum, 1)]
    room = np.maximum(snapshot.free(), 0).sum(axis=0)
    return bool(np.all(smallest.sum(axis=0) <= room))


def _place_in_scopes(
    session: KaiSession, job: KaiJob, members: list[Member], gang_missing: int, explain: bool
) -> Attempt:
    if not (explain and session.config.explain) and not may_fit(
        session.snapshot, [m.pod for m in members], gang_missing
    ):
        return Attempt(False, reason=NOT_ENOUGH_RESOURCES)  # no message is read: none is built
    everything = np.ones(len(session.snapshot), dtype=bool)
    required, preferred = (
        job.topology.get("requiredTopologyLevel"),
        job.topology.get("preferredTopologyLevel"),
    )
    scopes = [everything]
    if required:
        scopes = sorted(_domains(session, required, everything), key=lambda m: _free_gpus(session, m))
    for scope in scopes:
        if preferred:
            inner = sorted(_domains(session, preferred, scope), key=lambda m: -_free_gpus(session, m))
            if (found := _try_domains(session, members, gang_missing, inner)) is not None:
                return found
        attempt = _try(session, members, gang_missing, scope, explain)
        if attempt.ok:
            return attempt
        last = attempt
    if required:
        return Attempt(
            False,
            reason=NOT_ENOUGH_RESOURCES,
            message=f"no {required} domain can hold the gang ({len(scopes)} tried)",
        )
    return last


def commit(session: KaiSession, job: KaiJob, attempt: Attempt) -> None:
    for member, row in attempt.placed:
        session.bind(job, member, row)


__all__ = [
    "NOT_ENOUGH_RESOURCES",
    "Attempt",
    "Failed",
    "commit",
    "covered",
    "may_fit",
    "needed_members",
    "needed_members_count",
    "place",
    "shape_of",
]
