"""Property: no request the served OpenAPI v3 describes — with any path values, query values and bodies,
valid or not — gets a server error, and whatever the server accepted loads back after a restart.

Operations come from the server's own ``/openapi/v3`` documents (every kind, every verb); bodies are random
JSON shaped like the kind (``apiVersion``/``kind``/``metadata``/``spec``, each sometimes wrong), NaN and
Infinity included. Streaming reads (``watch``, ``follow``) are left out: they do not end by themselves.
The store is SQLite with Trainer's admission, as ``gangplane up`` runs it. Bounded to 30 s.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from gangplane.server.admission import TrainerAdmission
from gangplane.server.app import create_app
from gangplane.server.lifecycle import ensure_default_namespace
from gangplane.server.resources import default_registry
from gangplane.store import SqliteStore

pytestmark = pytest.mark.slow

TOKEN = "fuzz"
STREAMING = ("watch", "follow")
PATCH_TYPES = (
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
BUDGET_S = 30.0
SEEDS = [
    ("/api/v1/namespaces/default/configmaps", "ConfigMap", "v1"),
    ("/api/v1/namespaces/default/secrets", "Secret", "v1"),
    ("/api/v1/namespaces/default/services", "Service", "v1"),
    ("/api/v1/namespaces/default/pods", "Pod", "v1"),
    ("/api/v1/namespaces/default/events", "Event", "v1"),
    ("/api/v1/namespaces", "Namespace", "v1"),
    ("/apis/batch/v1/namespaces/default/jobs", "Job", "batch/v1"),
    ("/apis/coordination.k8s.io/v1/namespaces/default/leases", "Lease", "coordination.k8s.io/v1"),
]
QUERY_VALUES = {
    "dryRun": ["All", "", "None"],
    "fieldManager": ["fuzz", ""],
    "force": ["true", "false"],
    "propagationPolicy": ["Background", "Foreground", "Orphan", "Sideways"],
    "labelSelector": ["a=b", "a in (b,c)", "!a", "a=="],
    "fieldSelector": ["metadata.name=a", "status.phase!=Running", "spec.x=y"],
    "limit": ["1", "0", "-1", "x"],
}


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    api_version: str
    kind: str
    query: tuple[str, ...]


def _operations(client: TestClient) -> list[Operation]:
    found = []
    for ref in client.get("/openapi/v3").json()["paths"]:
        doc = client.get(f"/openapi/v3/{ref}").json()
        for path, item in doc["paths"].items():
            for method, op in item.items():
                gvk = op.get("x-kubernetes-group-version-kind", {})
                version = f"{gvk['group']}/{gvk['version']}" if gvk.get("group") else gvk.get("version", "v1")
                names = tuple(p["name"] for p in op.get("parameters", []) if p.get("in") == "query")
                if path.endswith("/log") and method == "get":
                    names = tuple(n for n in names if n != "follow")
                found.append(Operation(method.upper(), path, version, gvk.get("kind", ""), names))
    return found


names = st.sampled_from(["a", "b", "default", "a..b", "Bad", "x" * 300, "", "-"]) | st.text(max_size=12)
scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
meta_keys = st.sampled_from(
    [
        "name",
        "generateName",
        "namespace",
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "uid",
        "resourceVersion",
        "generation",
        "deletionTimestamp",
    ]
)
metadata = st.dictionaries(meta_keys, json_values | names, max_size=5) | json_values

json_patch_ops = st.fixed_dictionaries(
    {
        "op": st.sampled_from(["add", "replace", "remove", "test", "move", "copy", "bogus"]),
        "path": st.sampled_from(
            ["/metadata/labels", "/metadata/labels/x", "/metadata/finalizers", "/spec", "/x", ""]
        ),
        "value": json_values,
    }
)


@st.composite
def requests(
    draw: st.DrawFn, operations: list[Operation]
) -> tuple[Operation, str, dict[str, str], bytes, str]:
    op = draw(st.sampled_from(operations))
    usual = draw(st.integers(0, 9)) < 8  # mostly the names that exist, sometimes anything
    namespace = "default" if usual else draw(names)
    name = draw(st.sampled_from(["a", "b"])) if usual else draw(names)
    path = op.path.replace("{namespace}", quote(namespace or "x", safe=""))
    path = path.replace("{name}", quote(name or "x", safe=""))
    chosen = draw(st.lists(st.sampled_from(op.query), unique=True, max_size=2)) if op.query else []
    params = {k: draw(st.sampled_from(QUERY_VALUES.get(k, ["", "x"])) | st.text(max_size=6)) for k in chosen}
    params = {k: v for k, v in params.items() if k not in STREAMING}
    content_type = draw(st.sampled_from(PATCH_TYPES)) if op.method == "PATCH" else "application/json"
    if content_type == "application/json-patch+json" and draw(st.booleans()):
        body: Any = draw(st.lists(json_patch_ops, min_size=1, max_size=3))
    elif draw(st.booleans()):  # nearly valid: the right kind and a good name, one field possibly wrong
        meta = {
            "name": draw(st.sampled_from(["a", "b"])),
            **draw(st.dictionaries(meta_keys, json_values, max_size=1)),
        }
        body = {"apiVersion": op.api_version, "kind": op.kind, "metadata": draw(st.just(meta) | json_values)}
        body |= draw(
            st.dictionaries(
                st.sampled_from(["spec", "data", "status"]), st.just({}) | json_values, max_size=2
            )
        )
    else:
        body = {
            "apiVersion": draw(st.sampled_from([op.api_version, "v1", "x/y"])),
            "kind": draw(st.sampled_from([op.kind, "Pod", "Nope"])),
            "metadata": draw(metadata),
            "spec": draw(json_values),
        }
        body = draw(st.just(body) | json_values)
    return op, path, params, json.dumps(body).encode(), content_type


def test_no_request_from_the_openapi_document_gets_a_server_error(tmp_path: Path) -> None:
    admission = TrainerAdmission(default_registry())
    store = SqliteStore(tmp_path / "store.db", admission=admission)
    admission.bind(store)
    ensure_default_namespace(store)
    app = create_app(store, token=TOKEN, logs_dir=tmp_path)
    started, sent, errors = time.monotonic(), [0], []
    written: Counter[str] = Counter()
    with TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        operations = _operations(client)
        for path, kind, api_version in SEEDS:  # objects for updates, patches and deletes to find
            body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "a"}}
            assert client.post(path, json=body).status_code == 201
        assert len({(o.api_version, o.kind) for o in operations}) >= 25

        @settings(max_examples=1500, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(request=requests(operations))
        def one(request: tuple[Operation, str, dict[str, str], bytes, str]) -> None:
            if time.monotonic() - started > BUDGET_S:
                return
            op, path, params, body, content_type = request
            data = body if op.method in ("POST", "PUT", "PATCH", "DELETE") else None
            response = client.request(
                op.method, path, params=params, content=data, headers={"content-type": content_type}
            )
            sent[0] += 1
            if response.status_code < 300 and op.method != "GET":
                written[op.method] += 1
            if response.status_code >= 500:
                errors.append((op.method, path, params, body[:300], response.text[:300]))

        one()
    store.close()
    assert errors == [], errors[:5]
    assert sent[0] >= 100
    assert written["POST"] and written["PATCH"] + written["PUT"], (
        written
    )  # it reaches the store, not only parsers
    reopened = SqliteStore(tmp_path / "store.db")
    reopened.close()
    quarantined = sqlite3.connect(tmp_path / "store.db").execute("SELECT COUNT(*) FROM quarantine").fetchone()
    assert quarantined == (0,)
