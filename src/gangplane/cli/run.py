"""``gangplane run -f trainjob.yaml``: apply the manifests (runtime included), then follow the TrainJob until
it ends — phase, why it waits, the gang, each pod, and the pods' logs — and exit 0 when it is Complete, 1
when it Failed, 2 when ``--timeout`` passed first.

``follow_trainjob`` is the loop, over any ``Store`` (a ``KubeStore`` here, a ``MemoryStore`` in tests); what
it decides comes from ``jobstatus.summarize`` and what it shows goes to a ``RunView``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Annotated

import typer
from rich.console import Console

from gangplane.cli import manifests
from gangplane.cli.connect import (
    ContextOption,
    KubeconfigOption,
    NamespaceOption,
    Target,
    err,
    fail,
    out,
    reported,
)
from gangplane.cli.jobstatus import TrainJobSummary, node_status, pods_selector, summarize
from gangplane.cli.logstream import LogFollower, LogSource
from gangplane.cli.objects import FilesOption, apply_all
from gangplane.cli.runview import LiveView, PlainView, RunView
from gangplane.store.base import ListOptions, Store
from gangplane.store.catalog import PODS, TRAINJOBS

TIMED_OUT = 2
_LOG_DRAIN_SECONDS = 5.0


def current_summary(
    store: Store, namespace: str, name: str
) -> tuple[TrainJobSummary, list[dict[str, object]]]:
    job = store.get(TRAINJOBS, namespace, name)
    pods = store.list(PODS, ListOptions(namespace=namespace, label_selector=pods_selector(name))).items
    return summarize(job, pods), pods


def follow_trainjob(
    store: Store,
    namespace: str,
    name: str,
    view: RunView,
    *,
    logs: LogSource | None = None,
    poll: float = 0.5,
    timeout: float | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> int:
    """Follow until the TrainJob ends; its exit code (0 Complete, 1 Failed), or ``TIMED_OUT``."""
    follower = LogFollower(logs) if logs is not None else None
    deadline = monotonic() + timeout if timeout else None
    while True:
        summary, pods = current_summary(store, namespace, name)
        view.status(summary)
        if follower is not None:
            for pod in pods:
                if node_status(pod).started:
                    follower.follow_pod(namespace, pod)
        if summary.exit_code is not None:
            _flush_logs(follower, view, wait=_LOG_DRAIN_SECONDS)
            return summary.exit_code
        if deadline is not None and monotonic() > deadline:
            return TIMED_OUT
        _pause(follower, view, poll)


def _pause(follower: LogFollower | None, view: RunView, poll: float) -> None:
    """Wait ``poll`` seconds, showing log lines as they arrive meanwhile."""
    if follower is None:
        time.sleep(poll)
        return
    deadline = time.monotonic() + poll
    while (left := deadline - time.monotonic()) > 0:
        for prefix, line in follower.drain(timeout=left):
            view.log(prefix, line)


def _flush_logs(follower: LogFollower | None, view: RunView, *, wait: float) -> None:
    if follower is None:
        return
    follower.wait(wait)
    for prefix, line in follower.drain():
        view.log(prefix, line)


def _the_trainjob(items: list[manifests.Manifest]) -> manifests.Manifest:
    jobs = [m for m in items if m.rt == TRAINJOBS]
    if len(jobs) != 1:
        raise fail(f"error: run needs exactly one TrainJob in the manifests, found {len(jobs)}")
    return jobs[0]


def run(
    files: FilesOption,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Give up after this many seconds (exit 2); 0 waits forever.")
    ] = 0,
    live: Annotated[bool, typer.Option("--live/--no-live", help="Live panel, or plain lines for CI.")] = True,
    show_logs: Annotated[bool, typer.Option("--logs/--no-logs", help="Stream the pods' logs.")] = True,
    namespace: NamespaceOption = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Apply a TrainJob (and its runtime), follow it live, and exit 0 when Complete, 1 when Failed."""
    target = Target(kubeconfig, context, namespace)
    with reported(target):
        items = manifests.read(files)
        job = _the_trainjob(items)
        with target.open() as store:
            ns = target.namespace_in(store)
            if not apply_all(store, items, ns, force=False):
                raise typer.Exit(1)

            def source(namespace: str, pod: str, container: str) -> Iterator[bytes]:
                return store.pod_log(namespace, pod, container=container, follow=True)

            view: RunView = (
                LiveView(Console(soft_wrap=True, highlight=False))
                if live
                else PlainView(lambda line: out.print(line, markup=False))
            )
            try:
                code = follow_trainjob(
                    store,
                    job.namespace(ns),
                    job.name,
                    view,
                    logs=source if show_logs else None,
                    timeout=timeout,
                )
            finally:
                view.close()
    if code == TIMED_OUT:
        err.print(f"error: timed out after {timeout:g}s waiting for trainjob/{job.name}", markup=False)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("run")(run)


__all__ = ["TIMED_OUT", "current_summary", "follow_trainjob", "register", "run"]
