"""Run several policies over the same jobs and collect summaries, bounds and violations.

The thin layer the CLI and the benchmarks share. Progress display is injected (``progress_for``) so that
the loop stays testable and silent by default.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gangplane.simulator.bounds import Bounds, Violation, check, lower_bounds
from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.engine import FailureModel, ProgressCallback, simulate
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.metrics import Summary, summarise
from gangplane.simulator.policies import PolicyFactory, PolicyOptions, default_registry
from gangplane.simulator.policies.base import policy_preemption
from gangplane.simulator.timeline import SimResult

ProgressFactory = Callable[[str, int], AbstractContextManager[ProgressCallback]]
"""``(policy name, jobs) -> context manager yielding the engine's progress callback`` (``rich_progress``)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    result: SimResult
    summary: Summary
    violations: list[Violation]


@dataclass(frozen=True, slots=True)
class Comparison:
    bounds: Bounds
    outcomes: tuple[Outcome, ...]

    @property
    def violations(self) -> dict[str, list[Violation]]:
        return {o.summary.policy: o.violations for o in self.outcomes if o.violations}


@contextmanager
def rich_progress(label: str, total: int, console: Console | None = None) -> Iterator[ProgressCallback]:
    """A progress bar for one replay, as a callback the engine calls with jobs settled so far."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(label, total=total)
        yield lambda done: progress.update(task, completed=done)


def run_policies(
    jobs: Sequence[JobSpec],
    cluster: ClusterSpec,
    policies: Sequence[str],
    *,
    options: PolicyOptions | None = None,
    registry: Mapping[str, PolicyFactory] | None = None,
    failures: FailureModel | None = None,
    progress: ProgressFactory | None = None,
) -> Comparison:
    """Replay ``jobs`` once per policy (in the order given); ``KeyError`` names an unknown policy."""
    registry = default_registry() if registry is None else registry
    options = options or PolicyOptions()
    unknown = [name for name in policies if name not in registry]
    if unknown:
        raise KeyError(f"unknown policy {', '.join(unknown)}; known: {', '.join(registry)}")
    cluster = cluster.with_queues(sorted({job.queue for job in jobs}))
    outcomes = []
    for name in policies:
        policy = registry[name](cluster, options)
        watching = nullcontext(None) if progress is None else progress(name, len(jobs))
        with watching as callback:
            result = simulate(
                jobs,
                policy,
                cluster,
                seed=options.seed,
                failures=failures,
                progress=callback,
                preemption=policy_preemption(policy, options),
            )
        summary = summarise(result)
        outcomes.append(Outcome(result, summary, check(result, summary)))
    bounds = lower_bounds(outcomes[0].result) if outcomes else Bounds(0.0, 0.0, 0.0)
    return Comparison(bounds, tuple(outcomes))


__all__ = ["Comparison", "Outcome", "ProgressFactory", "rich_progress", "run_policies"]
