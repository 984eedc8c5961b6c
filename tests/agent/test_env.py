"""Container environment and argv as Kubernetes builds them."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from gangplane.agent.env import ConfigError, argv, container_env, expand, field_value, resource_value

VARS = {"A": "1", "B": "two"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(A)", "1"),
        ("x-$(A)-$(B)", "x-1-two"),
        ("$(MISSING)", "$(MISSING)"),
        ("$$(A)", "$(A)"),
        ("$$", "$"),
        ("$A", "$A"),
        ("$(A", "$(A"),
        ("cost $", "cost $"),
        ("", ""),
    ],
)
def test_expand(text: str, expected: str) -> None:
    assert expand(text, VARS.get) == expected


POD: dict[str, Any] = {
    "metadata": {
        "name": "trainer-0",
        "namespace": "team",
        "uid": "u-1",
        "labels": {"app": "x"},
        "annotations": {"batch.kubernetes.io/job-completion-index": "3"},
    },
    "spec": {"nodeName": "node-1"},
}

OBJECTS: dict[tuple[str, str, str], dict[str, Any]] = {
    ("configmaps", "team", "cfg"): {"data": {"LR": "0.1", "bad key": "x"}},
    ("secrets", "team", "creds"): {"data": {"TOKEN": base64.b64encode(b"s3cret").decode()}},
}


def read(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
    return OBJECTS.get((plural, namespace, name))


def env_of(*env: dict[str, Any], env_from: list[dict[str, Any]] | None = None) -> dict[str, str]:
    container: dict[str, Any] = {"name": "node", "env": list(env)}
    if env_from:
        container["envFrom"] = env_from
    return container_env(POD, container, read, {"cpu": "8", "memory": "16Gi"})


def test_values_expand_earlier_variables_and_later_names_win() -> None:
    got = env_of(
        {"name": "A", "value": "a"},
        {"name": "B", "value": "$(A)-b"},
        {"name": "A", "value": "again"},
    )
    assert got == {"A": "again", "B": "a-b"}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("metadata.name", "trainer-0"),
        ("metadata.namespace", "team"),
        ("metadata.uid", "u-1"),
        ("metadata.labels['app']", "x"),
        ("metadata.annotations['batch.kubernetes.io/job-completion-index']", "3"),
        ("spec.nodeName", "node-1"),
        ("status.podIP", "127.0.0.1"),
        ("status.hostIP", "127.0.0.1"),
    ],
)
def test_field_refs(path: str, expected: str) -> None:
    assert field_value(POD, path) == expected
    assert env_of({"name": "X", "valueFrom": {"fieldRef": {"fieldPath": path}}}) == {"X": expected}


def test_unsupported_field_ref_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unsupported fieldRef"):
        field_value(POD, "status.phase")


def test_config_map_and_secret_keys() -> None:
    got = env_of(
        {"name": "LR", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "LR"}}},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "TOKEN"}}},
        {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "nope", "optional": True}}},
        {"name": "GONE", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k", "optional": True}}},
    )
    assert got == {"LR": "0.1", "TOKEN": "s3cret"}


@pytest.mark.parametrize(
    "ref",
    [
        {"configMapKeyRef": {"name": "cfg", "key": "nope"}},
        {"configMapKeyRef": {"name": "missing", "key": "LR"}},
        {"secretKeyRef": {"name": "missing", "key": "TOKEN"}},
    ],
)
def test_missing_required_references_are_config_errors(ref: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        env_of({"name": "X", "valueFrom": ref})


def test_env_from_with_prefix_skips_invalid_names_and_env_overrides() -> None:
    got = env_of(
        {"name": "CFG_LR", "value": "override"},
        env_from=[{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}, {"secretRef": {"name": "creds"}}],
    )
    assert got == {"CFG_LR": "override", "TOKEN": "s3cret"}


def test_secret_string_data_and_invalid_base64() -> None:
    OBJECTS[("secrets", "team", "plain")] = {"stringData": {"K": "v"}, "data": {"J": "!!"}}
    try:
        with pytest.raises(ConfigError, match="base64"):
            env_of(env_from=[{"secretRef": {"name": "plain"}}])
    finally:
        del OBJECTS[("secrets", "team", "plain")]


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ({"resource": "limits.cpu"}, "8"),
        ({"resource": "requests.cpu"}, "2"),
        ({"resource": "requests.memory", "divisor": "1Mi"}, "1536"),
        ({"resource": "limits.memory", "divisor": "1Gi"}, "16"),
    ],
)
def test_resource_field_refs_round_up_and_default_limits_to_allocatable(
    ref: dict[str, str], expected: str
) -> None:
    container = {"name": "node", "resources": {"requests": {"cpu": "1500m", "memory": "1.5Gi"}}}
    assert resource_value(POD, container, ref, {"cpu": "8", "memory": "16Gi"}) == expected


def test_argv_is_command_then_args_expanded() -> None:
    container = {"command": ["torchrun", "--nnodes=$(N)"], "args": ["train.py", "$$(N)", "$(UNSET)"]}
    assert argv(container, {"N": "2"}) == ["torchrun", "--nnodes=2", "train.py", "$(N)", "$(UNSET)"]
    assert argv({"args": ["python", "-V"]}, {}) == ["python", "-V"]


@pytest.mark.parametrize("container", ["../escape", "a/b", "UPPER", ""])
def test_log_paths_refuse_names_that_are_not_kubernetes_names(container: str) -> None:
    from pathlib import Path

    from gangplane.agent.launch import log_path
    from gangplane.agent.process import StartError

    with pytest.raises(StartError):
        log_path(Path("/logs"), POD, container)
    assert log_path(Path("/logs"), POD, "node") == Path("/logs/team/trainer-0/node.log")
