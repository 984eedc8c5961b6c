"""Kueue's writes onto objects that other writers change too, each computed from a fresh read and guarded by
that read's ``resourceVersion``: when another writer got in between, the merge patch is refused (409) and
computed again from a new read. So a list Kueue writes whole (a Workload's ``conditions`` or ``finalizers``,
a TrainJob's ``runtimePatches``) never drops an entry written meanwhile, as upstream's writes do not
(controller-runtime ``Update`` checks the resourceVersion; the Workload status is applied per condition type).
The guarded write itself is ``client/guarded.py``; this module holds the bodies only Kueue writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gangplane.client.guarded import Body
from gangplane.store.base import Object


def owned_conditions(owned: Iterable[str], status: Mapping[str, Any]) -> Body:
    """The status patch that writes ``status`` with only its conditions of the ``owned`` types: the current
    conditions of any other type (another controller's, as it last wrote them) follow Kueue's."""
    types = frozenset(owned)
    ours = [c for c in status.get("conditions") or [] if c.get("type") in types]

    def body(current: Object) -> dict[str, Any]:
        stored = (current.get("status") or {}).get("conditions") or []
        others = [c for c in stored if c.get("type") not in types]
        return {"status": {**status, "conditions": [*ours, *others]}}

    return body


def with_list_entry(
    current: Object, field: str, key: str, entry: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """``spec.<field>`` of ``current`` with the item whose ``key`` equals ``entry``'s replaced in place by
    ``entry`` (appended when missing): the other items kept as stored, none reordered."""
    items = list((current.get("spec") or {}).get(field) or [])
    index = next((i for i, item in enumerate(items) if item.get(key) == entry.get(key)), None)
    if index is None:
        return [*items, entry]
    return [*items[:index], entry, *items[index + 1 :]]
