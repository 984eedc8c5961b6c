"""Strategic merge, the one implementation: runtime patches (Trainer's JobSet keys) and strategic merge patch
requests, including the directives the API server refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from gangplane.api.merge import strategic_merge
from gangplane.errors import Invalid
from gangplane.server.app import create_app
from gangplane.server.lifecycle import ensure_default_namespace
from gangplane.store import MemoryStore
from gangplane.store.catalog import PODS

SPEC = {
    "replicatedJobs": [
        {"name": "launcher", "replicas": 1},
        {"name": "node", "replicas": 1, "template": {"spec": {"parallelism": 1}}},
    ]
}


def test_runtime_patches_merge_replicated_jobs_by_name_and_leave_the_base_alone() -> None:
    patch = {
        "replicatedJobs": [{"name": "node", "template": {"spec": {"parallelism": 4}}}, {"name": "extra"}]
    }
    merged = strategic_merge(SPEC, patch)
    assert [j["name"] for j in merged["replicatedJobs"]] == ["launcher", "node", "extra"]
    assert merged["replicatedJobs"][1] == {
        "name": "node",
        "replicas": 1,
        "template": {"spec": {"parallelism": 4}},
    }
    assert SPEC["replicatedJobs"][1]["template"] == {"spec": {"parallelism": 1}}


@pytest.mark.parametrize(
    "patch",
    [
        pytest.param({"replicatedJobs": [{"name": "node", "$patch": "remove"}]}, id="unknown-$patch-in-list"),
        pytest.param({"template": {"$patch": "purge"}}, id="unknown-$patch-in-map"),
        pytest.param({"$deleteEverything": True}, id="unknown-directive"),
        pytest.param({"replicatedJobs": [{"replicas": 2}]}, id="item-without-merge-key"),
    ],
)
def test_bad_directives_are_invalid(patch: dict[str, Any]) -> None:
    with pytest.raises(Invalid, match="patch"):
        strategic_merge(SPEC, patch)


def test_the_api_server_answers_a_bad_directive_with_400_and_keeps_the_object(tmp_path: Path) -> None:
    store = MemoryStore()
    ensure_default_namespace(store)
    spec = {"containers": [{"name": "a", "image": "busybox"}]}
    store.create(PODS, {"metadata": {"name": "p", "namespace": "default"}, "spec": spec})
    client = TestClient(create_app(store, token="t", logs_dir=tmp_path))
    headers = {"Authorization": "Bearer t", "content-type": "application/strategic-merge-patch+json"}
    bad = {"spec": {"containers": [{"name": "a", "$patch": "bogus"}]}}
    response = client.patch("/api/v1/namespaces/default/pods/p", json=bad, headers=headers)
    # The API server refuses a malformed directive before merging (400, ``interpretStrategicMergePatchError``).
    assert response.status_code == 400, response.text
    assert "invalid patch type 'bogus'" in response.json()["message"]
    assert store.get(PODS, "default", "p")["spec"] == spec
