"""The node-agent process's way to the API, against the real HTTPS server: the static token the control plane
issues it (and nothing else) gets in, Events are sent in the background in order, and ConfigMaps, Secrets and
ServiceAccounts are read from watch-based caches, falling back to the server for what a cache lacks."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gangplane.agent.daemon import await_server
from gangplane.agent.remote import NodeApi
from gangplane.client.events import EventRecorder
from gangplane.client.kube import KubeStore
from gangplane.client.kubeconfig import token_connection
from gangplane.clock import ManualClock
from gangplane.errors import Unauthorized
from gangplane.server.lifecycle import make_server
from gangplane.store import MemoryStore
from gangplane.store.base import ListOptions
from gangplane.store.catalog import CONFIGMAPS, EVENTS, NAMESPACES, PODS
from serving import serving
from waiting import wait_for

TOKEN = "node-agents-token-for-this-test"
USER = {
    "username": "system:node-agents",
    "groups": ["system:nodes", "system:masters", "system:authenticated"],
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, MemoryStore]]:
    state_dir = tmp_path_factory.mktemp("gangplane")
    backing = MemoryStore()
    port = _free_port()
    with serving(make_server(state_dir, backing, port=port, users={TOKEN: USER})):
        yield f"https://127.0.0.1:{port}", state_dir / "tls.crt", backing
    backing.close()


@pytest.fixture
def api(served: tuple[str, Path, MemoryStore]) -> Iterator[NodeApi]:
    url, ca, _ = served
    conn = token_connection(url, ca, TOKEN)
    node_api = NodeApi(conn.client(), namespace=conn.namespace)
    yield node_api
    node_api.close()


def test_the_issued_token_gets_in_and_another_does_not(
    served: tuple[str, Path, MemoryStore], api: NodeApi
) -> None:
    url, ca, _ = served
    assert await_server(api, threading.Event(), timeout=10)
    assert api.get(NAMESPACES, "", "default")["metadata"]["name"] == "default"
    stranger = KubeStore.from_connection(token_connection(url, ca, "not-" + TOKEN))
    with stranger, pytest.raises(Unauthorized):
        stranger.list(PODS)


def test_await_server_gives_up_when_told_to_stop(served: tuple[str, Path, MemoryStore]) -> None:
    _, ca, _ = served
    conn = token_connection(f"https://127.0.0.1:{_free_port()}", ca, TOKEN)  # nobody listens there
    with KubeStore.from_connection(conn) as nowhere:
        stop = threading.Event()
        threading.Timer(0.3, stop.set).start()
        began = time.monotonic()
        assert not await_server(nowhere, stop, timeout=30)
        assert time.monotonic() - began < 10


def test_events_are_sent_in_the_background_create_before_count(
    served: tuple[str, Path, MemoryStore], api: NodeApi
) -> None:
    _, _, backing = served
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u-1"}}
    recorder = EventRecorder(api, ManualClock(), "kubelet", host="node-0")
    for _ in range(3):
        recorder.event(pod, "Normal", "Pulled", "Container image already present")
    api.close()  # flushes what is queued

    def counted() -> bool:
        items = backing.list(EVENTS, ListOptions(namespace="default")).items
        return [(e["reason"], e["count"]) for e in items if e["involvedObject"]["uid"] == "u-1"] == [
            ("Pulled", 3)
        ]

    wait_for(counted, 20.0)


def test_config_maps_come_from_the_cache_and_a_miss_from_the_server(
    served: tuple[str, Path, MemoryStore], api: NodeApi
) -> None:
    _, _, backing = served
    backing.create(CONFIGMAPS, {"metadata": {"name": "before", "namespace": "default"}, "data": {"k": "1"}})
    api.start_caches(timeout=10)
    assert api.get(CONFIGMAPS, "default", "before")["data"] == {"k": "1"}
    backing.patch(CONFIGMAPS, "default", "before", {"data": {"k": "2"}}, "application/merge-patch+json")
    wait_for(
        lambda: api.get(CONFIGMAPS, "default", "before")["data"] == {"k": "2"}, 20.0
    )  # the watch updates it
    # Created and read at once: whether or not the watch has delivered it yet, the read finds it.
    backing.create(
        CONFIGMAPS, {"metadata": {"name": "just-made", "namespace": "default"}, "data": {"k": "3"}}
    )
    assert api.get(CONFIGMAPS, "default", "just-made")["data"] == {"k": "3"}
