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
from gangplane.store import gc, validation
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
from gangplane.store.engine import EVERYTHING, Engine, group_resource
from gangplane.store.objects import (
    check_name,
    check_precondition,
    check_scope,
    copy_object,
    invalid,
    key_of,
    merge_for_update,
    meta,
    name_suffix,
    prepare_create,
    replace_status,
    same_content,
)
from gangplane.store.patch import decode, is_apply, patcher
from gangplane.store.selectors import build_filter


class ObjectStore(Engine):
    """Implements ``base.Store`` over an ``Engine``."""

    @contextlib.contextmanager
    def _writing(self, dry_run: bool) -> Iterator[None]:
        """Hold the lock for one write; with ``dry_run`` every step (admission, defaulting, conflicts, GC)
        runs but ``_commit`` stores nothing (the API's ``dryRun=All``)."""
        with self._lock:
            self._dry_run = dry_run
            try:
                yield
            finally:
                self._dry_run = False

    def create(self, rt: ResourceType, obj: Object, *, dry_run: bool = False) -> Object:
        with self._writing(dry_run):
            stored = self._create(rt, obj)
        return copy_object(stored)

    def _create(self, rt: ResourceType, obj: Object) -> Object:
        validation.check_types(rt, obj)
        m = meta(obj)
        namespace = str(m.get("namespace") or "")
        check_scope(rt, namespace, str(m.get("name", "")))
        name = str(m.get("name") or self._generate_name(rt, namespace, str(m.get("generateName") or "")))
        check_name(rt, name)
        new = prepare_create(
            rt, {**obj, "metadata": {**m, "name": name}}, uid=self._new_uid(), now=self._now()
        )
        new = self._admit(rt, Operation.CREATE, new, None)
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
        return copy_object(stored)

    def update_status(self, rt: ResourceType, obj: Object, *, dry_run: bool = False) -> Object:
        namespace, name = key_of(obj)
        self._require_status(rt, name)
        with self._writing(dry_run):
            old = self._require(rt, namespace, name)
            check_precondition(rt, old, meta(obj).get("resourceVersion"))
            stored = self._save(rt, replace_status(old, obj.get("status")), old)
        return copy_object(stored)

    def _require_status(self, rt: ResourceType, name: str) -> None:
        if not rt.has_status:
            raise NotFound(f"{group_resource(rt)} has no status subresource", kind=rt.kind, name=name)

    def _save(self, rt: ResourceType, new: Object, old: Object, *, admit: bool = True) -> Object:
        """Store an update; an update that leaves a deleting object without finalizers deletes it."""
        if admit:
            new = self._admit(rt, Operation.UPDATE, new, old)
        if gc.deleting(new) and not gc.finalizers(new):
            return self._remove(rt, new, old)
        if same_content(old, new):
            return old
        return self._commit(rt, EventType.MODIFIED, new, old)

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
                stored = self._patch(rt, namespace, name, patcher(patch, patch_type), req)
        return copy_object(stored)

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
    ) -> Object:
        with self._writing(dry_run):
            old = self._require(rt, namespace, name)
            self._check_preconditions(rt, old, preconditions or {})
            self._admit(rt, Operation.DELETE, old, old)
            stored = self._delete(rt, old, propagation)
        return copy_object(stored)

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
        with self._lock:
            done = []
            for key, _ in self._select(rt, selection):
                current = self._find(rt, *key)
                if current is not None:
                    self._admit(rt, Operation.DELETE, current, current)
                    done.append(self._delete(rt, current, propagation))
            rv = self._rv
        return ObjectList([copy_object(o) for o in done], str(rv))

    def _delete(self, rt: ResourceType, obj: Object, propagation: Propagation) -> Object:
        if gc.deleting(obj):
            return obj
        uid = str(meta(obj)["uid"])
        if propagation is Propagation.ORPHAN:
            self._orphan(uid)
        foreground = propagation is Propagation.FOREGROUND and uid in self._dependents
        if not gc.finalizers(obj) and not foreground:
            return self._remove(rt, obj, obj)
        marked = self._commit(
            rt, EventType.MODIFIED, gc.mark_deleting(obj, self._now(), foreground=foreground), obj
        )
        if foreground:
            for dep_rt, dep in self._dependents_of(uid):
                current = self._find(dep_rt, *key_of(dep))
                if current is not None and uid in gc.owner_uids(current):
                    self._delete(dep_rt, current, Propagation.FOREGROUND)
            self._release(uid)
        found = self._lookup_uid(uid)
        return marked if found is None else found[1]

    def _orphan(self, owner_uid: str) -> None:
        for rt, dep in self._dependents_of(owner_uid):
            self._save(rt, gc.without_owner(dep, owner_uid), dep, admit=False)

    def _remove(self, rt: ResourceType, final: Object, old: Object) -> Object:
        """Delete from storage, then collect dependents and release foreground-deleting owners."""
        gone = self._commit(rt, EventType.DELETED, final, old)
        uid = str(meta(old)["uid"])
        for dep_rt, dep in self._dependents_of(uid):
            self._collect(dep_rt, dep, uid)
        for owner in sorted(gc.owner_uids(old)):
            self._release(owner)
        return gone

    def _collect(self, rt: ResourceType, dep: Object, owner_uid: str) -> None:
        current = self._find(rt, *key_of(dep))
        if current is None or owner_uid not in gc.owner_uids(current):
            return
        if any(u != owner_uid and u in self._uids for u in gc.owner_uids(current)):
            self._save(rt, gc.without_owner(current, owner_uid), current, admit=False)
        else:
            self._delete(rt, current, Propagation.BACKGROUND)

    def _release(self, owner_uid: str) -> None:
        found = self._lookup_uid(owner_uid)
        if found is None:
            return
        rt, owner = found
        if gc.releasable(owner, [d for _, d in self._dependents_of(owner_uid)]):
            names = [f for f in gc.finalizers(owner) if f != gc.FOREGROUND_FINALIZER]
            self._save(rt, gc.with_finalizers(owner, names), owner, admit=False)
