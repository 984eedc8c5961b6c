"""``KubeStore``: the ``Store`` protocol over the Kubernetes HTTP API of any API server.

The same controllers, schedulers and CLI that run on the in-process store run against gangplane's embedded
API server or a real cluster through this class. Requests go through one pooled ``httpx2.Client`` (safe to
share between threads); the wire mapping is pure and lives in ``kubeapi``.

Contract differences from the in-process stores, all imposed by HTTP:
- A watch whose server ends the stream (its ``timeoutSeconds`` passed, the connection dropped) ends the
  iterator, as a store watch ending on timeout does; callers resume from the last ``resource_version``.
- A ``410 Gone`` the server reports *inside* the stream (real API servers do, for a too-old version) is
  raised from the iterator rather than from ``watch``.
- ``timeout`` travels as whole seconds (rounded up).
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import httpx2

from gangplane.client import kubeapi
from gangplane.client.kubeconfig import DEFAULT_TIMEOUT, Connection, load_connection
from gangplane.errors import ApiError, GangplaneError, NotFound
from gangplane.store.base import (
    ListOptions,
    Object,
    ObjectList,
    Propagation,
    ResourceType,
    Watch,
    WatchEvent,
)
from gangplane.store.catalog import PODS

_log = logging.getLogger(__name__)
T = TypeVar("T")
EVERYTHING = ListOptions()
_JSON = "application/json"
# A watch without a timeout may stay quiet for as long as nothing changes; one with a timeout gets this
# much slack over it before the client gives up on the server.
_WATCH_SLACK = 30.0


class Unreachable(GangplaneError):
    """The API server could not be reached (connection refused, TLS failure, timeout)."""


class _Stream:
    """One streaming response (a watch, a followed log); ``close`` is safe from any thread and wakes a
    reader blocked on the socket."""

    def __init__(self, response: httpx2.Response, on_close: Callable[[_Stream], None]) -> None:
        self._response = response
        self._on_close = on_close
        self._lock = threading.Lock()
        self._closed = False
        self._reading = False

    def events(self, rt: ResourceType) -> Iterator[WatchEvent]:
        for line in self._items(self._response.iter_lines):
            if line.strip():
                yield kubeapi.watch_event(rt, line)

    def chunks(self) -> Iterator[bytes]:
        return self._items(self._response.iter_bytes)

    def _items(self, source: Callable[[], Iterator[T]]) -> Iterator[T]:
        with self._lock:
            if self._closed:
                return
            self._reading = True
        try:
            yield from source()
        except (httpx2.HTTPError, httpx2.StreamError, OSError) as exc:
            if not self._closed:
                _log.debug("stream %s ended: %s", self._response.url.path, exc)
        finally:
            self._finish()

    def _finish(self) -> None:
        with self._lock:
            self._reading = False
            self._closed = True
        self._response.close()
        self._on_close(self)

    def close(self) -> None:
        with self._lock:
            if self._closed and not self._reading:
                return
            self._closed = True
            reading = self._reading
        self._shutdown_socket()
        if not reading:
            self._response.close()
            self._on_close(self)

    def _shutdown_socket(self) -> None:
        # Closing a socket does not wake a thread blocked in recv(); shutting it down does. The plain
        # ``socket.socket.shutdown`` leaves a TLS socket's state alone for the reader to unwind.
        stream = self._response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)


class KubeStore:
    """A ``Store`` backed by a Kubernetes API server. Thread-safe; ``close`` ends every open watch and log
    stream."""

    def __init__(self, http: httpx2.Client, *, namespace: str = "default") -> None:
        self._http = http
        self.namespace = namespace  # the kubeconfig context's namespace, for callers that need a default
        self._lock = threading.Lock()
        self._streams: set[_Stream] = set()
        self._discovered: dict[str, frozenset[str]] = {}

    @classmethod
    def from_kubeconfig(
        cls,
        path: str | Path | None = None,
        context: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx2.BaseTransport | None = None,
    ) -> KubeStore:
        """A store for ``context`` of the kubeconfig at ``path`` (lightkube's defaults when None)."""
        return cls.from_connection(load_connection(path, context, timeout=timeout), transport=transport)

    @classmethod
    def from_connection(cls, conn: Connection, *, transport: httpx2.BaseTransport | None = None) -> KubeStore:
        return cls(conn.client(transport), namespace=conn.namespace)

    @property
    def server(self) -> str:
        return str(self._http.base_url).rstrip("/")

    def served(self, rt: ResourceType) -> bool:
        """Whether the server serves ``rt`` (discovery of its group/version, cached): a controller must not
        start an informer on a kind whose CRD is not installed, as it would never sync."""
        if rt.api_version not in self._discovered:
            path = f"/apis/{rt.api_version}" if rt.group else f"/api/{rt.version}"
            try:
                listed = self._json("GET", path).get("resources") or []
            except NotFound:
                listed = []
            self._discovered[rt.api_version] = frozenset(str(r.get("name")) for r in listed)
        return rt.plural in self._discovered[rt.api_version]

    # ------------------------------------------------------------ transport

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx2.TransportError as exc:
            raise Unreachable(f"cannot reach the API server at {self.server}: {exc}") from None
        if response.status_code >= 400:
            raise _error(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._request(method, path, **kwargs).json()

    def _send_json(self, method: str, path: str, body: Any, **kwargs: Any) -> Any:
        content = json.dumps(body, separators=(",", ":")).encode()
        headers = {"Content-Type": _JSON, **kwargs.pop("headers", {})}
        return self._json(method, path, content=content, headers=headers, **kwargs)

    # ------------------------------------------------------------ Store

    def get(self, rt: ResourceType, namespace: str, name: str) -> Object:
        return kubeapi.with_type(rt, self._json("GET", kubeapi.object_path(rt, namespace, name)))

    def list(self, rt: ResourceType, options: ListOptions = EVERYTHING) -> ObjectList:
        path = kubeapi.collection_path(rt, options.namespace)
        return kubeapi.object_list(rt, self._json("GET", path, params=kubeapi.list_params(options)))

    def list_all(self, rt: ResourceType, options: ListOptions = EVERYTHING, page: int = 500) -> ObjectList:
        """Every object ``list`` matches, fetched in pages of ``page`` (``limit``/``continue`` are ignored)."""
        items: list[Object] = []
        token, version = "", ""
        while True:
            opts = ListOptions(options.namespace, options.label_selector, options.field_selector, page, token)
            result = self.list(rt, opts)
            items += result.items
            version = version or result.resource_version
            token = result.continue_token
            if not token:
                return ObjectList(items, version)

    def create(self, rt: ResourceType, obj: Object, *, dry_run: bool = False) -> Object:
        path = kubeapi.collection_path(rt, kubeapi.namespace_for(rt, obj))
        sent = self._send_json("POST", path, kubeapi.with_type(rt, obj), params=_dry(dry_run))
        return kubeapi.with_type(rt, sent)

    def update(self, rt: ResourceType, obj: Object, *, dry_run: bool = False) -> Object:
        return self._put(rt, obj, "", dry_run)

    def update_status(self, rt: ResourceType, obj: Object, *, dry_run: bool = False) -> Object:
        return self._put(rt, obj, "status", dry_run)

    def bind_pod(self, namespace: str, name: str, binding: Mapping[str, Any]) -> Any:
        """POST a ``v1/Binding`` to ``pods/{name}/binding``: one write sets ``nodeName`` and ``PodScheduled``
        (409 when the pod is bound already). Returns the server's ``Status``."""
        return self._send_json("POST", kubeapi.object_path(PODS, namespace, name, "binding"), binding)

    def _put(self, rt: ResourceType, obj: Object, subresource: str, dry_run: bool) -> Object:
        path = kubeapi.object_path(rt, kubeapi.namespace_for(rt, obj), kubeapi.name_for(rt, obj), subresource)
        return kubeapi.with_type(
            rt, self._send_json("PUT", path, kubeapi.with_type(rt, obj), params=_dry(dry_run))
        )

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        patch: Any,
        patch_type: str,
        *,
        subresource: str = "",
        field_manager: str = "",
        force: bool = False,
        dry_run: bool = False,
    ) -> Object:
        params = {"fieldManager": field_manager} if field_manager else {}
        if force:
            params["force"] = "true"
        params.update(_dry(dry_run))
        headers = {"Content-Type": kubeapi.patch_media_type(patch_type)}
        path = kubeapi.object_path(rt, namespace, name, subresource)
        body = kubeapi.patch_body(patch)
        return kubeapi.with_type(rt, self._json("PATCH", path, content=body, headers=headers, params=params))

    def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        *,
        propagation: Propagation = Propagation.BACKGROUND,
        preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
        grace_period: int | None = None,
    ) -> Object:
        body = kubeapi.delete_body(propagation.value, preconditions, grace_period)
        gone = self._send_json("DELETE", kubeapi.object_path(rt, namespace, name), body, params=_dry(dry_run))
        return kubeapi.with_type(rt, gone)

    def delete_collection(
        self,
        rt: ResourceType,
        options: ListOptions = EVERYTHING,
        *,
        propagation: Propagation = Propagation.BACKGROUND,
    ) -> ObjectList:
        params = kubeapi.list_params(
            ListOptions(options.namespace, options.label_selector, options.field_selector)
        )
        path = kubeapi.collection_path(rt, options.namespace)
        body = kubeapi.delete_body(propagation.value, None)
        return kubeapi.object_list(rt, self._send_json("DELETE", path, body, params=params))

    def watch(
        self,
        rt: ResourceType,
        options: ListOptions = EVERYTHING,
        resource_version: str = "",
        *,
        bookmarks: bool = False,
        timeout: float | None = None,
    ) -> Watch:
        params = kubeapi.watch_params(options, resource_version, bookmarks, timeout)
        return self._open_watch(rt, options.namespace, params, {"Accept": _JSON}, timeout)

    def __enter__(self) -> KubeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.close()
        self._http.close()

    # ------------------------------------------------------------ beyond the Store protocol

    def table(self, rt: ResourceType, options: ListOptions = EVERYTHING, name: str = "") -> Object:
        """The server-rendered ``meta.k8s.io/v1`` Table of one object (``name``) or of a list."""
        headers = {"Accept": kubeapi.TABLE_ACCEPT}
        if name:
            path = kubeapi.object_path(rt, options.namespace or "", name)
            return dict(self._json("GET", path, headers=headers))
        params = kubeapi.list_params(options)
        return dict(
            self._json("GET", kubeapi.collection_path(rt, options.namespace), params=params, headers=headers)
        )

    def watch_table(
        self,
        rt: ResourceType,
        options: ListOptions = EVERYTHING,
        resource_version: str = "",
        *,
        timeout: float | None = None,
    ) -> Watch:
        """A watch whose event objects are one-row Tables (``kubectl get -w``); bookmarks are not asked for."""
        params = kubeapi.watch_params(options, resource_version, False, timeout)
        return self._open_watch(rt, options.namespace, params, {"Accept": kubeapi.TABLE_ACCEPT}, timeout)

    def pod_log(
        self,
        namespace: str,
        name: str,
        *,
        container: str = "",
        follow: bool = False,
        tail_lines: int | None = None,
        previous: bool = False,
    ) -> Iterator[bytes]:
        """The pod's log as it arrives: everything so far, then (``follow``) new output until the pod ends;
        ``previous``: the last terminated instance's log. Errors (no such pod, ambiguous container, no
        previous instance) raise here, before iteration."""
        params = {"container": container} if container else {}
        if follow:
            params["follow"] = "true"
        if previous:
            params["previous"] = "true"
        if tail_lines is not None:
            params["tailLines"] = str(tail_lines)
        response = self._stream("GET", kubeapi.object_path(PODS, namespace, name, "log"), params, {}, None)
        return self._track(response).chunks()

    def _stream(
        self, method: str, path: str, params: dict[str, str], headers: dict[str, str], timeout: float | None
    ) -> httpx2.Response:
        read = None if timeout is None else timeout + _WATCH_SLACK
        timeouts = httpx2.Timeout(DEFAULT_TIMEOUT, read=read)
        request = self._http.build_request(method, path, params=params, headers=headers, timeout=timeouts)
        try:
            response = self._http.send(request, stream=True)
        except httpx2.TransportError as exc:
            raise Unreachable(f"cannot reach the API server at {self.server}: {exc}") from None
        if response.status_code >= 400:
            response.read()
            response.close()
            raise _error(response)
        return response

    def _open_watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        params: dict[str, str],
        headers: dict[str, str],
        timeout: float | None,
    ) -> Watch:
        response = self._stream("GET", kubeapi.collection_path(rt, namespace), params, headers, timeout)
        stream = self._track(response)
        return Watch(stream.events(rt), stream.close)

    def _track(self, response: httpx2.Response) -> _Stream:
        stream = _Stream(response, self._forget)
        with self._lock:
            self._streams.add(stream)
        return stream

    def _forget(self, stream: _Stream) -> None:
        with self._lock:
            self._streams.discard(stream)


def _dry(dry_run: bool) -> dict[str, str]:
    return {"dryRun": "All"} if dry_run else {}


def _error(response: httpx2.Response) -> ApiError:
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    return kubeapi.error_from_status(response.status_code, body)


__all__ = ["KubeStore", "Unreachable"]
