"""``gangplane apply | get | delete``: kubectl's verbs against the embedded control plane or any cluster.

Thin shells: kind resolution, manifest order and output formatting are pure (``kinds``, ``manifests``,
``printers``); these functions only call the ``KubeStore`` and print. Apply is server-side apply with the
field manager ``gangplane``; delete cascades in the background unless ``--cascade`` says otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gangplane.cli import kinds, manifests, printers
from gangplane.cli.connect import (
    AllNamespacesOption,
    ContextOption,
    KubeconfigOption,
    NamespaceOption,
    Target,
    err,
    error_lines,
    out,
    reported,
)
from gangplane.cli.printers import Output
from gangplane.client.kube import KubeStore
from gangplane.client.kubeapi import APPLY_PATCH
from gangplane.errors import ApiError, NotFound
from gangplane.store.base import ListOptions, Object, Propagation, ResourceType

FIELD_MANAGER = "gangplane"

FilesOption = Annotated[
    list[Path],
    typer.Option("--filename", "-f", help="Manifest file or directory, or - for stdin (repeatable)."),
]
SelectorOption = Annotated[str, typer.Option("--selector", "-l", help="Label selector, e.g. app=mnist.")]


def _content(obj: Object) -> Object:
    """What an apply can change, ignoring the bookkeeping every write touches (resourceVersion, the
    managed-fields timestamps)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    meta["managedFields"] = [
        {k: v for k, v in entry.items() if k != "time"} for entry in meta.get("managedFields") or []
    ]
    return {**obj, "metadata": meta}


def apply_verb(before: Object | None, after: Object) -> str:
    """What an apply did, as kubectl reports it."""
    if before is None:
        return "created"
    return "unchanged" if _content(before) == _content(after) else "configured"


def apply_manifest(store: KubeStore, manifest: manifests.Manifest, namespace: str, *, force: bool) -> str:
    """Server-side apply one object; returns the line kubectl prints for it."""
    ns = manifest.namespace(namespace)
    try:
        before: Object | None = store.get(manifest.rt, ns, manifest.name)
    except NotFound:
        before = None
    body = manifest.placed(namespace)
    after = store.patch(
        manifest.rt, ns, manifest.name, body, APPLY_PATCH, field_manager=FIELD_MANAGER, force=force
    )
    return f"{printers.object_name(manifest.rt, after)} {apply_verb(before, after)}"


def apply_all(store: KubeStore, items: list[manifests.Manifest], namespace: str, *, force: bool) -> bool:
    """Apply every object in order, reporting each; True when all succeeded (kubectl carries on)."""
    ok = True
    for manifest in manifests.apply_order(items):
        try:
            out.print(apply_manifest(store, manifest, namespace, force=force), markup=False)
        except ApiError as exc:
            ok = False
            err.print("\n".join(error_lines(exc)), markup=False)
    return ok


def apply(
    files: FilesOption,
    force_conflicts: Annotated[
        bool, typer.Option("--force-conflicts", help="Take over fields another manager owns.")
    ] = False,
    namespace: NamespaceOption = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Create or update objects from manifests (server-side apply)."""
    target = Target(kubeconfig, context, namespace)
    with reported(target):
        items = manifests.read(files)
        store = target.open()
        try:
            ok = apply_all(store, items, target.namespace_in(store), force=force_conflicts)
        finally:
            store.close()
    if not ok:
        raise typer.Exit(1)


def _empty_message(rt: ResourceType, namespace: str | None) -> str:
    return (
        f"No resources found in {namespace} namespace."
        if rt.namespaced and namespace
        else "No resources found"
    )


def _objects(
    store: KubeStore, rt: ResourceType, names: list[str], options: ListOptions
) -> tuple[list[Object], str]:
    """The objects and the resourceVersion to watch them from ("" for named objects: from their state)."""
    if names:
        return [store.get(rt, options.namespace or "", n) for n in names], ""
    listed = store.list_all(rt, options)
    return listed.items, listed.resource_version


def _tables(store: KubeStore, rt: ResourceType, names: list[str], options: ListOptions) -> Object:
    if not names:
        return store.table(rt, options)
    tables = [store.table(rt, options, name) for name in names]
    return {**tables[0], "rows": [row for t in tables for row in t.get("rows") or []]}


def _print_objects(rt: ResourceType, objs: list[Object], output: Output, single: bool) -> None:
    if output == Output.NAME:
        for obj in objs:
            typer.echo(printers.object_name(rt, obj))
        return
    shown = objs[0] if single else printers.as_list(objs)
    typer.echo(printers.dump(shown, output), nl=False)


def get(
    resource: Annotated[list[str], typer.Argument(help="TYPE [NAME...] or TYPE/NAME...", show_default=False)],
    output: Annotated[
        Output, typer.Option("--output", "-o", help="wide, name, yaml or json.")
    ] = Output.TABLE,
    selector: SelectorOption = "",
    watch: Annotated[bool, typer.Option("--watch", "-w", help="After listing, watch for changes.")] = False,
    no_headers: Annotated[bool, typer.Option("--no-headers", help="Omit the header row.")] = False,
    request_timeout: Annotated[
        float, typer.Option("--request-timeout", help="Stop watching after this many seconds (0: never).")
    ] = 0,
    namespace: NamespaceOption = None,
    all_namespaces: AllNamespacesOption = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Show objects of one type as a table, names, YAML or JSON."""
    target = Target(kubeconfig, context, namespace)
    with reported(target):
        kind, names = kinds.split_type_name(resource)
        rt = kinds.resolve_kind(kind)
        store = target.open()
        try:
            ns = None if all_namespaces and not names else target.namespace_in(store)
            options = ListOptions(namespace=ns if rt.namespaced else None, label_selector=selector)
            version = _show(store, rt, names, options, output, headers=not no_headers)
            if watch:
                if names:  # kubectl watches one named object by its name
                    options = ListOptions(options.namespace, field_selector=f"metadata.name={names[0]}")
                _watch(store, rt, options, version, output, request_timeout)
        finally:
            store.close()


def _show(
    store: KubeStore,
    rt: ResourceType,
    names: list[str],
    options: ListOptions,
    output: Output,
    *,
    headers: bool,
) -> str:
    """Print the current state; returns the resourceVersion to watch from."""
    if output in (Output.TABLE, Output.WIDE):
        table = _tables(store, rt, names, options)
        if not table.get("rows"):
            err.print(_empty_message(rt, options.namespace), markup=False)
        else:
            with_ns = rt.namespaced and options.namespace is None
            typer.echo(
                printers.format_table(
                    table, wide=output == Output.WIDE, with_namespace=with_ns, headers=headers
                )
            )
        return str((table.get("metadata") or {}).get("resourceVersion") or "")
    objs, version = _objects(store, rt, names, options)
    if not objs and output == Output.NAME:
        err.print(_empty_message(rt, options.namespace), markup=False)
    else:
        _print_objects(rt, objs, output, single=len(names) == 1)
    return version


def _watch(
    store: KubeStore, rt: ResourceType, options: ListOptions, version: str, output: Output, timeout: float
) -> None:
    """Print each change until interrupted (or the server ends the watch after ``timeout`` seconds)."""
    tabular = output in (Output.TABLE, Output.WIDE)
    limit = timeout or None
    opened = (
        store.watch_table(rt, options, version, timeout=limit)
        if tabular
        else store.watch(rt, options, version, timeout=limit)
    )
    with_ns = rt.namespaced and options.namespace is None
    try:
        for event in opened:
            if tabular:
                rows = printers.table_rows(event.object, wide=output == Output.WIDE, with_namespace=with_ns)
                typer.echo("\n".join(printers.align(rows)[1:]))
            else:
                _print_objects(rt, [event.object], output, single=True)
    except KeyboardInterrupt:
        pass
    finally:
        opened.close()


def _delete_one(store: KubeStore, rt: ResourceType, namespace: str, name: str, cascade: Propagation) -> bool:
    try:
        store.delete(rt, namespace if rt.namespaced else "", name, propagation=cascade)
    except ApiError as exc:
        err.print("\n".join(error_lines(exc)), markup=False)
        return False
    out.print(f'{kinds.qualified_name(rt)} "{name}" deleted', markup=False)
    return True


def delete(
    resource: Annotated[
        list[str] | None, typer.Argument(help="TYPE NAME... or TYPE/NAME...", show_default=False)
    ] = None,
    files: Annotated[
        list[Path] | None, typer.Option("--filename", "-f", help="Delete the objects in these manifests.")
    ] = None,
    selector: SelectorOption = "",
    cascade: Annotated[
        Propagation, typer.Option("--cascade", help="Background, Foreground or Orphan.", case_sensitive=False)
    ] = Propagation.BACKGROUND,
    namespace: NamespaceOption = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Delete objects by type and name, by label selector, or those in manifests; dependents cascade."""
    target = Target(kubeconfig, context, namespace)
    with reported(target):
        store = target.open()
        try:
            ns = target.namespace_in(store)
            doomed = _doomed(store, resource or [], files or [], selector, ns)
            results = [_delete_one(store, rt, n_s or ns, name, cascade) for rt, n_s, name in doomed]
        finally:
            store.close()
    if not all(results):
        raise typer.Exit(1)


def _doomed(
    store: KubeStore, resource: list[str], files: list[Path], selector: str, namespace: str
) -> list[tuple[ResourceType, str, str]]:
    """(type, namespace, name) of every object to delete, in order."""
    if files:
        return [(m.rt, m.namespace(namespace), m.name) for m in manifests.delete_order(manifests.read(files))]
    kind, names = kinds.split_type_name(resource)
    rt = kinds.resolve_kind(kind)
    if names:
        return [(rt, namespace, n) for n in names]
    if not selector:
        raise typer.BadParameter("resource name may not be empty (give NAME, -l SELECTOR or -f FILE)")
    listed = store.list_all(rt, ListOptions(namespace if rt.namespaced else None, selector)).items
    return [(rt, str(o["metadata"].get("namespace", "")), str(o["metadata"]["name"])) for o in listed]


def register(app: typer.Typer) -> None:
    app.command("apply")(apply)
    app.command("get")(get)
    app.command("delete")(delete)


__all__ = ["FIELD_MANAGER", "apply", "apply_all", "apply_manifest", "apply_verb", "delete", "get", "register"]
