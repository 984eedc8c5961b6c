"""Flavor assignment: which ResourceFlavor each PodSet's resources use, and whether that fits, needs preemption
or does not fit at all (kueue.md §4, kueue ``pkg/scheduler/flavorassigner/flavorassigner.go``).

Per PodSet and resource group, flavors are tried in list order. A flavor is eligible when its taints are
tolerated and the PodSet's nodeSelector agrees with it on the keys the flavor's nodeLabels name. Each requested
resource of the group is then tested against the quota tree; the flavor's mode is the worst over them.
Fungibility decides whether the scan stops at a flavor that needs borrowing or preemption. Earlier PodSets'
usage counts as assumed usage for later ones.

Pure: reads a ``QuotaTree`` view, never changes it. Preemption is asked through an ``Oracle`` callback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from gangplane.api.core import Taint, Toleration
from gangplane.api.scheduling.kueue import FlavorFungibilityPolicy, PreemptionPolicy
from gangplane.schedulers.core.objects import Requirement
from gangplane.schedulers.kueue.model import (
    PODS,
    AssignmentMode,
    ClusterQueueSpec,
    FlavorMode,
    FlavorResource,
    FlavorSpec,
    FungibilityPreference,
    PendingReason,
    PodSetRequest,
    ResourceGroup,
    Usage,
    WorkloadRequest,
    format_amount,
)
from gangplane.schedulers.kueue.quota import (
    QuotaNode,
    QuotaTree,
    available,
    lowest_fitting_subtree_height,
    potential_available,
)

Oracle = Callable[[FlavorResource, int], tuple[FlavorMode, int]]
"""``SimulatePreemption``: the mode preemption would give ``amount`` of ``fr``, and the borrowing level once the
victims are gone (upstream picks flavors by that level, not the one before preemption)."""
"""Asked when ``val`` more of a flavor-resource does not fit: NO_CANDIDATES, PREEMPT or RECLAIM."""

_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass
class PodSetAssignment:
    name: str
    count: int
    flavors: dict[str, str] = field(default_factory=dict)
    usage: Usage = field(default_factory=dict)
    mode: FlavorMode = FlavorMode.FIT
    borrow: int = 0
    preempt_frs: set[FlavorResource] = field(default_factory=set)
    reasons: list[str] = field(default_factory=list)
    reason: PendingReason = PendingReason.WAITING_FOR_QUOTA


@dataclass
class Assignment:
    pod_sets: list[PodSetAssignment]

    @property
    def mode(self) -> AssignmentMode:
        worst = min((p.mode for p in self.pod_sets), default=FlavorMode.FIT)
        if worst == FlavorMode.FIT:
            return AssignmentMode.FIT
        # A flavor with no preemption candidates still counts as Preempt: the cycle reserves its usage.
        return AssignmentMode.PREEMPT if worst >= FlavorMode.NO_CANDIDATES else AssignmentMode.NO_FIT

    @property
    def borrow(self) -> int:
        return max((p.borrow for p in self.pod_sets), default=0)

    @property
    def usage(self) -> Usage:
        total: Usage = {}
        for pod_set in self.pod_sets:
            for fr, amount in pod_set.usage.items():
                total[fr] = total.get(fr, 0) + amount
        return total

    @property
    def preempt_frs(self) -> set[FlavorResource]:
        return set().union(*(p.preempt_frs for p in self.pod_sets))

    @property
    def reason(self) -> PendingReason:
        failed = [p for p in self.pod_sets if p.mode < FlavorMode.FIT]
        return failed[0].reason if failed else PendingReason.WAITING_FOR_QUOTA

    def message(self) -> str:
        """Upstream's ``Assignment.Message``: per pod set not fitting, ``couldn't assign flavors to pod set
        <name>: <reasons>``, its reasons sorted and joined by ", ", pod sets joined by "; "."""
        parts = [f"couldn't assign flavors to pod set {p.name}: {', '.join(sorted(p.reasons))}"
                 for p in self.pod_sets if p.mode < FlavorMode.FIT and p.reasons]  # fmt: skip
        return "; ".join(parts)


@dataclass(frozen=True)
class _Attempt:
    flavor: str
    mode: FlavorMode
    borrow: int
    preempt_frs: frozenset[FlavorResource]
    reasons: tuple[str, ...]
    reason: PendingReason


# ---------------------------------------------------------------- eligibility


def _tolerates(toleration: Toleration, taint: Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if not toleration.key:
        return toleration.operator == "Exists"
    if toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return (toleration.value or "") == (taint.value or "")


def untolerated_taint(flavor: FlavorSpec, tolerations: tuple[Toleration, ...]) -> Taint | None:
    every = (*tolerations, *flavor.tolerations)
    for taint in flavor.node_taints:
        if taint.effect in _BLOCKING_EFFECTS and not any(_tolerates(t, taint) for t in every):
            return taint
    return None


def flavor_ineligibility(flavor: FlavorSpec | None, name: str, pod_set: PodSetRequest) -> str | None:
    """Why ``flavor`` cannot serve ``pod_set``, or None. Selector keys the flavor does not label are ignored."""
    if flavor is None:
        return f"flavor {name} not found"
    if (taint := untolerated_taint(flavor, pod_set.tolerations)) is not None:
        # upstream formats the corev1.Taint value with %s: Go's struct form, timeAdded unset
        return f"untolerated taint {{{taint.key} {taint.value or ''} {taint.effect} <nil>}} in flavor {name}"
    if not _matches_affinity(flavor.node_labels, pod_set):
        return f"flavor {name} doesn't match node affinity"
    return None


def _matches_affinity(labels: Mapping[str, str], pod_set: PodSetRequest) -> bool:
    """Upstream ``flavorSelector``: nodeSelector and required node-affinity terms, each restricted to the
    flavor's own label keys, against its labels. A term left with no requirement matches any flavor (terms are
    ORed), and so lifts the affinity constraint."""
    if any(key in labels and labels[key] != value for key, value in pod_set.node_selector.items()):
        return False
    terms = [tuple(r for r in term if r.key in labels) for term in pod_set.affinity]
    if not terms or not all(terms):
        return True
    return any(all(_requirement_holds(labels, r) for r in term) for term in terms)


def _requirement_holds(labels: Mapping[str, str], requirement: Requirement) -> bool:
    """One ``matchExpressions`` entry on a label the flavor has."""
    value, op = labels[requirement.key], requirement.operator
    if op in ("In", "NotIn"):
        return (value in requirement.values) == (op == "In")
    if op in ("Gt", "Lt") and len(requirement.values) == 1:
        try:
            number, bound = int(value), int(requirement.values[0])
        except ValueError:
            return False
        return number > bound if op == "Gt" else number < bound
    return op == "Exists"


# ---------------------------------------------------------------- one resource in one flavor


@dataclass(frozen=True)
class _Context:
    spec: ClusterQueueSpec
    node: QuotaNode
    oracle: Oracle
    fair_sharing: bool = False
    pinned: Mapping[str, Mapping[str, str]] | None = None
    """Per pod set, resource -> the flavor nominated earlier: a recomputation tries only those (upstream's
    ``NominationMapping``, flavor stickiness)."""

    def may_preempt_while_borrowing(self) -> bool:
        """``canPreemptWhileBorrowing``: borrowWithinCohort, or any reclaim policy under fair sharing."""
        preemption = self.spec.preemption
        return preemption.borrow_within_cohort != PreemptionPolicy.NEVER or (
            self.fair_sharing and preemption.reclaim_within_cohort != PreemptionPolicy.NEVER
        )


def _fit_resource(
    ctx: _Context, fr: FlavorResource, assumed: int, request: int
) -> tuple[FlavorMode, int, str]:
    """Mode and borrow level of ``assumed + request`` of ``fr``; a plain-words reason when it does not fit."""
    flavor, resource = fr
    val = assumed + request
    capacity = potential_available(ctx.node, fr)
    if val > capacity:
        return (
            FlavorMode.NO_FIT,
            0,
            (
                f"insufficient quota for {resource} in flavor {flavor}, previously considered podsets requests "
                f"({format_amount(resource, assumed)}) + current podset request ({format_amount(resource, request)})"
                f" > maximum capacity ({format_amount(resource, capacity)})"
            ),
        )
    borrow, may_reclaim = lowest_fitting_subtree_height(ctx.node, fr, val)
    free = available(ctx.node, fr)
    if val <= free:
        return FlavorMode.FIT, borrow, ""
    # Amounts as Kubernetes quantities, as upstream's resourceFormatter: "8" CPUs, not 8000 millicores.
    needed = format_amount(resource, val - free)
    message = f"insufficient unused quota for {resource} in flavor {flavor}, {needed} more needed"
    if val <= ctx.node.nominal(fr) or may_reclaim or ctx.may_preempt_while_borrowing():
        mode, borrow_after = ctx.oracle(fr, val)
        return mode, borrow_after, message
    return FlavorMode.NO_FIT, borrow, message


def _try_flavor(ctx: _Context, name: str, requests: Mapping[str, int], assumed: Usage) -> _Attempt:
    mode, borrow, reasons, preempt = FlavorMode.FIT, 0, [], set()
    for resource, amount in sorted(requests.items()):
        fr = (name, resource)
        r_mode, r_borrow, reason = _fit_resource(ctx, fr, assumed.get(fr, 0), amount)
        mode, borrow = min(mode, r_mode), max(borrow, r_borrow)
        if r_mode in (FlavorMode.PREEMPT, FlavorMode.RECLAIM):
            preempt.add(fr)
        if reason:
            reasons.append(reason)
    exceeds = any(r.startswith("insufficient quota") for r in reasons)
    reason = PendingReason.EXCEEDS_MAX_QUOTA if exceeds else PendingReason.WAITING_FOR_QUOTA
    return _Attempt(name, mode, borrow, frozenset(preempt), tuple(reasons), reason)


def _stops_search(ctx: _Context, attempt: _Attempt) -> bool:
    fungibility = ctx.spec.fungibility
    if attempt.mode == FlavorMode.FIT:
        return attempt.borrow == 0 or fungibility.when_can_borrow == FlavorFungibilityPolicy.MAY_STOP_SEARCH
    if attempt.mode in (FlavorMode.PREEMPT, FlavorMode.RECLAIM):
        return fungibility.when_can_preempt == FlavorFungibilityPolicy.MAY_STOP_SEARCH
    return False


def _preference_key(ctx: _Context, attempt: _Attempt) -> tuple[int, int, int]:
    """Larger is better: viable before NoFit, candidates before none, then the configured preference."""
    viable = 1 if attempt.mode >= FlavorMode.PREEMPT else 0
    if ctx.spec.fungibility.preference == FungibilityPreference.PREEMPTION_OVER_BORROWING:
        return viable, -attempt.borrow, int(attempt.mode)
    return viable, int(attempt.mode), -attempt.borrow


def _choose(ctx: _Context, attempts: list[_Attempt]) -> _Attempt | None:
    best: _Attempt | None = None
    for attempt in attempts:
        if best is None or _preference_key(ctx, attempt) > _preference_key(ctx, best):
            best = attempt
    return best


# ---------------------------------------------------------------- pod sets and workloads


def _pod_set_requests(spec: ClusterQueueSpec, pod_set: PodSetRequest) -> dict[str, int]:
    """What the pod set needs; a zero request counts only for a resource the ClusterQueue covers (it gets a
    flavor, as upstream), and is skipped otherwise (upstream #8079)."""
    totals = {r: pod_set.total(r) for r in pod_set.requests if pod_set.total(r) > 0 or spec.group_of(r)}
    if spec.group_of(PODS) is not None:
        totals[PODS] = pod_set.count
    return totals


def _assign_group(
    ctx: _Context, flavors: Mapping[str, FlavorSpec], group: ResourceGroup, pod_set: PodSetRequest,
    requests: Mapping[str, int], assumed: Usage,
) -> tuple[_Attempt | None, list[str]]:  # fmt: skip
    """The chosen attempt, and the reasons of every flavor looked at, in scan order (upstream's status
    accumulates them all, so a message names each flavor that did not fit)."""
    attempts: list[_Attempt] = []
    reasons: list[str] = []
    resource = min(requests)  # the one the scan is for, as upstream's per-resource loop
    pinned = ctx.pinned.get(pod_set.name, {}).get(resource) if ctx.pinned is not None else None
    for flavor in group.flavors:
        if ctx.pinned is not None and flavor.name != pinned:
            reasons.append(f"skipping flavor {flavor.name} as it is not found in the nomination mapping for "
                           f"resource {resource}")  # fmt: skip
            continue
        if (why := flavor_ineligibility(flavors.get(flavor.name), flavor.name, pod_set)) is not None:
            reasons.append(why)
            continue
        attempt = _try_flavor(ctx, flavor.name, requests, assumed)
        attempts.append(attempt)
        reasons.extend(attempt.reasons)
        if _stops_search(ctx, attempt):
            return attempt, reasons
    return _choose(ctx, attempts), reasons


def _assign_pod_set(
    ctx: _Context, flavors: Mapping[str, FlavorSpec], pod_set: PodSetRequest, assumed: Usage
) -> PodSetAssignment:
    """Upstream ``assignFlavors`` for one pod set: resources in name order, each with its resource group (the
    first covering it, even in a spec that lists it twice). The first group that finds no flavor leaves the pod
    set with no flavors and that group's reasons alone."""
    result = PodSetAssignment(pod_set.name, pod_set.count)
    requests = _pod_set_requests(ctx.spec, pod_set)
    for resource in sorted(requests):
        if resource in result.flavors:
            continue
        group = ctx.spec.group_of(resource)
        if group is None:
            _fail(result, None, [f"resource {resource} unavailable in ClusterQueue"])
            break
        wanted = {r: v for r, v in requests.items() if ctx.spec.group_of(r) is group}
        attempt, reasons = _assign_group(ctx, flavors, group, pod_set, wanted, assumed)
        if attempt is None or attempt.mode == FlavorMode.NO_FIT:
            _fail(result, attempt, reasons)
            break
        _apply_group(result, attempt, reasons, wanted)
    return result


def _fail(result: PodSetAssignment, attempt: _Attempt | None, reasons: list[str]) -> None:
    result.flavors.clear()
    result.usage.clear()
    result.preempt_frs.clear()
    result.mode, result.borrow, result.reasons = FlavorMode.NO_FIT, 0, list(reasons)
    result.reason = attempt.reason if attempt is not None else PendingReason.NO_MATCHING_FLAVOR


def _apply_group(
    result: PodSetAssignment, attempt: _Attempt, reasons: list[str], wanted: Mapping[str, int]
) -> None:
    if attempt.mode < result.mode:
        result.reason = attempt.reason
    result.mode = min(result.mode, attempt.mode)
    result.borrow = max(result.borrow, attempt.borrow)
    result.preempt_frs |= attempt.preempt_frs
    result.reasons.extend(reasons)  # a fitting group's tried flavors too, as upstream's group status
    for resource, amount in wanted.items():
        result.flavors[resource] = attempt.flavor
        result.usage[(attempt.flavor, resource)] = amount


def assign_flavors(
    workload: WorkloadRequest, spec: ClusterQueueSpec, tree: QuotaTree, flavors: Mapping[str, FlavorSpec],
    oracle: Oracle, *, fair_sharing: bool = False, pinned: Mapping[str, Mapping[str, str]] | None = None,
) -> Assignment:  # fmt: skip
    """Flavor assignment for every PodSet of ``workload`` in ``spec``'s ClusterQueue, against ``tree``;
    ``pinned``: only the flavors an earlier assignment chose (a recomputation)."""
    ctx = _Context(spec, tree.cqs[spec.name], oracle, fair_sharing, pinned)
    assumed: Usage = {}
    pod_sets = []
    for pod_set in workload.pod_sets:
        assigned = _assign_pod_set(ctx, flavors, pod_set, assumed)
        for fr, amount in assigned.usage.items():
            assumed[fr] = assumed.get(fr, 0) + amount
        pod_sets.append(assigned)
        if assigned.mode == FlavorMode.NO_FIT:
            break  # upstream returns at the first pod set that does not fit
    return Assignment(pod_sets)


def node_selector(assignment: PodSetAssignment, flavors: Mapping[str, FlavorSpec]) -> dict[str, str]:
    """The nodeSelector Kueue injects: the labels of every flavor the PodSet was assigned."""
    selector: dict[str, str] = {}
    for name in sorted(set(assignment.flavors.values())):
        if (flavor := flavors.get(name)) is not None:
            selector.update(flavor.node_labels)
    return selector


def tolerations(assignment: PodSetAssignment, flavors: Mapping[str, FlavorSpec]) -> list[Toleration]:
    every: list[Toleration] = []
    for name in sorted(set(assignment.flavors.values())):
        if (flavor := flavors.get(name)) is not None:
            every.extend(t for t in flavor.tolerations if t not in every)
    return every
