"""Small reads the node agent makes: a pod start asks the store once per object it refers to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangplane.agent.pod_access import remembered


def test_remembered_asks_once_per_object_and_remembers_missing_ones() -> None:
    asked: list[tuple[str, str, str]] = []

    def read(plural: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        asked.append((plural, namespace, name))
        return {"metadata": {"name": name}} if name != "missing" else None

    once = remembered(read)
    assert once("serviceaccounts", "default", "default") == {"metadata": {"name": "default"}}
    assert once("serviceaccounts", "default", "default") == {"metadata": {"name": "default"}}
    assert once("secrets", "default", "missing") is None and once("secrets", "default", "missing") is None
    assert asked == [("serviceaccounts", "default", "default"), ("secrets", "default", "missing")]
