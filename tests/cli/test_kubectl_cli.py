"""The kubectl-style commands end to end against a real embedded API server (HTTPS, token, admission).

The server's kubeconfig lives in a temporary ``$GANGPLANE_HOME``, so the commands find it by default, as
after ``gangplane up``; pods and logs that controllers and agents would write are arranged in its store.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cli_cluster import RUNTIME, Cli, embedded_cluster, free_port, job

from gangplane.store.catalog import CONFIGMAPS, PODS


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    home = tmp_path_factory.mktemp("gangplane-home")
    with pytest.MonkeyPatch.context() as env, embedded_cluster(home) as cluster:
        env.setenv("GANGPLANE_HOME", str(home))
        yield cluster


def test_apply_reports_created_unchanged_configured_in_dependency_order(cli: Cli) -> None:
    # The TrainJob comes first in the stream; its runtime is still applied before it.
    out = cli.ok("apply", "-f", "-", stdin=job("order") + "---\n" + RUNTIME)
    assert out.splitlines() == [
        "clustertrainingruntime.trainer.kubeflow.org/torch-distributed created",
        "trainjob.trainer.kubeflow.org/order created",
    ]
    assert "trainjob.trainer.kubeflow.org/order unchanged" in cli.ok("apply", "-f", "-", stdin=job("order"))
    changed = cli.ok("apply", "-f", "-", stdin=job("order").replace("{app: order}", "{app: order, v: '2'}"))
    assert "trainjob.trainer.kubeflow.org/order configured" in changed
    applied = yaml.safe_load(cli.ok("get", "trainjob", "order", "-o", "yaml"))
    assert "managedFields" not in applied["metadata"]  # hidden, as kubectl hides them
    assert applied["metadata"]["labels"] == {"app": "order", "v": "2"}
    assert (
        applied["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"
    )  # defaulted by admission


def test_apply_from_files_and_directories(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "runtime.yaml").write_text(RUNTIME)
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "a.yaml").write_text(job("from-dir"))
    out = cli.ok("apply", "-f", str(tmp_path / "runtime.yaml"), "-f", str(tmp_path / "jobs"))
    assert "trainjob.trainer.kubeflow.org/from-dir created" in out


def test_get_table_name_yaml_json_and_selectors(cli: Cli) -> None:
    cli.ok("apply", "-f", "-", stdin=RUNTIME + "---\n" + job("alpha") + "---\n" + job("beta", 1))
    table = cli.ok("get", "trainjobs").splitlines()
    assert table[0].split() == ["NAME", "STATE", "AGE"]
    assert {"alpha", "beta"} <= {row.split()[0] for row in table[1:]}
    wide = cli.ok("get", "trainjobs", "-o", "wide").splitlines()[0].split()
    assert wide == ["NAME", "STATE", "REASON", "SUSPENDED", "AGE"]
    assert cli.ok("get", "trainjob", "-l", "app=beta", "-o", "name") == "trainjob.trainer.kubeflow.org/beta\n"
    assert cli.ok("get", "trainjob/alpha", "-o", "json").startswith("{")
    one = json.loads(cli.ok("get", "TrainJob", "alpha", "-o", "json"))
    assert one["kind"] == "TrainJob" and one["spec"]["trainer"]["numNodes"] == 2
    listed = yaml.safe_load(
        cli.ok("get", "trainjobs.trainer.kubeflow.org", "-l", "app in (alpha,beta)", "-o", "yaml")
    )
    assert listed["kind"] == "List" and sorted(i["metadata"]["name"] for i in listed["items"]) == [
        "alpha",
        "beta",
    ]
    everywhere = cli.ok("get", "trainjobs", "-A").splitlines()
    assert everywhere[0].split()[:2] == ["NAMESPACE", "NAME"] and everywhere[1].split()[0] == "default"
    runtimes = cli.ok("get", "clustertrainingruntime").splitlines()
    assert runtimes[0].split() == ["NAME", "AGE"] and runtimes[1].split()[0] == "torch-distributed"


def test_get_nothing_and_missing_and_unknown(cli: Cli) -> None:
    code, out, err = cli.run("get", "trainjobs", "-n", "kube-system")
    assert (code, out, err.strip()) == (0, "", "No resources found in kube-system namespace.")
    code, _, err = cli.run("get", "trainjob", "ghost")
    assert code == 1 and err.startswith("Error from server (NotFound):") and "ghost" in err
    code, _, err = cli.run("get", "widgets")
    assert code == 1 and 'doesn\'t have a resource type "widgets"' in err


def test_invalid_trainjob_is_reported_with_its_field_path(cli: Cli) -> None:
    cli.ok("apply", "-f", "-", stdin=RUNTIME)
    code, out, err = cli.run("apply", "-f", "-", stdin=job("bad", -1))
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == 'error: TrainJob "bad" is invalid:'
    assert any(line.startswith("  - spec.trainer.numNodes:") for line in lines[1:])
    code, _, err = cli.run("apply", "-f", "-", stdin=job("orphan").replace("torch-distributed", "missing"))
    assert code == 1 and "spec.runtimeRef" in err


def test_describe_trainjob_shows_why_it_waits_and_its_pods(cli: Cli) -> None:
    cli.ok("apply", "-f", "-", stdin=RUNTIME + "---\n" + job("waiting"))
    text = cli.ok("describe", "trainjob", "waiting")
    assert "Name:         waiting" in text and "Phase:        Pending" in text
    assert "no pods yet" in text and "Pods:         0/2 pods bound" in text  # no PodGroup: not a gang
    assert "Runtime Ref:" in text and "Events:       <none>" in text
    for index in range(2):
        _pod(cli, f"waiting-node-0-{index}", "waiting", scheduled=False)
    text = cli.ok("describe", "trainjobs/waiting")
    why = "Why:          0/4 nodes are available: gang of 2 does not fit (pods waiting-node-0-0, waiting-node-0-1)"
    assert why in text and text.count("gang of 2 does not fit") == 1
    assert "waiting-node-0-1   Pending   <none>   Unschedulable" in text


def test_logs_of_a_pod_and_of_a_trainjob(cli: Cli) -> None:
    cli.ok("apply", "-f", "-", stdin=RUNTIME + "---\n" + job("talky"))
    for index in range(2):
        name = f"talky-node-0-{index}"
        _pod(cli, name, "talky", phase="Succeeded", node="node-a")
        log = cli.state_dir / "logs" / "default" / name / "node.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"rank {index} step 1\nrank {index} done\n")
    assert cli.ok("logs", "talky-node-0-1") == "rank 1 step 1\nrank 1 done\n"
    assert cli.ok("logs", "pod/talky-node-0-0", "--tail", "1") == "rank 0 done\n"
    out = cli.ok("logs", "trainjob/talky").splitlines()
    assert out == [
        "[talky-node-0-0] rank 0 step 1",
        "[talky-node-0-0] rank 0 done",
        "[talky-node-0-1] rank 1 step 1",
        "[talky-node-0-1] rank 1 done",
    ]
    followed = cli.ok("logs", "-f", "trainjob/talky").splitlines()
    assert sorted(followed) == sorted(out)
    restarted = cli.state_dir / "logs" / "default" / "talky-node-0-0" / "node.previous.log"
    restarted.write_text("rank 0 crashed\n")  # what the node agent keeps when a container restarts
    assert cli.ok("logs", "talky-node-0-0", "--previous") == "rank 0 crashed\n"
    code, _, err = cli.run("logs", "talky-node-0-1", "-p")
    assert code != 0 and "previous terminated container" in err


def test_delete_by_name_selector_and_file_cascades(cli: Cli) -> None:
    cli.ok("apply", "-f", "-", stdin=RUNTIME + "---\n" + job("doomed"))
    trainjob = yaml.safe_load(cli.ok("get", "trainjob", "doomed", "-o", "yaml"))
    owner = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "doomed",
             "uid": trainjob["metadata"]["uid"], "controller": True}  # fmt: skip
    cli.store.create(
        CONFIGMAPS, {"metadata": {"name": "doomed-cm", "namespace": "default", "ownerReferences": [owner]}}
    )
    assert cli.ok("delete", "trainjob", "doomed") == 'trainjob.trainer.kubeflow.org "doomed" deleted\n'
    assert cli.run("get", "configmap", "doomed-cm")[0] == 1  # garbage-collected with its owner
    cli.ok("apply", "-f", "-", stdin=job("by-label") + "---\n" + job("by-file"))
    assert "by-label" in cli.ok("delete", "trainjobs", "-l", "app=by-label")
    assert (
        cli.ok("delete", "-f", "-", stdin=job("by-file"))
        == 'trainjob.trainer.kubeflow.org "by-file" deleted\n'
    )
    code, _, err = cli.run("delete", "trainjob", "by-file")
    assert code == 1 and "NotFound" in err


def test_get_watch_prints_changes(cli: Cli) -> None:
    cli.store.create(CONFIGMAPS, {"metadata": {"name": "watched-1", "namespace": "default"}})

    def later() -> None:
        time.sleep(0.5)
        cli.store.create(CONFIGMAPS, {"metadata": {"name": "watched-2", "namespace": "default"}})

    writer = threading.Thread(target=later)
    writer.start()
    out = cli.ok("get", "configmaps", "-w", "--request-timeout", "2")
    writer.join()
    rows = [line.split()[0] for line in out.splitlines()]
    assert rows[0] == "NAME" and "watched-1" in rows and rows[-1] == "watched-2"


def test_explicit_kubeconfig_and_unreachable_server(cli: Cli, tmp_path: Path) -> None:
    kubeconfig = cli.state_dir / "kubeconfig"
    explicit = cli.ok("get", "ns", "--kubeconfig", str(kubeconfig), "--context", "gangplane").splitlines()
    assert explicit[0].split() == ["NAME", "STATUS", "AGE"] and explicit[1].split()[0] == "default"
    dead = yaml.safe_load(kubeconfig.read_text())
    dead["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{free_port()}"
    (tmp_path / "dead").write_text(yaml.safe_dump(dead))
    code, _, err = cli.run("get", "trainjobs", "--kubeconfig", str(tmp_path / "dead"))
    assert code == 1 and "cannot reach the API server" in err
    code, _, err = cli.run("get", "trainjobs", "--context", "nope")
    assert code == 1 and "nope" in err


def _pod(
    cli: Cli, name: str, trainjob: str, *, scheduled: bool = True, phase: str = "Pending", node: str = ""
) -> None:
    labels = {"jobset.sigs.k8s.io/jobset-name": trainjob, "jobset.sigs.k8s.io/replicatedjob-name": "node"}
    spec = {"containers": [{"name": "node", "image": "pytorch/pytorch"}]} | (
        {"nodeName": node} if node else {}
    )
    cli.store.create(
        PODS, {"metadata": {"name": name, "namespace": "default", "labels": labels}, "spec": spec}
    )
    condition = {"type": "PodScheduled", "status": "True"}
    if not scheduled:
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "message": "0/4 nodes are available: gang of 2 does not fit"}  # fmt: skip
    status = {"phase": phase, "conditions": [condition]}
    cli.store.update_status(PODS, {"metadata": {"name": name, "namespace": "default"}, "status": status})
