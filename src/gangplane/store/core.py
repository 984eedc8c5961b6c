"""Write semantics shared by every backend: create, update, status, patch, apply, delete and the garbage
collector's cascade (see ``gc.py``). Backends differ only in the ``Journal`` they hand to the engine.

Each public method takes the engine lock once and returns a copy; a cascade (GC, finalizer release) runs
inside the same call, each step its own committed change with its own resourceVersion.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gangplane.errors import AlreadyExists, CauseType, Conflict, NotFound
from gangplane.store import directives, gc, validation
from gangplane.store.apply import ApplyRequest, apply_config, record_update
from gangplane.store.base import (
    EventType,
    ListOptions,
    Object,
    ObjectList,
    Operation,
    Propagation,
    ResourceType,
)
from gangplane.store.collector import Collector
from gangplane.store.engine import EVERYTHING
from gangplane.store.journal import Journal
from gangplane.store.objects import (
    check_name,
    check_precondition,
    check_scope,
    copy_object,
    group_resource,
    invalid,
    key_of,
    merge_for_update,
    meta,
    name_suffix,
    prepare_create,
    replace_status,
)
from gangplane.store.patch import STRATEGIC_MERGE_PATCH, decode, is_apply, patcher
from gangplane.store.selectors import build_filter


class ObjectStore(Collector):
    """Implements ``base.Store`` over an ``Engine``; deletion and the garbage collector are ``Collector``'s.
    Opening a store runs the collector's startup ``sweep``."""

    def __init__(self, journal: Journal, **options: Any) -> None:
        super().__init__(journal, **options)
        self._init_collector()
        self.sweep()

    @contextlib.contextmanager
    def _writing(self, dry_run: bool) -> Iterator[None]:
        """Hold the lock for one write; with ``dry_run`` every step (admission, defaulting, conflicts, GC)
        runs but ``_commit`` stores nothing (the API's ``dryRun=All``)."""
        with self._write_call():
            self._dry_run = dry_run
            try:
                yield
            finally:
                self._dry_run = False
                self._gone.clear()

    def create(self, rt: ResourceType, obj: Object, *, dry_run: bool = False) -> Object:
        with self._writing(dry_run):
            stored = self._create(rt, obj, given=self._given())
        return self._result(stored)

    def _create(self, rt: ResourceType, obj: Object, *, given: bool = False) -> Object:
        """``given``: ``obj`` is this call's own (``deferred(borrow=True)``), so it is not copied first."""
        validation.check_types(rt, obj)
        m = meta(obj)
        namespace = str(m.get("namespace") or "")
        check_scope(rt, namespace, str(m.get("name", "")))
        name = str(m.get("name") or self._generate_name(rt, namespace, str(m.get("generateName") or "")))
        check_name(rt, name)
        named = {**obj, "metadata": {**m, "name": name}}
        new = prepare_create(rt, named, uid=self._new_uid(), now=self._now(), copy=not given)
        new = self._admit(rt, Operation.CREATE, new, None, owned=True)  # a copy, or given to this call
        if self._find(rt, *key_of(new)) is not None:
            raise AlreadyExists(f'{group_resource(rt)} "{name}" already exists', kind=rt.kind, name=name)
        stored = self._commit(rt, EventType.ADDED, new, None)
        self._collect_if_ownerless(rt, stored)
        return stored

    def _collect_if_ownerless(self, rt: ResourceType, obj: Object) -> None:
        """Kubernetes' garbage collector deletes an object whose every owner is gone, also one created after
        its owner was deleted (a controller acting on a stale read). The create still succeeds: watchers see
        ADDED, then DELETED."""
        owners = gc.owner_uids(obj)
        if owners and not any(u in self._uids for u in owners):
            self._delete(rt, obj, Propagation.BACKGROUND)

    def _generate_name(self, rt: ResourceType, namespace: str, prefix: str) -> str:
        if not prefix:
            return ""
        for _ in range(16):
            name = prefix + name_suffix(self._rng.choice)
            if self._find(rt, namespace, name) is None:
                return name
        raise AlreadyExists(f"no free name for generateName {prefix!r}", kind=rt.kind)

    def update(self, rt: ResourceType, obj: Object, *, dry_run: bool = False) -> Object:
        namespace, name = key_of(obj)
        check_scope(rt, namespace, name)
        validation.check_types(rt, obj)
        with self._writing(dry_run):
            old = self._require(rt, namespace, name)
            check_precondition(rt, old, meta(obj).get("resourceVersion"))
            stored = self._save(rt, merge_for_update(rt, old, obj), old)
        return self._result(stored)

    def update_status(self, rt: ResourceType, obj: Object, *, dry_run: bool = False) -> Object:
        namespace, name = key_of(obj)
        self._require_status(rt, name)
        with self._writing(dry_run):
            old = self._require(rt, namespace, name)
            check_precondition(rt, old, meta(obj).get("resourceVersion"))
            stored = self._save(rt, replace_status(old, obj.get("status")), old)
        return self._result(stored)

    def _require_status(self, rt: ResourceType, name: str) -> None:
        if not rt.has_status:
            raise NotFound(f"{group_resource(rt)} has no status subresource", kind=rt.kind, name=name)

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
        if subresource not in ("", "status"):
            raise NotFound(f"unknown subresource {subresource!r}", kind=rt.kind, name=name)
        if subresource:
            self._require_status(rt, name)
        req = ApplyRequest(field_manager, force, rt.has_status, subresource, self._now())
        with self._writing(dry_run):
            if is_apply(patch_type):
                stored = self._apply(rt, namespace, name, decode(patch, patch_type), req)
            else:
                fn = patcher(patch, patch_type)
                if patch_type in (STRATEGIC_MERGE_PATCH, "strategic"):
                    directives.check(decode(patch, patch_type))
                stored = self._patch(rt, namespace, name, fn, req)
        return self._result(stored)

    def _patch(
        self, rt: ResourceType, namespace: str, name: str, fn: Callable[[Any], Any], req: ApplyRequest
    ) -> Object:
        old = self._require(rt, namespace, name)
        patched = fn(old)
        if isinstance(patched, dict):
            validation.check_types(rt, patched)
        if not isinstance(patched, dict) or key_of(patched) != key_of(old):
            raise invalid(
                rt, name, "metadata.name", CauseType.INVALID, "patch must not change name or namespace"
            )
        check_precondition(rt, old, meta(patched).get("resourceVersion"))
        new = self._updated(rt, old, patched, req.subresource)
        if req.manager:
            new = record_update(old, new, req)
        return self._save(rt, new, old)

    def _updated(self, rt: ResourceType, old: Object, wanted: Object, subresource: str) -> Object:
        if subresource != "status":
            return merge_for_update(rt, old, wanted)
        new = replace_status(old, wanted.get("status"))
        if "managedFields" in meta(wanted):
            new["metadata"]["managedFields"] = meta(wanted)["managedFields"]
        return new

    def _apply(self, rt: ResourceType, namespace: str, name: str, applied: Any, req: ApplyRequest) -> Object:
        if not isinstance(applied, dict):
            raise invalid(rt, name, "body", CauseType.INVALID, "an apply patch must be an object")
        if not req.manager:
            raise invalid(rt, name, "fieldManager", CauseType.REQUIRED, "is required for apply patch")
        if (meta(applied).get("name"), meta(applied).get("namespace") or "") != (name, namespace):
            raise invalid(
                rt, name, "metadata.name", CauseType.INVALID, "must match the request's name/namespace"
            )
        validation.check_types(rt, applied)
        old = self._find(rt, namespace, name)
        if old is None:
            if req.subresource:
                raise NotFound(f'{group_resource(rt)} "{name}" not found', kind=rt.kind, name=name)
            return self._create(rt, apply_config(None, applied, req))
        check_precondition(rt, old, meta(applied).get("resourceVersion"))
        return self._save(rt, self._updated(rt, old, apply_config(old, applied, req), req.subresource), old)

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
        with self._writing(dry_run):
            old = self._require(rt, namespace, name)
            self._check_preconditions(rt, old, preconditions or {})
            self._admit(rt, Operation.DELETE, old, old)
            stored = self._delete(rt, old, propagation, grace_period)
        return self._result(stored)

    def _check_preconditions(self, rt: ResourceType, old: Object, pre: Mapping[str, str]) -> None:
        if pre.get("uid") and pre["uid"] != meta(old).get("uid"):
            name = meta(old).get("name", "")
            raise Conflict(f"Precondition failed: UID in precondition: {pre['uid']}", kind=rt.kind, name=name)
        check_precondition(rt, old, pre.get("resourceVersion"))

    def delete_collection(
        self,
        rt: ResourceType,
        options: ListOptions = EVERYTHING,
        *,
        propagation: Propagation = Propagation.BACKGROUND,
    ) -> ObjectList:
        selection = build_filter(options.namespace, options.label_selector, options.field_selector)
        with self._write_call():
            done = []
            for key, _ in self._select(rt, selection):
                current = self._find(rt, *key)
                if current is not None:
                    self._admit(rt, Operation.DELETE, current, current)
                    done.append(self._delete(rt, current, propagation))
            rv = self._rv
        return ObjectList([copy_object(o) for o in done], str(rv))
