"""Repeated replays over seeds: the mean of each metric and its 95 % confidence interval.

Stochastic runs (generated scenarios, the failure model) differ by seed; one seed's numbers can mislead by
several points (see the saturation results in docs/simulator.md). ``repeat`` replays every policy once per
seed and reports Student's t interval for the mean: mean ± t(0.975, n−1) · s / √n.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.compare import Comparison, run_policies
from gangplane.simulator.engine import FailureModel
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.policies import PolicyFactory, PolicyOptions

T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
"""Student's t quantile 0.975 for 1..10 degrees of freedom (beyond 10 the values below are used)."""
T_975_MORE = ((15, 2.131), (20, 2.086), (30, 2.042), (60, 2.000), (120, 1.980))
METRICS = ("mean_jct", "mean_wait", "makespan", "utilisation")


def t_975(df: int) -> float:
    if df < 1:
        return math.nan
    if df <= len(T_975):
        return T_975[df - 1]
    return next((t for limit, t in T_975_MORE if df <= limit), 1.960)


@dataclass(frozen=True, slots=True)
class Interval:
    mean: float
    half_width: float
    """Half the 95 % confidence interval's width; NaN for a single run."""

    def __str__(self) -> str:
        return f"{self.mean:,.2f}" + ("" if math.isnan(self.half_width) else f" ± {self.half_width:,.2f}")


def interval(values: Sequence[float]) -> Interval:
    array = np.asarray(values, dtype=np.float64)
    if len(array) < 2:
        return Interval(float(array.mean()) if len(array) else math.nan, math.nan)
    return Interval(
        float(array.mean()), t_975(len(array) - 1) * float(array.std(ddof=1)) / math.sqrt(len(array))
    )


@dataclass(frozen=True, slots=True)
class Repeated:
    seeds: tuple[int, ...]
    comparisons: tuple[Comparison, ...]

    def intervals(self) -> dict[str, dict[str, Interval]]:
        """``policy -> metric -> Interval`` over the seeds, for each of ``METRICS``."""
        out: dict[str, dict[str, Interval]] = {}
        for position, outcome in enumerate(self.comparisons[0].outcomes):
            summaries = [c.outcomes[position].summary for c in self.comparisons]
            out[outcome.summary.policy] = {m: interval([getattr(s, m) for s in summaries]) for m in METRICS}
        return out


def repeat(
    make_jobs: Callable[[int], Sequence[JobSpec]],
    cluster: ClusterSpec,
    policies: Sequence[str],
    seeds: Sequence[int],
    *,
    options: PolicyOptions | None = None,
    registry: Mapping[str, PolicyFactory] | None = None,
    failures: FailureModel | None = None,
    first: Comparison | None = None,
) -> Repeated:
    """Every policy once per seed; the jobs for a seed come from ``make_jobs(seed)`` (a scenario regenerates
    them, a trace returns the same jobs and only the failure model's draws differ). ``first``: a comparison
    already run with ``options.seed``, counted as the first run."""
    options = options or PolicyOptions()
    comparisons = [] if first is None else [first]
    seeds = ([] if first is None else [options.seed]) + list(seeds)
    for seed in seeds[len(comparisons) :]:
        seeded = replace(options, seed=seed)
        comparisons.append(
            run_policies(
                make_jobs(seed), cluster, policies, options=seeded, registry=registry, failures=failures
            )
        )
    return Repeated(tuple(seeds), tuple(comparisons))


__all__ = ["METRICS", "Interval", "Repeated", "interval", "repeat", "t_975"]
