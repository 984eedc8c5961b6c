"""``gangplane render`` as a user meets it: exit codes, field-pathed errors, documents that load back."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gangplane.api import serde
from gangplane.cli.main import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BAD_JOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: mnist
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numProcPerNode: 0
    numNodez: 2
"""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_good_manifests_print_documents_that_load_back() -> None:
    code, out, err = run("render", "-f", str(EXAMPLES / "torch"))
    assert (code, err) == (0, "")
    kinds = [doc["kind"] for doc in serde.parse_documents(out, "stdout")]
    assert kinds == ["ClusterTrainingRuntime", "TrainJob", "ConfigMap", "JobSet"]


def test_json_output_is_a_list() -> None:
    code, out, _ = run("render", "-f", str(EXAMPLES / "coscheduling" / "runtime-and-job.yaml"), "-o", "json")
    doc = json.loads(out)
    assert (code, doc["kind"]) == (0, "List")
    assert [item["kind"] for item in doc["items"]] == [
        "ClusterTrainingRuntime",
        "TrainJob",
        "ConfigMap",
        "PodGroup",
        "JobSet",
    ]


def test_bad_manifest_prints_field_paths_and_exits_one(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(BAD_JOB)
    code, out, err = run("render", "-f", str(tmp_path))
    assert (code, out) == (1, "")
    assert "spec.trainer.numNodez" in err and "Traceback" not in err


def test_rule_errors_name_the_field(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(BAD_JOB.replace("    numNodez: 2\n", ""))
    code, _, err = run("render", "-f", str(EXAMPLES / "torch" / "runtime.yaml"), "-f", str(tmp_path))
    assert code == 1
    assert "spec.trainer.numProcPerNode" in err


def test_yaml_syntax_error_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("kind: [unclosed\n")
    code, _, err = run("render", "-f", str(tmp_path / "broken.yaml"))
    assert code == 1
    assert "broken.yaml" in err and "Traceback" not in err


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    code, _, err = run("render", "-f", str(tmp_path / "nope.yaml"))
    assert code == 1
    assert "nope.yaml" in err


def test_gang_deadlock_guard_warns(tmp_path: Path) -> None:
    code, _, err = run("render", "-f", str(EXAMPLES / "torchtune"))
    assert code == 0
    assert "outside the gang" in err


def test_every_served_kind_is_context_and_used_as_the_controller_would(tmp_path: Path) -> None:
    """A Volcano runtime whose pods name a PriorityClass renders once the PriorityClass is given with it."""
    volcano = (EXAMPLES / "volcano" / "runtime-and-job.yaml").read_text()
    with_priority = volcano.replace(
        "                  schedulerName: volcano\n",
        "                  schedulerName: volcano\n                  priorityClassName: high\n",
    )
    (tmp_path / "job.yaml").write_text(with_priority)
    code, _, err = run("render", "-f", str(tmp_path))
    assert code == 1 and "PriorityClass 'high' of replicated job 'node' does not exist" in err
    (tmp_path / "context.yaml").write_text(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\n"
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\n"
        "apiVersion: v1\nkind: Secret\nmetadata: {name: hf}\nstringData: {HF_TOKEN: x}\n"
    )
    code, out, err = run("render", "-f", str(tmp_path))
    assert code == 0, err
    docs = {doc["kind"]: doc for doc in serde.parse_documents(out, "stdout")}
    assert docs["PodGroup"]["spec"]["priorityClassName"] == "high"
    assert docs["PriorityClass"]["value"] == 1000 and "namespace" not in docs["PriorityClass"]["metadata"]
    assert docs["Secret"]["metadata"]["namespace"] == "default"  # namespaced kinds land in default
    (tmp_path / "unknown.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n")
    code, _, err = run("render", "-f", str(tmp_path))
    assert code == 1 and 'no kind "Deployment" is registered' in err
