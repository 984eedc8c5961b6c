"""``gangplane describe | logs``: one object in detail, and pod logs (a TrainJob's: all its pods, prefixed).

Shells over ``KubeStore``; the text is built by ``describe`` and ``jobstatus`` (pure).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Annotated

import typer

from gangplane.cli import describe as describing
from gangplane.cli import jobstatus, kinds
from gangplane.cli.connect import (
    AllNamespacesOption,
    ContextOption,
    KubeconfigOption,
    NamespaceOption,
    Target,
    err,
    reported,
)
from gangplane.cli.get import Query, SelectorOption, empty_message, query_for
from gangplane.cli.logstream import LogFollower, container_names, prefix_for
from gangplane.client.kube import KubeStore
from gangplane.clock import WallClock
from gangplane.store.base import ListOptions, Object, ResourceType
from gangplane.store.catalog import EVENTS, PODS, TRAINJOBS


def events_for(store: KubeStore, rt: ResourceType, obj: Object) -> list[Object]:
    """Events whose involvedObject is ``obj`` (cluster-scoped objects' events live in ``default``)."""
    meta = obj.get("metadata") or {}
    selector = f"involvedObject.name={meta.get('name')},involvedObject.kind={rt.kind}"
    namespace = str(meta.get("namespace") or "default")
    return store.list(EVENTS, ListOptions(namespace=namespace, field_selector=selector)).items


def trainjob_pods(store: KubeStore, namespace: str, name: str) -> list[Object]:
    options = ListOptions(namespace=namespace, label_selector=jobstatus.pods_selector(name))
    return store.list_all(PODS, options).items


def describe_text(store: KubeStore, rt: ResourceType, namespace: str, name: str, now: float) -> str:
    obj = store.get(rt, namespace if rt.namespaced else "", name)
    summary = None
    if rt == TRAINJOBS:
        summary = jobstatus.summarize(obj, trainjob_pods(store, namespace, name))
    return describing.describe(rt, obj, events_for(store, rt, obj), now, summary)


def _described(
    store: KubeStore, requests: list[kinds.Request], query: Query
) -> list[tuple[ResourceType, str, str]]:
    """(type, namespace, name) of every object to describe: those named, else every one the selectors match
    (across all namespaces when the query has none)."""
    chosen: list[tuple[ResourceType, str, str]] = []
    for request in requests:
        if request.names:
            chosen += [(request.rt, query.namespace or "", n) for n in request.names]
            continue
        listed = store.list_all(request.rt, query.options(request.rt)).items
        chosen += [(request.rt, str(o["metadata"].get("namespace") or ""), str(o["metadata"]["name"]))
                   for o in listed]  # fmt: skip
    return chosen


def describe(
    resource: Annotated[
        list[str], typer.Argument(help="TYPE[,TYPE...] [NAME...] or TYPE/NAME...", show_default=False)
    ],
    selector: SelectorOption = "",
    namespace: NamespaceOption = None,
    all_namespaces: AllNamespacesOption = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Show objects in detail: fields, conditions, events; a TrainJob's wait and pods.

    Without a NAME, every object of the type (or those the selector matches)."""
    target = Target(kubeconfig, context, namespace)
    with reported(target):
        requests = kinds.parse_resources(resource, "describe")
        with target.open() as store:
            query = query_for(store, target, requests, all_namespaces, selector, "")
            chosen = _described(store, requests, query)
            now = WallClock().now()
            texts = [describe_text(store, rt, ns, name, now) for rt, ns, name in chosen]
    if not texts:
        err.print(empty_message(query.namespace), markup=False)
        return
    typer.echo("\n\n".join(t.rstrip("\n") for t in texts))


def _pods_of(store: KubeStore, namespace: str, target: str) -> tuple[list[Object], bool]:
    """The pods ``target`` names (``POD``, ``pod/NAME``, ``trainjob/NAME``) and whether to prefix lines."""
    kind, _, name = target.rpartition("/")
    rt = kinds.resolve_kind(kind) if kind else PODS
    if rt == PODS:
        return [store.get(PODS, namespace, name)], False
    if rt != TRAINJOBS:
        raise kinds.UnknownKind(f"logs needs a pod or a trainjob, not {kind!r}")
    store.get(TRAINJOBS, namespace, name)  # NotFound for a TrainJob that does not exist
    return trainjob_pods(store, namespace, name), True


def _print_log(chunks: Iterator[bytes], prefix: str) -> None:
    for chunk in chunks:
        if not prefix:
            sys.stdout.write(chunk.decode(errors="replace"))
            continue
        for line in chunk.decode(errors="replace").splitlines():
            typer.echo(f"{prefix} {line}")
    sys.stdout.flush()


def _follow_all(
    store: KubeStore, namespace: str, pods: list[Object], container: str, tail: int | None
) -> None:
    def source(ns: str, pod: str, c: str) -> Iterator[bytes]:
        return store.pod_log(ns, pod, container=c, follow=True, tail_lines=tail)

    follower = LogFollower(source)
    for pod in pods:
        for c in [container] if container else container_names(pod):
            follower.follow(namespace, pod, c)
    try:
        while True:
            active = follower.active  # read before draining, so the last lines are never left behind
            for prefix, line in follower.drain(timeout=0.2):
                typer.echo(f"{prefix} {line}")
            if not active:
                return
    except KeyboardInterrupt:
        return


def logs(
    target: Annotated[str, typer.Argument(help="POD, pod/NAME or trainjob/NAME.", show_default=False)],
    container: Annotated[str, typer.Option("--container", "-c", help="Container name.")] = "",
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Stream new output until the pods end.")
    ] = False,
    tail: Annotated[int | None, typer.Option("--tail", help="Only the last N lines of each log.")] = None,
    previous: Annotated[
        bool,
        typer.Option("--previous", "-p", help="The log of the container's previous, terminated instance."),
    ] = False,
    namespace: NamespaceOption = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Print a pod's log, or the logs of every pod of a TrainJob, each line after its pod's name."""
    where = Target(kubeconfig, context, namespace)
    with reported(where), where.open() as store:
        ns = where.namespace_in(store)
        pods, prefixed = _pods_of(store, ns, target)
        if follow and prefixed and not previous:
            _follow_all(store, ns, pods, container, tail)
            return
        for pod in pods:
            for c in [container] if container or not prefixed else container_names(pod):
                name = str(pod["metadata"]["name"])
                chunks = store.pod_log(
                    ns,
                    name,
                    container=c,
                    follow=follow and not previous,
                    tail_lines=tail,
                    previous=previous,
                )
                _print_log(chunks, prefix_for(pod, c) if prefixed else "")


def register(app: typer.Typer) -> None:
    app.command("describe")(describe)
    app.command("logs")(logs)


__all__ = ["describe", "describe_text", "events_for", "logs", "register", "trainjob_pods"]
