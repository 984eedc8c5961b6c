"""``gangplane simulate``: replay a scenario or a trace under several policies and compare them.

Prints one table (JCT, queueing delay, makespan, utilisation, fairness, checks) and, with ``--out``, writes
per-policy timelines (CSV), a summary (JSON) and PNG plots. Exit codes: 0 sound and every job finished;
1 bad input; 2 a run broke a lower bound or an invariant (the simulator or a scheduler core is wrong); 3 a run
left jobs unfinished (never started, rejected as impossible, or stuck: a replay that stopped making progress
is stopped with an error naming the stuck jobs, ``simulator.stall``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
import yaml
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from gangplane.simulator.cluster import ClusterSpec, uniform_cluster
from gangplane.simulator.compare import Comparison, rich_progress, run_policies
from gangplane.simulator.engine import FailureModel
from gangplane.simulator.export import write_segments, write_summary, write_timeline
from gangplane.simulator.gputraces import load_alibaba_nodes
from gangplane.simulator.jobs import JobSpec, with_estimates
from gangplane.simulator.policies import PolicyOptions, default_registry
from gangplane.simulator.preemption import Preemption
from gangplane.simulator.repeat import Interval, Repeated, repeat
from gangplane.simulator.scenario import generate, load_scenario
from gangplane.simulator.traces import TraceError, TraceFormat, load_trace

DEFAULT_POLICIES = ("fifo", "backfill")
UNFINISHED_EXIT = 3
RANGES: dict[str, tuple[float, float]] = {
    "--nodes": (1, math.inf),
    "--gpus-per-node": (1, math.inf),
    "--backfill-depth": (1, math.inf),
    "--failure-probability": (0, 1),
    "--gantt-hours": (0, math.inf),
    "--restart-cost": (0, math.inf),
    "--las-starvation": (0, math.inf),
    "--repeat": (1, math.inf),
    "--explain": (0, math.inf),
}
"""Each numeric option's allowed range, checked here rather than by typer: a usage error would exit 2,
which this command keeps for a broken invariant."""


def _check_ranges(given: dict[str, float | None]) -> None:
    """``ValueError`` naming the first option out of its range (NaN is out of every range)."""
    for option, value in given.items():
        low, high = RANGES[option]
        if value is not None and not low <= value <= high:
            bound = f"at least {low:g}" if high == math.inf else f"between {low:g} and {high:g}"
            raise ValueError(f"{option} must be {bound}, not {value:g}")


def _check_cluster(cluster: ClusterSpec, source: str) -> None:
    if cluster.total_gpus < 1:
        raise ValueError(
            f"{source}: the cluster has no GPUs ({len(cluster.nodes)} node(s)): nothing to replay on"
        )


def _percent(share: float) -> str:
    return "-" if math.isnan(share) else f"{100 * share:.1f}"


def _time_unit(comparison: Comparison) -> tuple[str, float]:
    """Seconds for short runs, hours for long ones."""
    longest = max((o.summary.makespan for o in comparison.outcomes), default=0.0)
    return ("h", 3600.0) if longest > 2 * 3600 else ("s", 1.0)


def comparison_table(comparison: Comparison, title: str) -> Table:
    """One row per policy; ``util*`` is utilisation while some job waits (see simulator.metrics)."""
    unit, scale = _time_unit(comparison)

    def span(seconds: float) -> str:
        return "-" if math.isnan(seconds) else f"{seconds / scale:,.{2 if unit == 'h' else 1}f}"

    table = Table(title=title)
    headers = (
        "policy",
        "done",
        f"JCT {unit}",
        "p95",
        f"wait {unit}",
        "p95",
        f"makespan {unit}",
        "util %",
        "util* %",
        "Jain",
        "lost GPU-h",
        "checks",
    )
    for header in headers:
        table.add_column(header, justify="left" if header == "policy" else "right", no_wrap=True)
    for outcome in comparison.outcomes:
        s = outcome.summary
        checks = (
            "[green]ok[/]" if not outcome.violations else f"[bold red]{len(outcome.violations)} violated[/]"
        )
        table.add_row(
            s.policy,
            f"{s.finished}/{s.jobs}",
            span(s.mean_jct),
            span(s.p95_jct),
            span(s.mean_wait),
            span(s.p95_wait),
            span(s.makespan),
            _percent(s.utilisation),
            _percent(s.utilisation_backlogged),
            f"{s.fairness:.3f}",
            f"{s.wasted_gpu_hours:,.1f}",
            checks,
        )
    b = comparison.bounds
    table.caption = (
        f"lower bounds: makespan >= {span(b.makespan)} {unit} (work {span(b.work)}, longest job "
        f"{span(b.longest_job)}); mean JCT >= {span(b.mean_duration)} {unit}. util: arrival window; "
        "util*: while jobs wait; Jain: fairness of per-queue slowdown; lost GPU-h: preempted or failed runs"
    )
    left = [o.summary for o in comparison.outcomes if o.summary.never_started or o.summary.rejected]
    if left:
        table.caption += ". JCT/wait over finished/started jobs only; left out: " + ", ".join(
            f"{s.policy} {s.never_started} never started, {s.rejected} rejected" for s in left
        )
    return table


def _jobs_and_cluster(
    scenario: Path | None,
    trace: Path | None,
    trace_format: TraceFormat,
    nodes: int,
    gpus_per_node: int,
    vc: list[str] | None,
    seed: int | None,
    node_list: Path | None = None,
) -> tuple[Callable[[int], list[JobSpec]], ClusterSpec, str, int]:
    """The jobs for a seed, the cluster, a title and the seed in force (``--seed``, else the scenario's,
    else 0). A scenario generates different jobs per seed; a trace's jobs are the same for every seed."""
    if (scenario is None) == (trace is None):
        raise ValueError("give a SCENARIO file or --trace FILE (one of them)")
    if scenario is not None:
        try:
            parsed = load_scenario(scenario)
        except ValidationError as exc:
            raise ValueError(f"{scenario}: {exc}") from None
        seed = parsed.seed if seed is None else seed
        generate(parsed, scenario.parent, seed)  # bad values surface before any replay
        _check_cluster(parsed.cluster_spec(), str(scenario))
        return (
            lambda s: generate(parsed, scenario.parent, s),
            parsed.cluster_spec(),
            parsed.name,
            seed,
        )
    assert trace is not None
    notes: list[str] = []
    jobs = load_trace(trace, trace_format, gpus_per_node=gpus_per_node, vc=vc or None, notes=notes)
    for note in notes:
        Console(stderr=True, highlight=False).print(f"[yellow]note[/] {note}")
    title = trace.name + (f" (VC {', '.join(vc)})" if vc else "")
    return (
        lambda _: jobs,
        _cluster(trace_format, node_list, nodes, gpus_per_node),
        title,
        0 if seed is None else seed,
    )


def _cluster(
    trace_format: TraceFormat, node_list: Path | None, nodes: int, gpus_per_node: int
) -> ClusterSpec:
    """``--nodes`` x ``--gpus-per-node``, or the Alibaba node list (GPUs in milli-GPUs)."""
    if trace_format == TraceFormat.ALIBABA:
        if node_list is None:
            raise ValueError("--format alibaba needs --node-list openb_node_list_*.csv (the trace's cluster)")
        cluster = load_alibaba_nodes(node_list)
        _check_cluster(cluster, str(node_list))
        return cluster
    if node_list is not None:
        raise ValueError("--node-list goes with --format alibaba")
    return uniform_cluster(nodes, gpus_per_node)


def _preemption(restart: str | None, cost: float) -> Preemption | None:
    if restart not in (None, "scratch", "checkpoint"):
        raise ValueError(f"--restart must be scratch or checkpoint, not {restart!r}")
    if restart is None:
        return Preemption(checkpoint=True, restart_cost=cost) if cost else None
    return Preemption(checkpoint=restart == "checkpoint", restart_cost=cost)


def repeat_table(repeated: Repeated) -> Table:
    """Mean ± 95 % confidence half-width per policy over the seeds."""
    table = Table(
        title=f"{len(repeated.seeds)} seeds ({repeated.seeds[0]}..{repeated.seeds[-1]}): mean ± 95 % CI"
    )
    for header in ("policy", "mean JCT s", "mean wait s", "makespan s", "util %"):
        table.add_column(header, justify="left" if header == "policy" else "right", no_wrap=True)
    for policy, metrics in repeated.intervals().items():
        util = metrics["utilisation"]
        table.add_row(
            policy,
            str(metrics["mean_jct"]),
            str(metrics["mean_wait"]),
            str(metrics["makespan"]),
            str(Interval(100 * util.mean, 100 * util.half_width)),
        )
    return table


def _write(comparison: Comparison, out: Path, console: Console, gantt_hours: float | None) -> None:
    try:
        from gangplane.simulator.plots import plot_all  # matplotlib only when plots are wanted
    except ModuleNotFoundError as err:
        if not (err.name or "").startswith("matplotlib"):
            raise
        console.print(
            "error: the plots need matplotlib, an optional extra: pip install 'gangplane[plots]'",
            markup=False,
        )
        raise typer.Exit(1) from None

    out.mkdir(parents=True, exist_ok=True)
    for outcome in comparison.outcomes:
        write_timeline(outcome.result, out / f"timeline-{outcome.summary.policy}.csv")
        write_segments(outcome.result, out / f"segments-{outcome.summary.policy}.csv")
    write_summary(
        out / "summary.json",
        [o.summary for o in comparison.outcomes],
        comparison.bounds,
        comparison.violations,
    )
    window = None if gantt_hours is None else (0.0, gantt_hours * 3600)
    plots = plot_all(comparison.outcomes, out, gantt_window=window)
    console.print(f"wrote {len(comparison.outcomes)} timelines, summary.json and {len(plots)} plots to {out}")


def simulate(
    scenario: Annotated[
        Path | None, typer.Argument(help="Scenario YAML (cluster, queues, workloads).")
    ] = None,
    trace: Annotated[Path | None, typer.Option("--trace", help="Replay a trace file instead.")] = None,
    trace_format: Annotated[TraceFormat, typer.Option("--format", help="Trace format.")] = TraceFormat.CSV,
    policies: Annotated[list[str] | None, typer.Option("--policy", "-p", help="Policy (repeatable).")] = None,
    nodes: Annotated[int, typer.Option("--nodes", help="Nodes, for --trace.")] = 16,
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", help="GPUs per node, for --trace.")] = 8,
    vc: Annotated[
        list[str] | None, typer.Option("--vc", help="Philly virtual cluster to keep (repeatable).")
    ] = None,
    node_list: Annotated[
        Path | None, typer.Option("--node-list", help="Alibaba node list: the cluster, for --format alibaba.")
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed (default: the scenario's, else 0).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Directory for CSV/JSON exports and plots.")
    ] = None,
    backfill_depth: Annotated[
        int | None,
        typer.Option("--backfill-depth", help="Backfill scan cap per shape (default: none, exact EASY)."),
    ] = None,
    estimates: Annotated[
        str,
        typer.Option(
            "--estimates", help="Run-time estimates: exact, or trace (requested time, killed when reached)."
        ),
    ] = "exact",
    estimate_factor: Annotated[
        float, typer.Option("--estimate-factor", help="Estimates = F x duration (with exact).")
    ] = 1.0,
    placement: Annotated[
        str | None,
        typer.Option("--placement", help="binpack or spread, for fifo/backfill/conservative/coscheduling."),
    ] = None,
    failure_probability: Annotated[float, typer.Option("--failure-probability")] = 0.0,
    gantt_hours: Annotated[float | None, typer.Option("--gantt-hours", help="Gantt: first N hours.")] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
    restart: Annotated[
        str | None,
        typer.Option("--restart", help="Preempted runs: scratch or checkpoint (default: per policy)."),
    ] = None,
    restart_cost: Annotated[
        float, typer.Option("--restart-cost", help="Seconds to resume from a checkpoint.")
    ] = 0.0,
    las_threshold: Annotated[
        list[float] | None,
        typer.Option("--las-threshold", help="las: GPU-seconds at which a job drops a queue (repeatable)."),
    ] = None,
    las_starvation: Annotated[
        float, typer.Option("--las-starvation", help="las: starvation guard K (0 = off).")
    ] = 0.0,
    repeat_runs: Annotated[
        int, typer.Option("--repeat", help="Runs over seeds seed..seed+N-1: mean and 95 % CI.")
    ] = 1,
    explain: Annotated[
        int | None,
        typer.Option("--explain", help="Job id: why it waited, per cycle (integration policies)."),
    ] = None,
) -> None:
    """Compare scheduling policies on a scenario or a trace in virtual time."""
    console, errors = Console(highlight=False), Console(stderr=True, highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 132)
    try:
        _check_ranges(
            {
                "--nodes": nodes,
                "--gpus-per-node": gpus_per_node,
                "--backfill-depth": backfill_depth,
                "--failure-probability": failure_probability,
                "--gantt-hours": gantt_hours,
                "--restart-cost": restart_cost,
                "--las-starvation": las_starvation,
                "--repeat": repeat_runs,
                "--explain": explain,
            }
        )
        make_jobs, cluster, title, seed = _jobs_and_cluster(
            scenario, trace, trace_format, nodes, gpus_per_node, vc, seed, node_list
        )
        jobs = with_estimates(make_jobs(seed), estimates, estimate_factor)
        if not jobs:
            raise ValueError(
                f"{scenario or trace}: no jobs to replay" + (f" in VC {', '.join(vc)}" if vc else "")
            )
        if explain is not None and explain >= len(jobs):
            raise ValueError(f"--explain {explain}: the jobs are numbered 0..{len(jobs) - 1}")
        options = PolicyOptions(
            explain=explain,
            seed=seed,
            backfill_depth=backfill_depth,
            placement=placement,
            preemption=_preemption(restart, restart_cost),
            las_thresholds=tuple(las_threshold or (3600.0,)),
            las_starvation=las_starvation,
        )
        comparison = run_policies(
            jobs,
            cluster,
            list(policies or DEFAULT_POLICIES),
            options=options,
            registry=default_registry(),
            failures=FailureModel(failure_probability),
            progress=(lambda name, total: rich_progress(name, total, errors)) if progress else None,
        )
        repeated = (
            repeat(
                lambda s: with_estimates(make_jobs(s), estimates, estimate_factor),
                cluster,
                list(policies or DEFAULT_POLICIES),
                range(seed + 1, seed + repeat_runs),
                options=options,
                failures=FailureModel(failure_probability),
                first=comparison,
            )
            if repeat_runs > 1
            else None
        )
    except (OSError, TraceError, ValidationError, yaml.YAMLError, KeyError, ValueError) as exc:
        said = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc  # no quotes around a KeyError's
        errors.print(f"error: {said}", markup=False)
        raise typer.Exit(1) from None
    console.print(comparison_table(comparison, f"{title}: {len(jobs)} jobs on {cluster.total_gpus} GPUs"))
    if repeated is not None:
        console.print(repeat_table(repeated))
    if explain is not None:
        print_explanations(comparison, explain, console)
    left = [o.summary for o in comparison.outcomes if o.summary.unfinished or o.summary.rejected]
    for outcome in comparison.outcomes:
        if outcome.result.stall is not None:
            errors.print(f"error: {outcome.summary.policy}: {outcome.result.stall.message()}", markup=False)
    for s, rejected in ((s, _rejected(comparison, s.policy)) for s in left):
        errors.print(
            f"[yellow]warning[/] {s.policy}: {s.unfinished} job(s) never finished, {s.rejected} rejected "
            f"{rejected}(a gang larger than any placement or quota allows; see the timeline's rejected "
            "column); means are over finished jobs only"
        )
    for policy, found in comparison.violations.items():
        for violation in found[:20]:
            errors.print(f"[bold red]VIOLATION[/] {policy}: {violation}")
    if out is not None:
        _write(comparison, out, console, gantt_hours)
    runs = repeated.comparisons if repeated is not None else (comparison,)
    stuck = [(o.summary.policy, o.result.stall) for run in runs[1:] for o in run.outcomes if o.result.stall]
    for extra in runs[1:]:
        for policy, found in extra.violations.items():
            errors.print(f"[bold red]VIOLATION[/] {policy} (another seed): {found[0]}")
    for policy, stall in stuck:
        errors.print(f"error: {policy} (another seed): {stall.message()}", markup=False)
    if any(run.violations for run in runs):
        raise typer.Exit(2)
    if left or stuck:
        raise typer.Exit(UNFINISHED_EXIT)


def _rejected(comparison: Comparison, policy: str, shown: int = 10) -> str:
    """``"(jobs 3, 7) "``: the first rejected jobs of ``policy``'s run, by id (and trace name), or ``""``."""
    records = next(o.result.records for o in comparison.outcomes if o.summary.policy == policy)
    named = [f"{r.job.id}" + (f" {r.job.name}" if r.job.name else "") for r in records if r.rejected]
    if not named:
        return ""
    more = f" and {len(named) - shown} more" if len(named) > shown else ""
    return f"(jobs {', '.join(named[:shown])}{more}) "


def print_explanations(comparison: Comparison, job_id: int, console: Console) -> None:
    """Per policy, each reason the job waited: from when, until when, how many cycles, the scheduler's words."""
    for outcome in comparison.outcomes:
        record = outcome.result.records[job_id]
        console.print(
            f"[bold]{outcome.summary.policy}[/]: job {job_id} arrived {record.job.arrival:,.0f} s, "
            f"started {'never' if record.start is None else f'{record.start:,.0f} s'}"
        )
        if not outcome.result.explained:
            why = "waited in no cycle" if record.start == record.job.arrival else "gives no explanations"
            console.print(f"  ({outcome.summary.policy} {why})")
        for reason in outcome.result.explained:
            span = f"{reason.since:,.0f} s" + (
                f" .. {reason.until:,.0f} s, {reason.times} cycles" if reason.times > 1 else ""
            )
            console.print(f"  {span}: {reason.status}: {reason.message}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)


__all__ = ["comparison_table", "register", "simulate"]
