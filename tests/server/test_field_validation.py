"""``fieldValidation`` on writes of custom kinds (``server/fieldvalidation.py``), as kube-apiserver answers it:
``Strict`` 400 "strict decoding error", ``Warn`` drops with a Warning each, ``Ignore`` drops silently; without
the parameter gangplane keeps its stricter answer (a Trainer model refuses the field with 422)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from gangplane.server.admission import TrainerAdmission
from gangplane.server.app import create_app
from gangplane.server.lifecycle import ensure_default_namespace
from gangplane.server.resources import default_registry
from gangplane.store import MemoryStore
from server.conftest import AUTH, TOKEN

CQS = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
JOBS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"
RUNTIMES = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"
_ANCESTOR = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
_POD = {"spec": {"containers": [{"name": "node", "image": "busybox"}]}}
_RJOB = {"name": "node", "template": {"metadata": {"labels": _ANCESTOR}, "spec": {"template": _POD}}}
_RUNTIME_SPEC = {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": [_RJOB]}}}
RUNTIME = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime", "metadata": {"name": "rt"},
           "spec": _RUNTIME_SPEC}  # fmt: skip


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    admission = TrainerAdmission(default_registry())
    store = MemoryStore(admission=admission)
    admission.bind(store)
    ensure_default_namespace(store)
    with TestClient(create_app(store, token=TOKEN, logs_dir=tmp_path), headers=AUTH) as client:
        assert client.post(RUNTIMES, json=RUNTIME).status_code == 201
        yield client
    store.close()


def _queue(name: str) -> dict[str, Any]:
    group = {
        "coveredResources": ["cpu"],
        "typo": 1,
        "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1}]}],
    }
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"bogus": True, "resourceGroups": [group]}}  # fmt: skip


def _job(name: str) -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"runtimeRef": {"name": "rt"}, "trainer": {"numNodes": 1, "bogus": 1}}}  # fmt: skip


def test_strict_refuses_unknown_fields_with_400(api: TestClient) -> None:
    answer = api.post(f"{CQS}?fieldValidation=Strict", json=_queue("strict"))
    assert answer.status_code == 400 and answer.json()["reason"] == "BadRequest"
    assert answer.json()["message"] == (
        'ClusterQueue in version "v1beta2" cannot be handled as a ClusterQueue: strict decoding error: '
        'unknown field "spec.bogus", unknown field "spec.resourceGroups[0].typo"'
    )
    assert api.get(f"{CQS}/strict").status_code == 404
    job = api.post(f"{JOBS}?fieldValidation=Strict", json=_job("strict"))
    assert job.status_code == 400 and 'unknown field "spec.trainer.bogus"' in job.json()["message"]


def test_warn_drops_them_with_a_warning_each(api: TestClient) -> None:
    answer = api.post(f"{CQS}?fieldValidation=Warn", json=_queue("warn"))
    assert answer.status_code == 201
    assert answer.headers["warning"] == '299 - "unknown field \\"spec.bogus\\"", ' + (
        '299 - "unknown field \\"spec.resourceGroups[0].typo\\""'
    )
    stored = api.get(f"{CQS}/warn").json()["spec"]
    assert "bogus" not in stored and "typo" not in stored["resourceGroups"][0]
    job = api.post(f"{JOBS}?fieldValidation=Warn", json=_job("warn"))
    assert job.status_code == 201 and job.json()["spec"]["trainer"] == {"numNodes": 1}


def test_ignore_drops_them_silently(api: TestClient) -> None:
    answer = api.post(f"{CQS}?fieldValidation=Ignore", json=_queue("ignore"))
    assert answer.status_code == 201 and "warning" not in answer.headers
    assert "bogus" not in answer.json()["spec"]


def test_an_unsupported_value_is_refused_naming_the_parameter(api: TestClient) -> None:
    answer = api.post(f"{CQS}?fieldValidation=strict", json=_queue("lower"))
    assert answer.status_code == 400 and answer.json()["message"] == (
        'fieldValidation: Unsupported value: "strict": supported values: "Ignore", "Strict", "Warn"'
    )
    assert api.get(f"{CQS}/lower").status_code == 404


def test_a_patch_is_checked_on_the_object_it_makes(api: TestClient) -> None:
    assert api.post(CQS, json={**_queue("patched"), "spec": {"resourceGroups": []}}).status_code == 201
    merge = {"content-type": "application/merge-patch+json"}
    refused = api.patch(f"{CQS}/patched?fieldValidation=Strict", json={"spec": {"bogus": 1}}, headers=merge)
    assert refused.status_code == 400 and 'unknown field "spec.bogus"' in refused.json()["message"]
    dropped = api.patch(f"{CQS}/patched?fieldValidation=Ignore", json={"spec": {"bogus": 1}}, headers=merge)
    assert dropped.status_code == 200 and "bogus" not in dropped.json()["spec"]


def test_without_the_parameter_gangplane_stays_strict_for_trainer_kinds(api: TestClient) -> None:
    job = api.post(JOBS, json=_job("plain"))
    assert job.status_code == 422 and job.json()["details"]["causes"][0]["field"] == "spec.trainer.bogus"
