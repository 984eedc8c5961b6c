"""The metrics API's documents, from pods and a sampled usage (no processes needed)."""

from __future__ import annotations

from typing import Any

from gangplane.server import discovery, metrics_api, podusage
from gangplane.server.podusage import Usage


def _pod(name: str, containers: dict[str, int]) -> dict[str, Any]:
    running = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    statuses = [
        {"name": c, "containerID": f"process://{pid}", "state": running} for c, pid in containers.items()
    ]
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "status": {"phase": "Running", "containerStatuses": statuses},
    }


def test_quantities_are_nanocores_and_kibibytes() -> None:
    assert (metrics_api.cpu(0.25), metrics_api.memory(10 * 1024 * 1024)) == ("250000000n", "10240Ki")


def test_usage_is_sampled_once_for_every_container_of_every_pod(monkeypatch: Any) -> None:
    monkeypatch.setattr(podusage, "_same_process", lambda pid, started: pid != 99)  # 99: gone or recycled
    pods = [_pod("a", {"main": 10, "side": 11}), _pod("b", {"main": 99})]
    asked: list[dict[str, int]] = []

    def sampler(pids: Any) -> dict[str, Usage]:
        asked.append(dict(pids))
        return {key: Usage(0.5, 2048) for key in pids}

    found = metrics_api.usage_by_pod(pods, sampler)
    assert asked == [{"ns/a/main": 10, "ns/a/side": 11}]
    assert found == {"ns/a": {"main": Usage(0.5, 2048), "side": Usage(0.5, 2048)}, "ns/b": {}}
    doc = metrics_api.pod_metrics(pods[0], found["ns/a"], 0.0)
    assert doc["containers"] == [{"name": "main", "usage": {"cpu": "500000000n", "memory": "2Ki"}},
                                 {"name": "side", "usage": {"cpu": "500000000n", "memory": "2Ki"}}]  # fmt: skip
    node = metrics_api.node_metrics({"metadata": {"name": "n"}}, [found["ns/a"], found["ns/b"]], 0.0)
    assert node["usage"] == {"cpu": "1000000000n", "memory": "4Ki"}


def test_discovery_lists_the_metrics_group() -> None:
    from gangplane.server.resources import default_registry

    names = [g["name"] for g in discovery.api_group_list(default_registry())["groups"]]
    assert names[-1] == "metrics.k8s.io"
