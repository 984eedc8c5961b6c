"""Pod sandboxes and volumes on a real agent: private working directory, no admin variables, volumes at
their mountPath (both isolation modes where the machine allows the namespace one), processes that escaped
with ``setsid`` ended on delete; and the pure parts (file contents, path mapping, atomic writes)."""

from __future__ import annotations

import base64
import os
import shutil
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from agent.conftest import pod, python, wait_for, wait_phase
from gangplane.agent import AgentPool, sandbox
from gangplane.agent import volumes as v
from gangplane.agent.env import ConfigError
from gangplane.store.catalog import CONFIGMAPS, PODS, SECRETS
from gangplane.store.memory import MemoryStore

PoolFactory = Callable[..., AgentPool]
MODES = [sandbox.PATH_MAPPING] + ([sandbox.NAMESPACE] if sandbox.mode() == sandbox.NAMESPACE else [])


def config_objects(store: MemoryStore) -> None:
    store.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "cfg", "namespace": "default"},
                              "data": {"hostfile": "node-0 slots=1\n", "other": "x"}})  # fmt: skip
    secret = base64.b64encode(b"s3cret").decode()
    store.create(SECRETS, {"apiVersion": "v1", "kind": "Secret",
                           "metadata": {"name": "sec", "namespace": "default"}, "data": {"key": secret}})  # fmt: skip


@pytest.mark.parametrize("isolation", MODES)
def test_volumes_env_and_working_directory(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path, isolation: str
) -> None:
    config_objects(store)
    make_pool(workdir=None, isolation=isolation, base_env={**os.environ, "GANGPLANE_HOME": "/admin",
                                                           "KUBECONFIG": "/admin/kubeconfig"})  # fmt: skip
    mount = f"/tmp/gp-test-{os.getpid()}-{isolation}/etc/mpi"
    (tmp_path / "token").write_text("admin-token")  # the control plane's state dir is the logs' parent
    code = (
        "import os, sys; p = sys.argv[1]; print(open(p + '/hostfile').read().strip()); "
        "print(oct(os.stat(sys.argv[2] + '/key').st_mode & 0o777), open(sys.argv[2] + '/key').read()); "
        "print(os.environ['TOKEN'], os.environ.get('GANGPLANE_HOME'), os.environ.get('KUBECONFIG')); "
        "open('scratch.txt', 'w').write('mine'); print(os.getcwd()); "
        f"print(repr(open({str(tmp_path / 'token')!r}).read()))"
    )
    container = python("main", code, args=[mount, str(Path(mount).parent / "sec")],
                       env=[{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "key"}}}],
                       volumeMounts=[{"name": "mpi", "mountPath": mount},
                                     {"name": "sec", "mountPath": str(Path(mount).parent / "sec"),
                                      "readOnly": True}])  # fmt: skip
    volumes = [{"name": "mpi", "configMap": {"name": "cfg", "items": [{"key": "hostfile", "path": "hostfile"}]}},
               {"name": "sec", "secret": {"secretName": "sec"}}]  # fmt: skip
    store.create(PODS, pod("vols", container, restartPolicy="Never", volumes=volumes))
    done = wait_phase(store, "vols", "Succeeded", "Failed", timeout=20)
    out = (tmp_path / "logs" / "default" / "vols" / "main.log").read_text().splitlines()
    assert done["status"]["phase"] == "Succeeded", out
    uid = done["metadata"]["uid"]
    assert out[:3] == ["node-0 slots=1", "0o600 s3cret", "s3cret None None"]
    assert out[3] == str(tmp_path / "pods" / "default" / f"vols_{uid}")
    secrets = sandbox.MemoryRoot(tmp_path, "node-0").pod_dir(done)  # where the secret volume was, in memory
    assert secrets is None or wait_for(
        lambda: not secrets.exists(), what="the finished pod's secret volume gone"
    )
    assert not Path(mount).exists() or isolation == sandbox.NAMESPACE  # path mapping touches no host path
    # the admin token is covered in a mount namespace; path mapping cannot hide it (docs/nodes.md)
    assert out[4] == ("''" if isolation == sandbox.NAMESPACE else "'admin-token'")
    shutil.rmtree(f"/tmp/gp-test-{os.getpid()}-{isolation}", ignore_errors=True)


@pytest.mark.skipif(sandbox.mode() != sandbox.NAMESPACE, reason="mount namespaces need root with unshare")
def test_one_mount_table_binds_nested_file_and_blank_mount_points(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path
) -> None:
    """A volume at a path with a blank, a ConfigMap key bound as a file inside it (``subPath``), and a
    working directory the mounts make: all from the one table, in a parent-first order."""
    config_objects(store)
    make_pool(workdir=None, isolation=sandbox.NAMESPACE)
    root = f"/tmp/gp-test-{os.getpid()}-table/my data"
    code = (
        "import os; print(os.getcwd()); print(open('hostfile').read().strip()); "
        "open('../scratch', 'w').write('kept'); print(sorted(os.listdir('..')))"
    )
    mounts = [
        {"name": "scratch", "mountPath": root},
        {"name": "cfg", "mountPath": f"{root}/etc/hostfile", "subPath": "hostfile"},
    ]
    container = python("main", code, workingDir=f"{root}/etc", volumeMounts=mounts)
    volumes = [{"name": "scratch", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "cfg"}}]
    store.create(PODS, pod("table", container, restartPolicy="Never", volumes=volumes))
    done = wait_phase(store, "table", "Succeeded", "Failed", timeout=20)
    out = (tmp_path / "logs" / "default" / "table" / "main.log").read_text().splitlines()
    assert done["status"]["phase"] == "Succeeded", out
    assert out == [f"{root}/etc", "node-0 slots=1", "['etc', 'scratch']"]
    assert not Path(root).exists() or not os.listdir(root)  # written into the volume, not the host path
    shutil.rmtree(f"/tmp/gp-test-{os.getpid()}-table", ignore_errors=True)


def test_a_setsid_child_is_ended_when_its_pod_is_deleted(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path
) -> None:
    make_pool()
    pidfile = tmp_path / "escaped.pid"
    code = (
        "import os, subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], start_new_session=True); "
        f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(300)"
    )
    store.create(PODS, pod("escape", python("main", code), terminationGracePeriodSeconds=1))
    escaped = int(wait_for(lambda: pidfile.exists() and pidfile.read_text(), what="escaped child"))
    assert os.getpgid(escaped) != os.getpgid(os.getpid())
    store.delete(PODS, "default", "escape")
    wait_for(lambda: not psutil.pid_exists(escaped) or psutil.Process(escaped).status() == "zombie",
             timeout=15, what="the setsid child to end")  # fmt: skip


def test_marked_processes_are_found_by_their_environment() -> None:
    value = f"test-{time.monotonic_ns()}/c"
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                             env={**os.environ, sandbox.MARKER_ENV: value})  # fmt: skip
    try:
        assert wait_for(lambda: sandbox.marked_processes(value) == [child.pid], what="marker")
    finally:
        child.kill()
        child.wait()
    assert sandbox.marked_processes(value) == []


def test_scrubbed_environment_drops_admin_variables() -> None:
    env = {"PATH": "/bin", "GANGPLANE_HOME": "/h", "KUBECONFIG": "/k", "HOME": "/root"}
    assert sandbox.scrubbed(env) == {"PATH": "/bin", "HOME": "/root"}


def test_path_mapping_rewrites_mount_paths_and_flags() -> None:
    mounts = [
        sandbox.Mount(Path("/sb/volumes/mpi"), "/etc/mpi"),
        sandbox.Mount(Path("/sb/v/ssh"), "/etc/mpi/ssh"),
    ]
    assert sandbox.map_paths("/etc/mpi/hostfile", mounts) == "/sb/volumes/mpi/hostfile"
    assert sandbox.map_paths("/etc/mpi/ssh/id_rsa", mounts) == "/sb/v/ssh/id_rsa"
    assert sandbox.map_paths("--hostfile=/etc/mpi/hostfile", mounts) == "--hostfile=/sb/volumes/mpi/hostfile"
    assert sandbox.map_paths("/etc/mpiother", mounts) == "/etc/mpiother"


def test_one_mount_process_binds_the_whole_table_with_the_program_last(tmp_path: Path) -> None:
    """The mount table (fstab lines, parents first, paths escaped) and the shell around the program: the
    cgroup entry, the file mount points, one ``mount --all``, the working directory, then the program."""
    (tmp_path / "a b").mkdir()
    (tmp_path / "key").write_text("k")
    mounts = [sandbox.Mount(tmp_path / "key", "/etc/x/key"), sandbox.Mount(tmp_path / "a b", "/etc/x", True)]
    ns = sandbox.namespace(mounts, [Path("/s/token")], tmp_path / "c.mounts", "/w d")
    assert ns.table.splitlines() == [
        "/dev/null /s/token none bind 0 0",
        f"{tmp_path}/a\\040b /etc/x none bind,X-mount.mkdir,ro 0 0",
        f"{tmp_path}/key /etc/x/key none bind 0 0",
    ]
    assert ns.files == (f"{tmp_path}/a b/key",)  # made where it shows: in the volume it nests in
    words = sandbox.command(["python", "x.py"], ns, "enter")
    assert words[:3] == ["unshare", "--mount", "--"] and words[-2:] == ["python", "x.py"]
    assert words[5].splitlines() == [
        "set -e",
        "enter",
        f"[ -e '{tmp_path}/a b/key' ] || {{ mkdir -p '{tmp_path}/a b' && : > '{tmp_path}/a b/key'; }}",
        f"mount --all --fstab {tmp_path}/c.mounts",
        "cd -- '/w d'",
        'exec "$@"',
    ]
    assert sandbox.command(["x"], None) == ["x"]
    assert sandbox.command(["x"], None, "enter")[-1] == "x"


def reader(objects: dict[tuple[str, str], dict[str, Any]]) -> v.ObjectReader:
    return lambda plural, namespace, name: objects.get((plural, name))


POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"b": "2", "a": "1"}},
       "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "2"}}}]}}  # fmt: skip


def test_projected_volume_files() -> None:
    objects = {("configmaps", "cm"): {"data": {"k": "v"}, "binaryData": {"b": base64.b64encode(b"\0").decode()}},
               ("secrets", "s"): {"data": {"t": base64.b64encode(b"tok").decode()}}}  # fmt: skip
    volume = {"projected": {"defaultMode": 0o640, "sources": [
        {"configMap": {"name": "cm"}}, {"secret": {"name": "s", "items": [{"key": "t", "path": "sub/token"}]}},
        {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                                   {"path": "cpu", "resourceFieldRef": {"containerName": "c",
                                                                        "resource": "limits.cpu"}}]}}]}}  # fmt: skip
    files = v.projected_files(POD, volume, reader(objects), {})
    assert files == {"k": (b"v", 0o640), "b": (b"\0", 0o640), "sub/token": (b"tok", 0o640),
                     "labels": (b'a="1"\nb="2"', 0o640), "cpu": (b"2", 0o640)}  # fmt: skip


def test_missing_config_map_or_key_is_a_config_error_unless_optional() -> None:
    with pytest.raises(ConfigError, match='configmap "gone" not found'):
        v.projected_files(POD, {"configMap": {"name": "gone"}}, reader({}), {})
    assert v.projected_files(POD, {"configMap": {"name": "gone", "optional": True}}, reader({}), {}) == {}
    objects = {("configmaps", "cm"): {"data": {}}}
    with pytest.raises(ConfigError, match="non-existent config key: k"):
        v.projected_files(POD, {"configMap": {"name": "cm", "items": [{"key": "k", "path": "k"}]}},
                          reader(objects), {})  # fmt: skip


def test_atomic_writes_swap_the_data_link_and_drop_removed_keys(tmp_path: Path) -> None:
    folder = tmp_path / "vol"
    v.write_atomically(folder, {"a": (b"1", 0o600), "d/b": (b"2", 0o644)})
    assert (folder / "a").read_text() == "1" and (folder / "d" / "b").read_text() == "2"
    assert stat.S_IMODE((folder / "a").stat().st_mode) == 0o600
    first = os.readlink(folder / "..data")
    v.write_atomically(folder, {"a": (b"3", 0o600)})
    assert (folder / "a").read_text() == "3" and not (folder / "d").exists()
    assert os.readlink(folder / "..data") != first and not (folder / first).exists()


def test_a_claim_mounts_its_bound_volume_and_waits_while_unbound(tmp_path: Path) -> None:
    volume = {"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}
    with pytest.raises(ConfigError, match='persistentvolumeclaim "shared" not found'):
        v.volume_path(POD, volume, tmp_path / "sb", reader({}), {})
    pending = {"spec": {}, "status": {"phase": "Pending"}}
    with pytest.raises(
        ConfigError, match='unbound immediate PersistentVolumeClaims: persistentvolumeclaim "shared"'
    ):
        v.volume_path(
            POD, volume, tmp_path / "sb", reader({("persistentvolumeclaims", "shared"): pending}), {}
        )
    bound = {"spec": {"volumeName": "pv-1"}, "status": {"phase": "Bound"}}
    where = tmp_path / "claims" / "pvc-1"
    pv = {"spec": {"hostPath": {"path": str(where), "type": "DirectoryOrCreate"}}}
    objects = {("persistentvolumeclaims", "shared"): bound, ("persistentvolumes", "pv-1"): pv}
    path = v.volume_path(POD, volume, tmp_path / "sb", reader(objects), {})
    assert path == where and path.is_dir()
    objects[("persistentvolumes", "pv-1")] = {"spec": {"nfs": {"server": "x", "path": "/"}}}
    with pytest.raises(ConfigError, match="bound to pv-1, a nfs volume: only hostPath and local"):
        v.volume_path(POD, volume, tmp_path / "sb", reader(objects), {})
    with pytest.raises(ConfigError, match="nfs volumes are not supported"):
        v.volume_path(POD, {"name": "n", "nfs": {}}, tmp_path / "sb", reader({}), {})


def test_unchanged_payload_is_not_rewritten(tmp_path: Path) -> None:
    folder = tmp_path / "vol"
    v.write_atomically(folder, {"a": (b"1", 0o644)})
    first = os.readlink(folder / "..data")
    v.write_atomically(folder, {"a": (b"1", 0o644)})
    assert os.readlink(folder / "..data") == first


def test_a_running_pod_sees_its_config_map_change(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gangplane.agent import agent as agent_module

    monkeypatch.setattr(agent_module, "VOLUME_SYNC_SECONDS", 0.2)
    config_objects(store)
    make_pool()
    seen = tmp_path / "seen"
    code = ("import sys, time\n"
            "while True:\n"
            f"    open({str(seen)!r}, 'w').write(open(sys.argv[1] + '/other').read()); time.sleep(0.1)")  # fmt: skip
    container = python(
        "main", code, args=["/etc/cfg"], volumeMounts=[{"name": "cfg", "mountPath": "/etc/cfg"}]
    )
    store.create(PODS, pod("watcher", container, volumes=[{"name": "cfg", "configMap": {"name": "cfg"}}]))
    wait_for(lambda: seen.exists() and seen.read_text() == "x", what="the first content")
    cm = store.get(CONFIGMAPS, "default", "cfg")
    store.update(CONFIGMAPS, {**cm, "data": {**cm["data"], "other": "y"}})
    wait_for(lambda: seen.read_text() == "y", timeout=15, what="the updated content")
    shutil.rmtree(f"/tmp/gp-test-{os.getpid()}-watch", ignore_errors=True)


def _memory(tmp_path: Path, node: str = "node-0") -> sandbox.MemoryRoot:
    (tmp_path / "shm").mkdir(exist_ok=True)
    return sandbox.MemoryRoot(tmp_path / "state", node, candidates=[str(tmp_path / "shm")])


def test_token_volumes_go_to_a_private_memory_directory_removed_with_the_pod_and_the_node(
    tmp_path: Path,
) -> None:
    memory, other = _memory(tmp_path), _memory(tmp_path, "node-1")
    p = pod("p", {"name": "c"})
    p["metadata"]["uid"] = "u1"
    folder = memory.pod_dir(p)
    assert folder is not None and folder.parent.parent.name == "node-0"
    cluster = folder.parents[2]
    assert cluster.parent == tmp_path / "shm" and stat.S_IMODE(cluster.stat().st_mode) == 0o700
    v.write_atomically(folder / "serviceaccount", {"token": (b"t", v.SECRET_MODE)})
    assert (folder / "serviceaccount" / "token").read_bytes() == b"t"
    elsewhere = other.pod_dir(p)
    assert elsewhere is not None and elsewhere != folder
    v.write_atomically(elsewhere / "serviceaccount", {"token": (b"t", v.SECRET_MODE)})
    memory.remove(p)
    assert not folder.exists() and cluster.exists()
    memory.clear(stopping=True)
    assert cluster.exists()  # node-1's part is still there
    other.clear()
    assert cluster.exists() and not (cluster / "node-1").exists()  # a start keeps the cluster's directory
    other.clear(stopping=True)
    assert not cluster.exists()
    memory.clear(stopping=True)  # the nodes stop at once: another took the directory along already


def test_a_memory_directory_others_made_or_may_read_is_not_used(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    first = memory.pod_dir(pod("p", {"name": "c"}))
    assert first is not None
    shutil.rmtree(tmp_path / "shm")
    _memory(tmp_path)  # the base again, empty
    cluster = first.parents[2]
    cluster.mkdir(mode=0o755)
    cluster.chmod(0o755)  # another user could have made it under the predictable name, open to all
    assert _memory(tmp_path).pod_dir(pod("p", {"name": "c"})) is None
    assert sandbox.MemoryRoot(tmp_path / "state", "node-0", candidates=[]).pod_dir({}) is None


def test_secret_projected_and_memory_empty_dir_volumes_go_to_memory_the_rest_to_the_sandbox(
    tmp_path: Path,
) -> None:
    objects = {("secrets", "sec"): {"data": {"key": base64.b64encode(b"s").decode()}}}
    memory, box = tmp_path / "memory", tmp_path / "sb"
    volumes = [
        {"name": "s", "secret": {"secretName": "sec"}},
        {"name": "p", "projected": {"sources": [{"secret": {"name": "sec"}}]}},
        {"name": "m", "emptyDir": {"medium": "Memory"}},
        {"name": "d", "emptyDir": {}},
        {"name": "w", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
    ]
    where = {vol["name"]: v.volume_path(POD, vol, box, reader(objects), {}, memory=memory) for vol in volumes}
    assert {n for n, path in where.items() if memory in path.parents} == {"s", "p", "m"}
    assert (where["s"] / "key").read_bytes() == b"s" and (where["p"] / "key").read_bytes() == b"s"
    assert where["d"] == box / "volumes" / "d" and (where["w"] / "n").read_text() == POD["metadata"]["name"]
    assert v.volume_path(POD, volumes[0], box, reader(objects), {}) == box / "volumes" / "s"  # no tmpfs here
