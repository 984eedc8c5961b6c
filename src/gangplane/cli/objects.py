"""``gangplane apply | delete``: kubectl's verbs against the embedded control plane or any cluster.

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
from gangplane.cli.get import FieldSelectorOption, Query, SelectorOption, query_for
from gangplane.client.kube import KubeStore
from gangplane.client.kubeapi import APPLY_PATCH
from gangplane.errors import ApiError, NotFound
from gangplane.store.base import Object, Propagation, ResourceType

FIELD_MANAGER = "gangplane"

FilesOption = Annotated[
    list[Path],
    typer.Option("--filename", "-f", help="Manifest file or directory, or - for stdin (repeatable)."),
]


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
        with target.open() as store:
            ok = apply_all(store, items, target.namespace_in(store), force=force_conflicts)
    if not ok:
        raise typer.Exit(1)


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
    field_selector: FieldSelectorOption = "",
    everything: Annotated[
        bool, typer.Option("--all", help="Delete every object of the given types in the namespace.")
    ] = False,
    cascade: Annotated[
        Propagation, typer.Option("--cascade", help="Background, Foreground or Orphan.", case_sensitive=False)
    ] = Propagation.BACKGROUND,
    namespace: NamespaceOption = None,
    all_namespaces: AllNamespacesOption = False,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Delete objects (by name, selector, --all, or manifests); their dependents cascade."""
    target = Target(kubeconfig, context, namespace)
    with reported(target), target.open() as store:
        if files:
            ns = target.namespace_in(store)
            items = manifests.delete_order(manifests.read(files))
            doomed = [(m.rt, m.namespace(ns), m.name) for m in items]
        else:
            requests = kinds.parse_resources(resource or [], "delete")
            query = query_for(store, target, requests, all_namespaces, selector, field_selector)
            doomed = _doomed(store, requests, query, everything)
        results = [_delete_one(store, rt, n_s, name, cascade) for rt, n_s, name in doomed]
    if not all(results):
        raise typer.Exit(1)


def _doomed(
    store: KubeStore, requests: list[kinds.Request], query: Query, everything: bool
) -> list[tuple[ResourceType, str, str]]:
    """(type, namespace, name) of every object to delete, in order (across namespaces when the query has
    none)."""
    doomed: list[tuple[ResourceType, str, str]] = []
    for request in requests:
        rt = request.rt
        if request.names:
            doomed += [(rt, (query.namespace or "") if rt.namespaced else "", n) for n in request.names]
            continue
        if not (query.labels or query.fields or everything):
            raise kinds.UnknownKind("resource(s) were provided, but no name was specified")
        listed = store.list_all(rt, query.options(rt)).items
        doomed += [(rt, str(o["metadata"].get("namespace", "")), str(o["metadata"]["name"])) for o in listed]
    return doomed


def register(app: typer.Typer) -> None:
    app.command("apply")(apply)
    app.command("delete")(delete)


__all__ = ["FIELD_MANAGER", "apply", "apply_all", "apply_manifest", "apply_verb", "delete", "register"]
