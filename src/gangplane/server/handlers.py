"""The verbs: thin adapters from an HTTP request to one ``Store`` call and back.

Each handler parses with the pure functions of ``query``, calls the store in a worker thread (store calls may
block on SQLite or a watch queue) and renders the result; errors travel as ``ApiError`` to the app's handler.
Handlers never touch files except through ``logs``, which confines itself to the logs directory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from gangplane.clock import Clock
from gangplane.errors import ApiError, NotFound
from gangplane.server import bodies, fieldvalidation, logs, query
from gangplane.server.commits import GroupCommit
from gangplane.server.query import BadRequest, Target
from gangplane.server.resources import Registry, Served
from gangplane.server.streams import STREAMED_ITEMS, DisconnectAwareStream, list_chunks, watch_lines
from gangplane.server.tables import render_table
from gangplane.store.base import (
    EventType,
    ListOptions,
    Object,
    ObjectList,
    ResourceType,
    Store,
    WatchEvent,
    collecting_warnings,
)
from gangplane.store.engine import Engine

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Context:
    store: Store
    registry: Registry
    clock: Clock
    logs_dir: Path
    watch_limiter: anyio.CapacityLimiter
    commits: GroupCommit


async def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a store call that may take long (lists, watches, collections, files) in a worker thread."""
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))


async def quick(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a single-object store call on the event loop: it holds the store lock for well under a
    millisecond, less than a worker-thread hop costs, and single-object calls dominate API traffic."""
    return fn(*args, **kwargs)


async def write(ctx: Context, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """A single-object write on the event loop, returned once durable (``commits.py``: the writes of the
    requests handled meanwhile share its transaction)."""
    return (await written(ctx, fn, *args, **kwargs))[0]


async def written(ctx: Context, fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, str | None]:
    """``write``, with the stored JSON of what it returns when the store has it (taken before awaiting the
    commit, while no other request's write can have come between)."""
    epoch = ctx.commits.epoch()
    try:
        result = ctx.commits.write(fn, *args, **kwargs)
        return result, ctx.commits.encoded(result)
    finally:
        await ctx.commits.durable(epoch)  # also after a failure: a cascade may have committed some steps


def to_wire(served: Served, obj: Object) -> Object:
    return {"apiVersion": served.rt.api_version, "kind": served.rt.kind, **_without_type(obj)}


def _without_type(obj: Object) -> Object:
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}


def from_wire(served: Served, target: Target, obj: Any) -> Object:
    """Check a request body against the URL and turn it into the stored representation."""
    rt = served.rt
    if not isinstance(obj, dict):
        raise BadRequest("the request body must be a JSON object")
    if obj.get("apiVersion", rt.api_version) != rt.api_version or obj.get("kind", rt.kind) != rt.kind:
        raise BadRequest(
            f"the API version in the data ({obj.get('apiVersion')}) and kind ({obj.get('kind')}) "
            f"do not match the URL ({rt.api_version}, {rt.kind})"
        )
    if not isinstance(obj.get("metadata") or {}, dict):
        got = type(obj["metadata"]).__name__
        what = f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}'
        raise BadRequest(f"{what}: metadata must be an object, not {got}")
    meta = dict(obj.get("metadata") or {})
    if target.name and meta.get("name", target.name) != target.name:
        raise BadRequest(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL ({target.name})"
        )
    if target.name:
        meta.setdefault("name", target.name)
    if rt.namespaced:
        if meta.get("namespace", target.namespace) != target.namespace:
            raise BadRequest("the namespace of the object does not match the namespace on the URL")
        meta["namespace"] = target.namespace
    else:
        meta.pop("namespace", None)
    storage = served.storage
    # type first, as kube-apiserver encodes it: a write is answered with the stored JSON (``_render_one``)
    return {"apiVersion": storage.api_version, "kind": storage.kind, **_without_type(obj), "metadata": meta}


def json_response(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body, separators=(",", ":")), status, media_type="application/json")


def error_response(err: ApiError) -> JSONResponse:
    return JSONResponse(err.status(), err.code)


def _params(request: Request) -> dict[str, str]:
    if not request.scope.get("query_string"):  # most writes: no parameters to parse
        return {}
    return dict(request.query_params)


def _now(ctx: Context) -> float:
    return ctx.clock.now()


def _namespace_of(target: Target) -> str:
    if target.served.rt.namespaced and not target.namespace:
        raise NotFound("the server could not find the requested resource")
    return target.namespace or ""


@dataclass(frozen=True, slots=True)
class View:
    """How a read is shown: as a Table (and with how much of each object), and server-side field terms."""

    table: bool
    include: str
    terms: tuple[query.FieldTerm, ...] = ()

    @classmethod
    def of(cls, request: Request) -> View:
        params = request.query_params
        terms = query.split_field_selector(params.get("fieldSelector", ""))[1]
        table = query.wants_table(request.headers.get("accept", ""))
        return cls(table, params.get("includeObject", "Metadata"), terms)

    def selects(self, obj: Object) -> bool:
        return all(t.matches(obj) for t in self.terms)


def _render_one(
    ctx: Context,
    request: Request,
    served: Served,
    obj: Object,
    status: int = 200,
    warnings: Sequence[str] = (),
    encoded: str | None = None,
) -> Response:
    """``obj`` as the client asked for it; ``encoded`` is its stored JSON, sent as it is when the object is
    stored as the version it is served as (the same JSON, without encoding it again)."""
    view = View.of(request)
    if view.table:
        table = render_table(served.rt, [to_wire(served, obj)], _now(ctx), include=view.include)
        response = json_response(table, status)
    elif encoded is not None and (obj.get("apiVersion"), obj.get("kind")) == (
        served.rt.api_version,
        served.rt.kind,
    ):
        response = Response(encoded, status, media_type="application/json")
    else:
        response = json_response(to_wire(served, obj), status)
    for message in warnings:
        response.headers.append("Warning", warning_header(message))
    return response


def warning_header(message: str) -> str:
    """RFC 7234 warn-code 299 with the text quoted, as the API server sends admission warnings."""
    escaped = message.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{escaped}"'


def list_body(served: Served, result: ObjectList) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": result.resource_version}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if result.remaining is not None:
        meta["remainingItemCount"] = result.remaining
    items = [to_wire(served, o) for o in result.items]
    return {
        "kind": f"{served.rt.kind}List",
        "apiVersion": served.rt.api_version,
        "metadata": meta,
        "items": items,
    }


async def get(ctx: Context, target: Target, request: Request) -> Response:
    if target.subresource == "log":
        return await pod_log(ctx, target, request)
    obj = await quick(ctx.store.get, target.served.storage, _namespace_of(target), target.name)
    return _render_one(ctx, request, target.served, obj)


async def list_or_watch(ctx: Context, target: Target, request: Request) -> Response:
    params = _params(request)
    options = query.list_options(params, target.namespace)
    view = View.of(request)
    if query.flag(params, "watch"):
        return await watch(ctx, target, request, options, view)
    result = await call(_list, ctx.store, target.served.storage, options)
    body = list_body(target.served, result)
    body["items"] = [o for o in body["items"] if view.selects(o)]
    if not view.table and len(body["items"]) > STREAMED_ITEMS:
        return StreamingResponse(list_chunks(body), media_type="application/json")
    if not view.table:
        return json_response(body)
    rt, meta = target.served.rt, body["metadata"]
    return json_response(render_table(rt, body["items"], _now(ctx), include=view.include, list_meta=meta))


async def watch(ctx: Context, target: Target, request: Request, options: ListOptions, view: View) -> Response:
    params = query.watch_params(_params(request))
    storage = target.served.storage
    watch_args: dict[str, Any] = {"bookmarks": params.bookmarks, "timeout": params.timeout}
    if isinstance(ctx.store, Engine):  # the events are only rendered: the committed objects, not copies
        watch_args["shared"] = True
    opened = await call(ctx.store.watch, storage, options, params.resource_version, **watch_args)
    lines = watch_lines(opened, partial(_event, ctx, target.served, view), ctx.watch_limiter)
    return DisconnectAwareStream(lines, media_type="application/json")


def _event(ctx: Context, served: Served, view: View, event: WatchEvent) -> dict[str, Any] | None:
    obj = to_wire(served, event.object)
    if event.type is not EventType.BOOKMARK:
        if not view.selects(obj):
            return None
        if view.table:
            obj = render_table(served.rt, [obj], _now(ctx), include=view.include)
    return {"type": event.type.value, "object": obj}


def _list(store: Store, rt: ResourceType, options: ListOptions) -> ObjectList:
    """The store's list; the stored objects themselves where the store lends them (the list is only
    rendered), not a copy of each."""
    return store.list_borrowed(rt, options) if isinstance(store, Engine) else store.list(rt, options)


def _require_namespace(ctx: Context, target: Target) -> None:
    if not target.served.rt.namespaced:
        return
    ns_type = ctx.registry.find("", "v1", "namespaces")
    assert ns_type is not None
    if not _exists(ctx.store, ns_type.storage, _namespace_of(target)):
        raise NotFound(
            f'namespaces "{target.namespace}" not found', kind="namespaces", name=target.namespace or ""
        )


def _exists(store: Store, rt: ResourceType, name: str) -> bool:
    """Whether the cluster-scoped ``rt`` object ``name`` exists, without copying it where the store can."""
    if isinstance(store, Engine):
        return store.exists(rt, "", name)
    try:
        store.get(rt, "", name)
    except NotFound:
        return False
    return True


def _create_in_namespace(ctx: Context, target: Target, obj: Object, dry_run: bool) -> Object:
    """One worker-thread hop for both the namespace check and the write (hops dominate a create's cost)."""
    _require_namespace(ctx, target)
    return ctx.store.create(target.served.storage, obj, dry_run=dry_run)


async def create(ctx: Context, target: Target, request: Request) -> Response:
    params = _params(request)
    dry_run = query.dry_run(params)
    obj = from_wire(target.served, target, await bodies.read(request))
    with collecting_warnings() as warnings, fieldvalidation.requested(params):
        created, encoded = await written(ctx, _create_in_namespace, ctx, target, obj, dry_run)
    return _render_one(ctx, request, target.served, created, 201, warnings, encoded)


async def update(ctx: Context, target: Target, request: Request) -> Response:
    params = _params(request)
    dry_run = query.dry_run(params)
    obj = from_wire(target.served, target, await bodies.read(request))
    save = ctx.store.update_status if target.subresource == "status" else ctx.store.update
    with collecting_warnings() as warnings, fieldvalidation.requested(params):
        updated, encoded = await written(ctx, save, target.served.storage, obj, dry_run=dry_run)
    return _render_one(ctx, request, target.served, updated, warnings=warnings, encoded=encoded)


def _apply_config(served: Served, target: Target, body: Any) -> Object:
    return from_wire(served, target, body)


async def patch(ctx: Context, target: Target, request: Request) -> Response:
    params = _params(request)
    dry_run = query.dry_run(params)
    kind = query.patch_type(request.headers.get("content-type", ""))
    body = await bodies.read(request, yaml_ok=kind == query.APPLY_PATCH)
    if body is None:
        raise BadRequest("the patch body must not be empty")
    if kind == query.APPLY_PATCH:
        body = _apply_config(target.served, target, body)
        await quick(_require_namespace, ctx, target)
    with collecting_warnings() as warnings, fieldvalidation.requested(params):
        patched, encoded = await _patch_now(ctx, target, body, kind, params, dry_run)
    return _render_one(ctx, request, target.served, patched, warnings=warnings, encoded=encoded)


async def _patch_now(
    ctx: Context, target: Target, body: Any, kind: str, params: dict[str, str], dry_run: bool
) -> tuple[Object, str | None]:
    return await written(
        ctx,
        ctx.store.patch,
        target.served.storage,
        _namespace_of(target),
        target.name,
        body,
        kind,
        subresource=target.subresource,
        field_manager=params.get("fieldManager", ""),
        force=query.flag(params, "force"),
        dry_run=dry_run,
    )


async def delete(ctx: Context, target: Target, request: Request) -> Response:
    body = query.delete_body(await bodies.read(request))
    params = _params(request)
    opts = query.delete_params(params, body)
    # a delete may cascade over thousands of dependents: a worker thread keeps the event loop serving
    gone = await call(
        ctx.store.delete,
        target.served.storage,
        _namespace_of(target),
        target.name,
        propagation=opts.propagation,
        preconditions=opts.preconditions,
        dry_run=opts.dry_run,
        grace_period=opts.grace_period,
    )
    return _render_one(ctx, request, target.served, gone)


async def delete_collection(ctx: Context, target: Target, request: Request) -> Response:
    params = _params(request)
    body = query.delete_body(await bodies.read(request))
    opts = query.delete_params(params, body)
    options = query.list_options(params, target.namespace)
    storage = target.served.storage
    listed = await call(ctx.store.list, storage, options)
    deleted = []
    for obj in listed.items:
        meta = obj.get("metadata", {})
        try:
            deleted.append(
                await call(
                    ctx.store.delete,
                    storage,
                    meta.get("namespace", ""),
                    meta["name"],
                    propagation=opts.propagation,
                    dry_run=opts.dry_run,
                    grace_period=opts.grace_period,
                )
            )
        except NotFound:
            continue
    return json_response(list_body(target.served, ObjectList(deleted, listed.resource_version)))


async def pod_log(ctx: Context, target: Target, request: Request) -> Response:
    params = _params(request)
    namespace = _namespace_of(target)
    pod = await quick(ctx.store.get, target.served.storage, namespace, target.name)
    container = logs.choose_container(pod, params.get("container", ""))
    previous = query.flag(params, "previous")
    path = logs.log_path(ctx.logs_dir, namespace, target.name, container, previous=previous)
    tail_lines = int(params["tailLines"]) if params.get("tailLines", "").isdigit() else None
    data, offset = await call(logs.read_log, path, tail_lines)
    if not query.flag(params, "follow"):
        return Response(data, media_type="text/plain")

    async def alive() -> bool:
        try:
            current = await quick(ctx.store.get, target.served.storage, namespace, target.name)
        except NotFound:
            return False
        return logs.pod_running(current)

    async def stream() -> Any:
        yield data
        async for chunk in logs.follow(path, offset, alive):
            yield chunk

    return DisconnectAwareStream(stream(), media_type="text/plain")


__all__ = ["Context", "create", "delete", "delete_collection", "get", "list_or_watch", "patch", "update"]
