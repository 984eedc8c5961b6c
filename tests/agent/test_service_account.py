"""The kubelet's side of service accounts: when a pod gets a token (``automountServiceAccountToken``), the
files and where they are mounted, the ``kubernetes`` Service's variables, and the endpoint read from the
control plane's state directory."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangplane.agent import service_account as sa
from gangplane.agent.env import ConfigError
from gangplane.agent.volumes import (
    SERVICE_ACCOUNT_MOUNT,
    SERVICE_ACCOUNT_VOLUME,
    container_mounts,
    projected_files,
)
from gangplane.api import serviceaccount_token as sat

ACCESS = sa.ApiAccess("127.0.0.1", 6443, b"-----BEGIN CERTIFICATE-----\n", sat.signing_key("admin"))


def _pod(uid: str = "uid-1", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "team", "uid": uid}, "spec": spec}


# pkg/kubelet (and the ServiceAccount admission plugin's shouldAutomount): the pod's field wins over the
# ServiceAccount's; unset on both means mount.
@pytest.mark.parametrize(
    ("pod_says", "account_says", "mounted"),
    [
        (None, None, True),
        (False, None, False),
        (None, False, False),
        (True, False, True),
        (False, True, False),
    ],
)
def test_automount_follows_the_pod_then_the_service_account(
    pod_says: bool | None, account_says: bool | None, mounted: bool
) -> None:
    spec = {} if pod_says is None else {"automountServiceAccountToken": pod_says}
    account = {"metadata": {"name": "default"}}
    if account_says is not None:
        account["automountServiceAccountToken"] = account_says  # type: ignore[assignment]
    assert sa.automount(_pod(**spec), account) is mounted


def test_service_variables_name_the_api_server() -> None:
    env = ACCESS.env()
    assert (env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]) == ("127.0.0.1", "6443")
    assert env["KUBERNETES_SERVICE_PORT_HTTPS"] == "6443"
    assert env["KUBERNETES_PORT_6443_TCP"] == "tcp://127.0.0.1:6443"
    assert sa.ApiAccess("::1", 1, b"", b"").env()["KUBERNETES_PORT"] == "tcp://[::1]:1"


def test_the_token_volume_is_written_once_and_reminted_for_another_pod(tmp_path: Path) -> None:
    accounts = {("team", "runner"): {"metadata": {"name": "runner", "uid": "sa-uid"}}}

    def read(plural: str, namespace: str, name: str) -> Any:
        return accounts.get((namespace, name)) if plural == "serviceaccounts" else None

    pod = _pod(serviceAccountName="runner")
    folder = sa.service_account_dir(pod, tmp_path, read, ACCESS)
    assert folder is not None and (folder / "namespace").read_text() == "team"
    assert (folder / "ca.crt").read_bytes() == ACCESS.ca_pem
    assert stat.S_IMODE((folder / "token").stat().st_mode) == 0o600
    token = (folder / "token").read_text()
    assert sat.verify(ACCESS.key, token) == sat.Binding("team", "runner", "p", "uid-1", "sa-uid")
    assert sa.service_account_dir(pod, tmp_path, read, ACCESS) == folder
    assert (folder / "token").read_text() == token  # still valid: kept
    sa.service_account_dir(_pod("uid-2", serviceAccountName="runner"), tmp_path, read, ACCESS)
    assert sat.verify(ACCESS.key, (folder / "token").read_text()).pod_uid == "uid-2"  # type: ignore[union-attr]


def test_no_token_without_an_api_server_or_with_automount_off(tmp_path: Path) -> None:
    def read(plural: str, namespace: str, name: str) -> Any:
        return None

    assert sa.service_account_dir(_pod(), tmp_path, read, None) is None
    assert sa.service_account_dir(_pod(automountServiceAccountToken=False), tmp_path, read, ACCESS) is None


def test_every_container_gets_the_mount_unless_it_mounts_that_path_itself(tmp_path: Path) -> None:
    volumes = {SERVICE_ACCOUNT_VOLUME: tmp_path / "sa", "own": tmp_path / "own"}
    mounts = container_mounts({"name": "main"}, volumes)
    assert [(m.target, m.read_only) for m in mounts] == [(SERVICE_ACCOUNT_MOUNT, True)]
    own = {"name": "main", "volumeMounts": [{"name": "own", "mountPath": SERVICE_ACCOUNT_MOUNT}]}
    assert [m.source for m in container_mounts(own, volumes)] == [tmp_path / "own"]


def test_the_endpoint_comes_from_the_state_directory_once_it_is_served(tmp_path: Path) -> None:
    endpoint = sa.ApiEndpoint(tmp_path)
    assert endpoint.get() is None  # the server has not written its kubeconfig yet
    (tmp_path / "token").write_text("admin\n")
    (tmp_path / "tls.crt").write_bytes(b"PEM")
    config = {"clusters": [{"name": "gangplane", "cluster": {"server": "https://0.0.0.0:7443"}}]}
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
    found = endpoint.get()
    assert found == sa.ApiAccess("127.0.0.1", 7443, b"PEM", sat.signing_key("admin"))


def test_a_projected_token_source_gets_a_token_for_its_audience(tmp_path: Path) -> None:
    def read(plural: str, namespace: str, name: str) -> Any:
        return None

    pod = _pod()
    volume = {"name": "vault", "projected": {"sources": [
        {"serviceAccountToken": {"path": "vault-token", "audience": "vault", "expirationSeconds": 600}},
        {"serviceAccountToken": {"path": "api-token"}},
    ]}}  # fmt: skip
    files = projected_files(pod, volume, read, {}, sa.token_source(pod, read, ACCESS))
    vault, api = files["vault-token"][0].decode(), files["api-token"][0].decode()
    assert files["vault-token"][1] == 0o600
    assert sat.verify(ACCESS.key, vault) is None  # meant for the vault: this API server refuses it
    assert sat.verify(ACCESS.key, vault, audience="vault") == sat.verify(ACCESS.key, api)
    assert projected_files(pod, volume, read, {}, sa.token_source(pod, read, ACCESS)) == files  # stable
    with pytest.raises(ConfigError, match="serves no API"):
        projected_files(pod, volume, read, {}, sa.token_source(pod, read, None))
