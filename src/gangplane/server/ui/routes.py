"""The dashboard's routes: read the store, call a pure view function, render a template. Nothing writes.

Each view is a full page (``/ui/<view>``) and the same content alone (``/ui/<view>/fragment``), which htmx
fetches again when the page's event stream (``/ui/events``, live.py) says something changed. Kueue's pending
order comes from the visibility API served by the same app, asked in-process (inprocess.py), so the page
shows exactly what ``kubectl get --raw .../pendingworkloads`` would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from gangplane.errors import NotFound
from gangplane.server import logs
from gangplane.server.handlers import Context, call
from gangplane.server.ui import (
    cluster_view,
    detail_view,
    facts,
    gang_queues_view,
    jobs_view,
    kueue_view,
    timeline_view,
)
from gangplane.server.ui.inprocess import pending_by_cluster_queue
from gangplane.server.ui.live import ChangeStream, kinds
from gangplane.server.ui.recorder import EvictionRecorder
from gangplane.server.ui.session import PREFIX, SECURITY_HEADERS, logout_cookie
from gangplane.store import catalog
from gangplane.store.base import ListOptions, Object, ResourceType, Store

HERE = Path(__file__).parent
PAGE_SIZE = 100
LOG_LINES = 200
VIEWS = ("cluster", "jobs", "queues", "timeline")
WATCHES = {
    "cluster": "nodes,pods",
    "jobs": "trainjobs,pods,jobsets",
    "job": "trainjobs,pods,jobs,jobsets,events",
    "queues": "clusterqueues,cohorts,localqueues,workloads,volcanoqueues,kaiqueues",
    "timeline": "pods,workloads,events",
}
_HEADERS = {k.decode(): v.decode() for k, v in SECURITY_HEADERS}

templates = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True, undefined=jinja2.StrictUndefined
)


def _items(store: Store, rt: ResourceType, namespace: str | None = None, selector: str = "") -> list[Object]:
    return store.list(rt, ListOptions(namespace=namespace, label_selector=selector)).items


def _int(request: Request, name: str) -> int:
    try:
        return int(request.query_params.get(name, "0"))
    except ValueError:
        return 0


class Dashboard:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.evictions = EvictionRecorder(ctx.store, ctx.clock)

    def _now(self) -> float:
        return self.ctx.clock.now()

    # ------------------------------------------------------------ view models (worker threads)

    def cluster(self, request: Request) -> dict[str, Any]:
        store = self.ctx.store
        rows = cluster_view.node_rows(_items(store, catalog.NODES), _items(store, catalog.PODS))
        shown, pages = facts.page(rows, _int(request, "page"), PAGE_SIZE)
        return {
            "nodes": shown,
            "totals": cluster_view.totals(rows),
            "count": len(rows),
            "pages": pages,
            "page_no": min(_int(request, "page"), pages - 1),
        }

    def jobs(self, request: Request) -> dict[str, Any]:
        store = self.ctx.store
        rows = jobs_view.job_rows(
            _items(store, catalog.TRAINJOBS),
            _items(store, catalog.PODS),
            _items(store, catalog.JOBSETS),
            self._now(),
        )
        state, text = request.query_params.get("state", ""), request.query_params.get("q", "")
        chosen = jobs_view.filter_rows(rows, state, text)
        shown, pages = facts.page(chosen, _int(request, "page"), PAGE_SIZE)
        return {
            "jobs": shown,
            "counts": jobs_view.state_counts(rows),
            "total": len(rows),
            "matching": len(chosen),
            "state": state,
            "q": text,
            "pages": pages,
            "page_no": min(_int(request, "page"), pages - 1),
        }

    def job(self, request: Request) -> dict[str, Any]:
        store, ns, name = self.ctx.store, request.path_params["namespace"], request.path_params["name"]
        trainjob = store.get(catalog.TRAINJOBS, ns, name)
        jobset = _get(store, catalog.JOBSETS, ns, name)
        selector = f"jobset.sigs.k8s.io/jobset-name={name}"
        detail = detail_view.job_detail(
            trainjob,
            jobset,
            _items(store, catalog.JOBS, ns, selector),
            _items(store, catalog.PODS, ns, selector),
            _items(store, catalog.EVENTS, ns),
            self._now(),
        )
        return {"d": detail, "namespace": ns}

    def queues(self, request: Request, pending: Mapping[str, list[dict[str, Any]]] | None) -> dict[str, Any]:
        store = self.ctx.store
        rows = kueue_view.queue_rows(
            _items(store, catalog.CLUSTER_QUEUES),
            _items(store, catalog.COHORTS),
            _items(store, catalog.LOCAL_QUEUES),
            _items(store, catalog.WORKLOADS),
            pending,
        )
        return {
            "kueue": rows,
            "volcano": gang_queues_view.volcano_rows(_items(store, catalog.VOLCANO_QUEUES)),
            "kai": gang_queues_view.kai_rows(_items(store, catalog.KAI_QUEUES), _items(store, catalog.NODES)),
        }

    def timeline(self, request: Request) -> dict[str, Any]:
        store = self.ctx.store
        rows = timeline_view.timeline_rows(
            _items(store, catalog.PODS),
            _items(store, catalog.WORKLOADS),
            _items(store, catalog.EVENTS),
            self._now(),
            recorded=self.evictions.rows(),
        )
        kind = request.query_params.get("kind", "")
        shown = [r for r in rows if not kind or r.kind == kind]
        width, columns = timeline_view.histogram(shown, self._now())
        return {
            "rows": shown,
            "counts": timeline_view.kind_counts(rows),
            "kind": kind,
            "width": width,
            "columns": columns,
            "peak": max((c.total for c in columns), default=0) or 1,
        }

    # ------------------------------------------------------------ handlers

    async def _model(self, view: str, request: Request) -> dict[str, Any]:
        self.evictions.start()  # from the first look on: evictions leave nothing in the store to read later
        if view == "queues":
            names = [
                facts.meta(q).get("name") for q in await call(_items, self.ctx.store, catalog.CLUSTER_QUEUES)
            ]
            pending = await pending_by_cluster_queue(request, [str(n) for n in names])
            return await call(self.queues, request, pending)
        builder: Callable[[Request], dict[str, Any]] = getattr(self, view)
        return await call(builder, request)

    async def page(self, request: Request) -> Response:
        view = request.path_params.get("view", "jobs")
        if view not in VIEWS:
            raise NotFound(f"no dashboard view {view!r}")
        return self._render(f"{view}.html", view, request, await self._model(view, request))

    async def fragment(self, request: Request) -> Response:
        view = request.path_params["view"]
        if view not in VIEWS:
            raise NotFound(f"no dashboard view {view!r}")
        return self._render(f"{view}_body.html", view, request, await self._model(view, request))

    async def job_page(self, request: Request) -> Response:
        return self._render("job.html", "job", request, await call(self.job, request))

    async def job_fragment(self, request: Request) -> Response:
        return self._render("job_body.html", "job", request, await call(self.job, request))

    def _render(self, template: str, view: str, request: Request, model: dict[str, Any]) -> Response:
        query = request.url.query
        html = templates.get_template(template).render(
            view=view,
            watch=WATCHES[view],
            query=f"?{query}" if query else "",
            path=request.url.path,
            shown=cluster_view.show,
            **model,
        )
        return HTMLResponse(html, headers=_HEADERS)

    async def pod_log(self, request: Request) -> Response:
        ns, name = request.path_params["namespace"], request.path_params["pod"]
        pod = await call(self.ctx.store.get, catalog.PODS, ns, name)
        container = logs.choose_container(pod, request.query_params.get("container", ""))
        path = logs.log_path(self.ctx.logs_dir, ns, name, container)
        data, _ = await call(logs.read_log, path, LOG_LINES)
        return PlainTextResponse(data.decode(errors="replace") or "(no output yet)", headers=_HEADERS)

    async def log_panel(self, request: Request) -> Response:
        ns, name = request.path_params["namespace"], request.path_params["pod"]
        html = templates.get_template("log_panel.html").render(
            namespace=ns, pod=name, container=request.query_params.get("container", "")
        )
        return HTMLResponse(html, headers=_HEADERS)

    async def events(self, request: Request) -> Response:
        types = kinds(request.query_params.get("watch", ""))
        return ChangeStream(self.ctx.store, types, self.ctx.watch_limiter, SECURITY_HEADERS)  # type: ignore[return-value]


def _get(store: Store, rt: ResourceType, namespace: str, name: str) -> Object | None:
    try:
        return store.get(rt, namespace, name)
    except NotFound:
        return None


async def _home(request: Request) -> Response:
    return RedirectResponse(f"{PREFIX}/jobs", status_code=303)


async def _logout(request: Request) -> Response:
    response = RedirectResponse(f"{PREFIX}/login", status_code=303)
    response.headers.append("set-cookie", logout_cookie())
    return response


def ui_routes(ctx: Context) -> list[BaseRoute]:
    """Routes under ``/ui``; ``session.DashboardLogin`` must sit in front of the app that serves them."""
    ui = Dashboard(ctx)
    job = f"{PREFIX}/jobs/{{namespace}}/{{name}}"
    pod = f"{PREFIX}/pods/{{namespace}}/{{pod}}"
    return [
        Route(PREFIX, _home, methods=["GET"]),
        Route(f"{PREFIX}/", _home, methods=["GET"]),
        Route(f"{PREFIX}/login", _home, methods=["GET"]),
        Route(f"{PREFIX}/logout", _logout, methods=["GET", "POST"]),
        Route(f"{PREFIX}/events", ui.events, methods=["GET"]),
        Mount(f"{PREFIX}/static", StaticFiles(directory=HERE / "static"), name="ui-static"),
        Route(job, ui.job_page, methods=["GET"]),
        Route(f"{job}/fragment", ui.job_fragment, methods=["GET"]),
        Route(f"{pod}/log", ui.pod_log, methods=["GET"]),
        Route(f"{pod}/logpanel", ui.log_panel, methods=["GET"]),
        Route(f"{PREFIX}/{{view}}", ui.page, methods=["GET"]),
        Route(f"{PREFIX}/{{view}}/fragment", ui.fragment, methods=["GET"]),
    ]


__all__ = ["PAGE_SIZE", "VIEWS", "Dashboard", "templates", "ui_routes"]
