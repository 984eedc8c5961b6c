"""What a user wants to know about a TrainJob, computed from the TrainJob and its pods; pure.

``summarize`` answers: which phase is it in, why is it waiting (the TrainJob's own condition messages and
each pod's ``PodScheduled=False`` message, as the scheduler wrote them), has the gang formed (every pod
bound to a node), and how is each node (pod) doing. ``describe trainjob`` and ``run`` both show it, and
``run``'s exit code comes from it: 0 Complete, 1 Failed.

Phases follow the Kubeflow SDK's mapping (reference python-ecosystem.md §1.2) with the waiting states split
out: ``Failed``/``Complete`` when that condition is True, ``Suspended`` when suspended, ``Running`` once every
pod runs (or has finished), else ``Pending``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gangplane.api.jobset_labels import COMPLETION_INDEX, JOBSET_NAME_LABEL, REPLICATED_JOB_NAME_LABEL
from gangplane.store.base import Object

PENDING, SUSPENDED, RUNNING, COMPLETE, FAILED = "Pending", "Suspended", "Running", "Complete", "Failed"
# Trainer's TrainJob condition types (trainjob_types.go), named as the phases they decide; not imported from
# ``gangplane.api.trainer`` so ``describe`` starts without loading the pydantic models.
_SUSPENDED_CONDITION, _COMPLETE_CONDITION, _FAILED_CONDITION = SUSPENDED, COMPLETE, FAILED
_TERMINAL_EXIT = {COMPLETE: 0, FAILED: 1}
# How a pod names its PodGroup (api/scheduling: Coscheduling's label and its legacy one, Volcano's and KAI's
# annotations); a TrainJob whose pods carry one is gang-scheduled. Not imported from there: those modules
# load the pydantic models, which ``describe`` need not pay for at start-up (tests check they agree).
POD_GROUP_LABELS = ("scheduling.x-k8s.io/pod-group", "pod-group.scheduling.sigs.k8s.io")
POD_GROUP_ANNOTATIONS = ("scheduling.k8s.io/group-name", "pod-group-name")
_MAX_PODS_NAMED = 5
_STARTED_PHASES = ("Running", "Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """One pod of the TrainJob: a "node" in Trainer's terms."""

    pod: str
    phase: str
    node: str  # the cluster node it is bound to, "" while unbound
    reason: str = ""
    message: str = ""

    @property
    def bound(self) -> bool:
        return bool(self.node)

    @property
    def started(self) -> bool:
        return self.phase in _STARTED_PHASES


@dataclass(frozen=True, slots=True)
class TrainJobSummary:
    name: str
    phase: str
    reasons: tuple[str, ...]  # why it is in this phase (waiting, failed), most specific first
    nodes: tuple[NodeStatus, ...]
    expected_nodes: int  # pods the gang needs at least: spec.trainer.numNodes, else 1
    gang: bool = False  # its pods belong to a PodGroup (Coscheduling, Volcano, KAI)

    @property
    def bound(self) -> int:
        return sum(1 for n in self.nodes if n.bound)

    @property
    def gang_formed(self) -> bool:
        return bool(self.nodes) and self.bound == len(self.nodes) and len(self.nodes) >= self.expected_nodes

    @property
    def finished(self) -> bool:
        return self.phase in _TERMINAL_EXIT

    @property
    def exit_code(self) -> int | None:
        """0 Complete, 1 Failed, None while it still runs or waits."""
        return _TERMINAL_EXIT.get(self.phase)

    def gang_line(self) -> str:
        """``formed: 2/2 pods bound`` or ``waiting: 1/2 pods bound`` for a gang; ``1/2 pods bound`` for pods
        scheduled one by one (no PodGroup), which are no gang and do not wait as one."""
        bound = f"{self.bound}/{max(len(self.nodes), self.expected_nodes)} pods bound"
        if not self.gang:
            return bound
        return f"{'formed' if self.gang_formed else 'waiting'}: {bound}"


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def conditions(obj: Object) -> list[dict[str, Any]]:
    return [c for c in _get(obj, "status", "conditions") or [] if isinstance(c, dict)]


def condition(obj: Object, kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions(obj) if c.get("type") == kind), None)


def _true(obj: Object, kind: str) -> bool:
    found = condition(obj, kind)
    return found is not None and found.get("status") == "True"


def pods_selector(trainjob_name: str) -> str:
    """Label selector of a TrainJob's pods: its JobSet has the TrainJob's name and labels every pod."""
    return f"{JOBSET_NAME_LABEL}={trainjob_name}"


def node_status(pod: Object) -> NodeStatus:
    name = str(_get(pod, "metadata", "name") or "")
    phase = str(_get(pod, "status", "phase") or "Pending")
    node = str(_get(pod, "spec", "nodeName") or "")
    scheduled = condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False":
        return NodeStatus(
            name, phase, node, str(scheduled.get("reason") or ""), str(scheduled.get("message") or "")
        )
    for status in _get(pod, "status", "containerStatuses") or []:
        state = _get(status, "state", "waiting") or _get(status, "state", "terminated") or {}
        if state.get("reason") and state.get("reason") != "Completed":
            return NodeStatus(name, phase, node, str(state["reason"]), str(state.get("message") or ""))
    return NodeStatus(
        name, phase, node, str(_get(pod, "status", "reason") or ""), str(_get(pod, "status", "message") or "")
    )


def _pod_order(pod: Object) -> tuple[str, int, str]:
    labels = _get(pod, "metadata", "labels") or {}
    index = str(labels.get(COMPLETION_INDEX, ""))
    return (str(labels.get(REPLICATED_JOB_NAME_LABEL, "")), int(index) if index.isdigit() else 0,
            str(_get(pod, "metadata", "name")))  # fmt: skip


def _phase(trainjob: Object, nodes: Sequence[NodeStatus]) -> str:
    if _true(trainjob, _FAILED_CONDITION):
        return FAILED
    if _true(trainjob, _COMPLETE_CONDITION):
        return COMPLETE
    if _true(trainjob, _SUSPENDED_CONDITION):
        return SUSPENDED
    if nodes and all(n.started for n in nodes):
        return RUNNING
    return PENDING


def _named(pods: Sequence[str]) -> str:
    shown = ", ".join(pods[:_MAX_PODS_NAMED])
    more = f" and {len(pods) - _MAX_PODS_NAMED} more" if len(pods) > _MAX_PODS_NAMED else ""
    return f"(pod {shown})" if len(pods) == 1 else f"(pods {shown}{more})"


def _with_pods(lines: list[str], nodes: Sequence[NodeStatus]) -> list[str]:
    """Each distinct pod message once, followed by the pods it concerns; a message a condition already
    carries (the waiting reason quotes the scheduler) only adds the pods to that line."""
    by_text: dict[str, list[str]] = {}
    for node in nodes:
        if node.message or node.reason:
            by_text.setdefault(node.message or node.reason, []).append(node.pod)
    out = list(lines)
    for text, pods in by_text.items():
        at = next((i for i, line in enumerate(lines) if text in line), None)
        if at is None:
            out.append(f"{text} {_named(pods)}")
        else:
            out[at] = f"{out[at]} {_named(pods)}"
    return out


def _reasons(trainjob: Object, phase: str, nodes: Sequence[NodeStatus]) -> tuple[str, ...]:
    """Messages that explain ``phase``: the deciding condition's, then other conditions', then the pods'
    (each distinct one once, with its pods)."""
    ordered = sorted(conditions(trainjob), key=lambda c: c.get("type") != phase)
    out = list(
        dict.fromkeys(str(c["message"]) for c in ordered if c.get("status") == "True" and c.get("message"))
    )
    if phase in (PENDING, RUNNING):
        out = _with_pods(out, nodes)
    if phase == PENDING and not nodes:
        out.append("no pods yet: waiting for the controller to create the JobSet's pods")
    return tuple(out)


def _in_gang(pod: Object) -> bool:
    labels = _get(pod, "metadata", "labels") or {}
    notes = _get(pod, "metadata", "annotations") or {}
    return any(k in labels for k in POD_GROUP_LABELS) or any(k in notes for k in POD_GROUP_ANNOTATIONS)


def summarize(trainjob: Object, pods: Sequence[Object]) -> TrainJobSummary:
    nodes = tuple(node_status(p) for p in sorted(pods, key=_pod_order))
    phase = _phase(trainjob, nodes)
    expected = _get(trainjob, "spec", "trainer", "numNodes")
    name = str(_get(trainjob, "metadata", "name") or "")
    gang = any(_in_gang(p) for p in pods)
    return TrainJobSummary(name, phase, _reasons(trainjob, phase, nodes), nodes, int(expected or 1), gang)


__all__ = [
    "COMPLETE",
    "FAILED",
    "PENDING",
    "POD_GROUP_ANNOTATIONS",
    "POD_GROUP_LABELS",
    "RUNNING",
    "SUSPENDED",
    "NodeStatus",
    "TrainJobSummary",
    "condition",
    "conditions",
    "node_status",
    "pods_selector",
    "summarize",
]
