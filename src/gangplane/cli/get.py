"""``gangplane get``: kubectl's get against the embedded control plane or any cluster.

The resource arguments follow kubectl (``kinds.parse_resources``): ``trainjobs,pods``, ``trainjob/mnist``,
short names and the ``all`` category. Several types print one table each, names prefixed with their type;
``-o yaml|json|jsonpath`` print one object when exactly one was named, else a ``List``. A missing named
object is reported and the rest still print (exit code 1), as kubectl does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import typer

from gangplane.cli import jsonpath, kinds, printers
from gangplane.cli.connect import (
    AllNamespacesOption,
    ContextOption,
    KubeconfigOption,
    NamespaceOption,
    Target,
    err,
    error_lines,
    reported,
)
from gangplane.cli.kinds import Request
from gangplane.cli.printers import Output, OutputFormat
from gangplane.client.kube import KubeStore
from gangplane.errors import ApiError
from gangplane.store.base import ListOptions, Object, ResourceType

SelectorOption = Annotated[str, typer.Option("--selector", "-l", help="Label selector, e.g. app=mnist.")]
FieldSelectorOption = Annotated[
    str, typer.Option("--field-selector", help="Field selector, e.g. status.phase=Running.")
]


@dataclass(frozen=True, slots=True)
class Query:
    """Where and what to list: the namespace (None: all) and the selectors."""

    namespace: str | None
    labels: str = ""
    fields: str = ""

    def options(self, rt: ResourceType) -> ListOptions:
        return ListOptions(self.namespace if rt.namespaced else None, self.labels, self.fields)


@dataclass
class Found:
    """What a get found: per type, the tables or objects, and whether a named object was missing."""

    tables: list[tuple[ResourceType, Object]] = field(default_factory=list)
    objects: list[tuple[ResourceType, Object]] = field(default_factory=list)
    failed: bool = False
    version: str = ""  # resourceVersion to watch a single list from


def _reported(exc: ApiError, found: Found) -> None:
    err.print("\n".join(error_lines(exc)), markup=False)
    found.failed = True


def _collect_tables(store: KubeStore, request: Request, query: Query, found: Found) -> None:
    options = query.options(request.rt)
    if not request.names:
        table = store.table(request.rt, options)
        found.tables.append((request.rt, table))
        found.version = str((table.get("metadata") or {}).get("resourceVersion") or "")
        return
    for name in request.names:
        try:
            found.tables.append((request.rt, store.table(request.rt, options, name)))
        except ApiError as exc:
            _reported(exc, found)


def _collect_objects(store: KubeStore, request: Request, query: Query, found: Found) -> None:
    options = query.options(request.rt)
    if not request.names:
        listed = store.list_all(request.rt, options)
        found.objects += [(request.rt, o) for o in listed.items]
        found.version = listed.resource_version
        return
    for name in request.names:
        try:
            found.objects.append((request.rt, store.get(request.rt, options.namespace or "", name)))
        except ApiError as exc:
            _reported(exc, found)


def collect(store: KubeStore, requests: list[Request], query: Query, fmt: OutputFormat) -> Found:
    found = Found()
    for request in requests:
        (_collect_tables if fmt.tabular else _collect_objects)(store, request, query, found)
    return found


def empty_message(namespace: str | None, namespaced: bool = True) -> str:
    return (
        f"No resources found in {namespace} namespace." if namespaced and namespace else "No resources found"
    )


@dataclass(frozen=True, slots=True)
class Layout:
    """How tables are printed: header row, ``-L`` label columns, ``--show-labels``."""

    headers: bool = True
    label_columns: tuple[str, ...] = ()
    show_labels: bool = False


def _print_tables(found: Found, query: Query, fmt: OutputFormat, layout: Layout) -> None:
    shown = [(rt, t) for rt, t in found.tables if t.get("rows")]
    several = len({rt for rt, _ in found.tables}) > 1
    blocks = []
    for rt, table in shown:
        laid = printers.with_labels(table, layout.label_columns, layout.show_labels)
        laid = printers.with_kind(laid, rt) if several else laid
        with_ns = rt.namespaced and query.namespace is None
        wide = fmt.output == Output.WIDE
        blocks.append(printers.format_table(laid, wide=wide, with_namespace=with_ns, headers=layout.headers))
    if blocks:
        typer.echo("\n\n".join(blocks))


def print_objects(objs: list[tuple[ResourceType, Object]], fmt: OutputFormat, *, single: bool) -> None:
    """``-o name|yaml|json|jsonpath|custom-columns`` of these objects (``single``: one object, not a List)."""
    if fmt.output == Output.NAME:
        for rt, obj in objs:
            typer.echo(printers.object_name(rt, obj))
        return
    if fmt.output == Output.CUSTOM_COLUMNS:
        typer.echo("\n".join(printers.custom_column_rows(fmt.template, (o for _, o in objs))))
        return
    shown = objs[0][1] if single else printers.as_list(o for _, o in objs)
    if fmt.output == Output.JSONPATH:
        typer.echo(jsonpath.render(fmt.template, printers.without_managed_fields(shown)), nl=False)
        return
    typer.echo(printers.dump(shown, fmt.output), nl=False)


def show(found: Found, requests: list[Request], query: Query, fmt: OutputFormat, layout: Layout) -> None:
    """Print what ``collect`` found; "No resources found" when a listing found nothing."""
    entries = [t for _, t in found.tables if t.get("rows")] if fmt.tabular else found.objects
    if not entries and not found.failed and fmt.output not in (Output.JSON, Output.YAML):
        namespaced = any(r.rt.namespaced for r in requests)
        err.print(empty_message(query.namespace, namespaced), markup=False)
        return
    if fmt.tabular:
        _print_tables(found, query, fmt, layout)
        return
    single = len(requests) == 1 and len(requests[0].names) == 1 and len(found.objects) == 1
    if found.objects or not found.failed:
        print_objects(found.objects, fmt, single=single)


def query_for(
    store: KubeStore, target: Target, requests: list[Request], all_namespaces: bool, labels: str, fields: str
) -> Query:
    if all_namespaces and any(r.names for r in requests):
        raise kinds.UnknownKind("a resource cannot be retrieved by name across all namespaces")
    return Query(None if all_namespaces else target.namespace_in(store), labels, fields)


def _watch(
    store: KubeStore,
    request: Request,
    query: Query,
    version: str,
    fmt: OutputFormat,
    layout: Layout,
    timeout: float,
) -> None:
    """Print each change until interrupted (or the server ends the watch after ``timeout`` seconds)."""
    rt, options = request.rt, query.options(request.rt)
    if request.names:  # kubectl watches one named object by its name
        options = ListOptions(options.namespace, field_selector=f"metadata.name={request.names[0]}")
    limit = timeout or None
    opened = (
        store.watch_table(rt, options, version, timeout=limit)
        if fmt.tabular
        else store.watch(rt, options, version, timeout=limit)
    )
    with_ns = rt.namespaced and options.namespace is None
    try:
        for event in opened:
            if fmt.tabular:
                rows = printers.table_rows(
                    event.object, wide=fmt.output == Output.WIDE, with_namespace=with_ns
                )
                typer.echo("\n".join(printers.align(rows)[1:]))
            else:
                print_objects([(rt, event.object)], fmt, single=True)
    finally:
        opened.close()


def _watchable(requests: list[Request]) -> Request:
    if len(requests) != 1 or len(requests[0].names) > 1:
        count = sum(max(len(r.names), 1) for r in requests)
        raise kinds.UnknownKind(
            "watch is only supported on individual resources and resource collections, "
            f"but {count} resources were found"
        )
    return requests[0]


def get(
    resource: Annotated[
        list[str], typer.Argument(help="TYPE[,TYPE...] [NAME...] or TYPE/NAME...", show_default=False)
    ],
    output: Annotated[
        str,
        typer.Option(
            "--output",
            "-o",
            help="wide, name, yaml, json, jsonpath=TEMPLATE or custom-columns=HEADER:PATH,...",
        ),
    ] = "",
    selector: SelectorOption = "",
    field_selector: FieldSelectorOption = "",
    watch: Annotated[bool, typer.Option("--watch", "-w", help="After listing, watch for changes.")] = False,
    no_headers: Annotated[bool, typer.Option("--no-headers", help="Omit the header row.")] = False,
    label_columns: Annotated[
        list[str] | None,
        typer.Option("--label-columns", "-L", help="Show this label's value as a column (repeatable)."),
    ] = None,
    show_labels: Annotated[
        bool, typer.Option("--show-labels", help="Show all labels as the last column.")
    ] = False,
    request_timeout: Annotated[
        float, typer.Option("--request-timeout", help="Stop watching after this many seconds (0: never).")
    ] = 0,
    namespace: NamespaceOption = None,
    all_namespaces: AllNamespacesOption = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Show objects of one or more types as tables, names, YAML, JSON, JSONPath or custom columns."""
    target = Target(kubeconfig, context, namespace)
    with reported(target):
        fmt = printers.parse_output(output)
        requests = kinds.parse_resources(resource)
        watched = _watchable(requests) if watch else None
        with target.open() as store:
            query = query_for(store, target, requests, all_namespaces, selector, field_selector)
            found = collect(store, requests, query, fmt)
            columns = tuple(c for arg in label_columns or [] for c in arg.split(",") if c)
            layout = Layout(not no_headers, columns, show_labels)
            show(found, requests, query, fmt, layout)
            if watched is not None:
                since = "" if watched.names else found.version
                _watch(store, watched, query, since, fmt, layout, request_timeout)
    if found.failed:
        raise typer.Exit(1)


def api_resources() -> None:
    """List the resource types the embedded API server serves, with their short names."""
    rows = [["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]]
    rows += [
        [rt.plural, ",".join(rt.short_names), rt.api_version, str(rt.namespaced).lower(), rt.kind]
        for rt in kinds.SERVED_TYPES
        if rt.version != "v1beta1"
        or not rt.group.startswith("kueue")  # older versions: not listed, as kubectl
    ]
    typer.echo("\n".join(printers.align(rows)))


def register(app: typer.Typer) -> None:
    app.command("get")(get)
    app.command("api-resources")(api_resources)


__all__ = [
    "FieldSelectorOption",
    "Layout",
    "Query",
    "SelectorOption",
    "collect",
    "get",
    "print_objects",
    "query_for",
    "register",
    "show",
]
