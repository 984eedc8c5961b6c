"""Which pod sets form the gang, and the PodGroup totals over them (shared by every gang plugin).

Upstream counts every PodSet into ``minMember`` and ``minResources``. When a runtime orders pod sets with JobSet
``dependsOn: {status: Complete}`` (initializers before the trainer), those pod sets never run at the same time
as the trainer, so a gang counting both can never form and the job hangs (reference trainer-api.md §14.2).
gangplane's rule: **the gang is the set of pod sets that can run at the same time as the trainer** — every pod
set not separated from the trainer by a ``Complete`` dependency in either direction. The others run outside the
gang (no gang label), one after the other, as their ordering already requires. See docs/gang-deadlock.md.
"""

from __future__ import annotations

from gangplane.api.quantity import add_lists
from gangplane.runtime.info import PodSet, RuntimeInfo


def _edges(info: RuntimeInfo) -> dict[str, list[tuple[str, bool]]]:
    """``name -> [(dependency, completes_first)]`` from JobSet ``dependsOn``."""
    return {
        p.name: [(d.name, d.status == "Complete") for d in p.replicated_job.depends_on or []]
        for p in info.pod_sets
    }


def _finished_before(start: str, edges: dict[str, list[tuple[str, bool]]]) -> set[str]:
    """Pod sets that must complete before ``start`` begins (a path with at least one Complete edge)."""
    found: set[str] = set()
    stack: list[tuple[str, bool]] = [(start, False)]
    seen: set[tuple[str, bool]] = set()
    while stack:
        name, completed = stack.pop()
        for dep, completes in edges.get(name, []):
            state = (dep, completed or completes)
            if state not in seen:
                seen.add(state)
                stack.append(state)
                if state[1]:
                    found.add(dep)
    return found


def sequential_pod_sets(info: RuntimeInfo) -> list[str]:
    """Pod sets that never run together with the trainer, in pod-set order."""
    trainer = info.trainer_pod_set()
    if trainer is None:
        return []
    edges = _edges(info)
    before = _finished_before(trainer.name, edges)
    after = {p.name for p in info.pod_sets if trainer.name in _finished_before(p.name, edges)}
    return [p.name for p in info.pod_sets if p.name in before | after]


def gang_pod_sets(info: RuntimeInfo) -> list[PodSet]:
    excluded = info.scheduler.excluded_pod_sets
    return [p for p in info.pod_sets if p.name not in excluded]


def exclude_sequential(info: RuntimeInfo, integration: str) -> None:
    """Mark pod sets that cannot join the gang, with a warning naming them."""
    sequential = sequential_pod_sets(info)
    if not sequential:
        return
    info.scheduler.excluded_pod_sets.update(sequential)
    info.warnings.append(
        f"{integration}: replicated jobs {', '.join(sequential)} run before or after the trainer (dependsOn "
        "Complete), so they are scheduled outside the gang; upstream would count them and the gang could never form"
    )


def min_member(pod_sets: list[PodSet]) -> int:
    return sum(p.count for p in pod_sets)


def min_resources(pod_sets: list[PodSet]) -> dict[str, str]:
    """``Σ SinglePodRequests × Count`` per resource, requests only (upstream coscheduling/volcano Build)."""
    return add_lists([p.single_pod_requests for p in pod_sets], [p.count for p in pod_sets])
