"""kubectl's resource-argument grammar and output formats in get/describe/delete, end to end against the
embedded API server: several types at once, TYPE/NAME lists, the ``all`` category, field selectors,
JSONPath and custom columns, and apply of an older served version (Kueue v1beta1)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml
from cli_cluster import RUNTIME, Cli, embedded_cluster, job

from gangplane.store.catalog import CONFIGMAPS, NAMESPACES, PODS


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    home = tmp_path_factory.mktemp("gangplane-home")
    with pytest.MonkeyPatch.context() as env, embedded_cluster(home) as cluster:
        env.setenv("GANGPLANE_HOME", str(home))
        cluster.ok("apply", "-f", "-", stdin=RUNTIME + "---\n" + job("gram-a") + "---\n" + job("gram-b", 1))
        for name, phase in (("gram-a-node-0-0", "Running"), ("gram-a-node-0-1", "Pending")):
            meta = {
                "name": name,
                "namespace": "default",
                "labels": {"jobset.sigs.k8s.io/jobset-name": "gram-a"},
            }
            cluster.store.create(
                PODS, {"metadata": meta, "spec": {"containers": [{"name": "n", "image": "i"}]}}
            )
            cluster.store.update_status(PODS, {"metadata": meta, "status": {"phase": phase}})
        yield cluster


def test_several_types_print_one_table_each_with_kind_prefixed_names(cli: Cli) -> None:
    out = cli.ok("get", "trainjobs,pods", "-o", "wide")
    tables = out.split("\n\n")
    assert len(tables) == 2
    assert tables[0].splitlines()[0].split()[:2] == ["NAME", "STATE"]
    assert "trainjob.trainer.kubeflow.org/gram-a" in tables[0]
    assert "pod/gram-a-node-0-0" in tables[1] and "NODE" in tables[1].splitlines()[0]
    names = cli.ok("get", "trainjob/gram-a", "pod/gram-a-node-0-1", "-o", "name").splitlines()
    assert names == ["trainjob.trainer.kubeflow.org/gram-a", "pod/gram-a-node-0-1"]
    assert "pod/gram-a-node-0-0" in cli.ok("get", "all")


def test_field_selector_jsonpath_and_custom_columns(cli: Cli) -> None:
    running = cli.ok("get", "pods", "--field-selector", "status.phase=Running", "-o", "name")
    assert running == "pod/gram-a-node-0-0\n"
    assert cli.ok("get", "trainjobs", "-o", "jsonpath={.items[*].metadata.name}") == "gram-a gram-b"
    one = cli.ok("get", "trainjob", "gram-b", "-o", "jsonpath={.spec.trainer.numNodes}")
    assert one == "1"
    ranged = cli.ok(
        "get", "pods", "-o", r'jsonpath={range .items[*]}{.metadata.name}={.status.phase}{"\n"}{end}'
    )
    assert ranged.splitlines() == ["gram-a-node-0-0=Running", "gram-a-node-0-1=Pending"]
    columns = cli.ok(
        "get", "trainjobs", "-o", "custom-columns=NAME:.metadata.name,NODES:.spec.trainer.numNodes"
    )
    assert [line.split() for line in columns.splitlines()] == [
        ["NAME", "NODES"],
        ["gram-a", "2"],
        ["gram-b", "1"],
    ]


def test_mistakes_get_kubectls_messages(cli: Cli) -> None:
    code, _, err = cli.run("get", "trainjobs,widgets")
    assert code == 1 and err.strip() == 'error: the server doesn\'t have a resource type "widgets"'
    code, _, err = cli.run("get", "pods", "-o", "xml")
    assert code == 1 and 'unable to match a printer suitable for the output format "xml"' in err
    code, out, err = cli.run("get", "trainjob/gram-a", "trainjob/ghost", "-o", "name")
    assert code == 1 and "ghost" in err  # the missing one is reported, the found one still printed
    assert out == "trainjob.trainer.kubeflow.org/gram-a\n"
    code, _, err = cli.run("get", "trainjob", "gram-a", "-A")
    assert code == 1 and "across all namespaces" in err
    code, _, err = cli.run("get", "trainjobs,pods", "-w")
    assert code == 1 and "watch is only supported on individual resources" in err
    code, _, err = cli.run("delete", "configmaps")
    assert code == 1 and "no name was specified" in err


def test_describe_and_delete_take_the_same_grammar(cli: Cli) -> None:
    for name in ("cm-1", "cm-2"):
        cli.store.create(
            CONFIGMAPS, {"metadata": {"name": name, "namespace": "default", "labels": {"g": "x"}}}
        )
    described = cli.ok("describe", "configmaps", "-l", "g=x")
    assert "Name:         cm-1" in described and "Name:         cm-2" in described
    assert "Name:         gram-b" in cli.ok("describe", "trainjob/gram-b")
    out = cli.ok("delete", "configmap/cm-1", "trainjob/gram-b")
    assert out.splitlines() == ['configmap "cm-1" deleted', 'trainjob.trainer.kubeflow.org "gram-b" deleted']
    assert cli.ok("delete", "configmaps", "--all") == 'configmap "cm-2" deleted\n'


def test_apply_of_kueue_v1beta1_goes_through_the_served_version(cli: Cli) -> None:
    flavor = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: old-flavor}\n"
    queue = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: old-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: old-flavor
      resources: [{name: cpu, nominalQuota: 4}]
"""
    out = cli.ok("apply", "-f", "-", stdin=flavor + "---\n" + queue)
    assert out.splitlines() == [
        "resourceflavor.kueue.x-k8s.io/old-flavor created",
        "clusterqueue.kueue.x-k8s.io/old-cq created",
    ]
    assert "unchanged" in cli.ok("apply", "-f", "-", stdin=queue)
    stored = json.loads(cli.ok("get", "clusterqueue", "old-cq", "-o", "json"))
    assert stored["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert yaml.safe_load(cli.ok("get", "clusterqueues.v1beta1.kueue.x-k8s.io", "old-cq", "-o", "yaml"))


def test_api_resources_lists_the_preferred_versions(cli: Cli) -> None:
    rows = [line.split() for line in cli.ok("api-resources").splitlines()]
    assert rows[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    assert ["pods", "po", "v1", "true", "Pod"] in rows
    assert not any(r[-3:-2] == ["kueue.x-k8s.io/v1beta1"] for r in rows)


def test_apply_reports_type_name_and_minimum_errors_in_one_answer(cli: Cli) -> None:
    bad = job("bad.name").replace("trainer: {numNodes: 2}", "trainer: {numNodes: abc, numProcPerNode: 0}")
    code, _, err = cli.run("apply", "-f", "-", stdin=bad)
    assert code == 1
    paths = [line.split(":")[0].strip(" -") for line in err.splitlines()[1:]]
    assert paths == ["spec.trainer.numNodes", "metadata.name", "spec.trainer.numProcPerNode"], err


def test_label_columns_and_show_labels(cli: Cli) -> None:
    rows = [line.split() for line in cli.ok("get", "trainjobs", "-L", "app", "--show-labels").splitlines()]
    assert rows[0] == ["NAME", "STATE", "AGE", "APP", "LABELS"]
    assert rows[1][0] == "gram-a" and rows[1][-2:] == ["gram-a", "app=gram-a"]
    pods = cli.ok("get", "pods", "-L", "example.com/missing,jobset.sigs.k8s.io/jobset-name").splitlines()
    assert pods[0].split()[-2:] == ["MISSING", "JOBSET-NAME"]
    assert pods[1].split()[-1] == "gram-a" and pods[1].split()[-2] != "<none>"  # a missing label: blank


def test_describe_and_delete_across_all_namespaces(cli: Cli) -> None:
    cli.store.create(NAMESPACES, {"metadata": {"name": "elsewhere"}})
    for ns in ("default", "elsewhere"):
        cli.store.create(CONFIGMAPS, {"metadata": {"name": "spread", "namespace": ns, "labels": {"s": "y"}}})
    described = cli.ok("describe", "configmaps", "-l", "s=y", "-A")
    assert "Namespace:    default" in described and "Namespace:    elsewhere" in described
    assert (
        cli.ok("delete", "configmaps", "-l", "s=y", "-A").splitlines() == ['configmap "spread" deleted'] * 2
    )
    code, _, err = cli.run("describe", "configmap", "spread", "-A")
    assert code == 1 and "across all namespaces" in err
