"""The node agent with real processes: a memory store, a wall clock, pods run as local process groups."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from agent.conftest import phase_of, pod, python, wait_for, wait_phase
from gangplane.agent import LEGACY_FINALIZER, AgentPool, ClusterConfig, NodeGroup, sandbox
from gangplane.agent import agent as agent_module
from gangplane.agent.process import group_members
from gangplane.api.jobset import JOBSET_NAME_LABEL
from gangplane.clock import WallClock
from gangplane.errors import NotFound
from gangplane.store.base import ListOptions
from gangplane.store.catalog import CONFIGMAPS, EVENTS, LEASES, NODES, PODS
from gangplane.store.memory import MemoryStore

PoolFactory = Callable[..., AgentPool]
MODES = [sandbox.PATH_MAPPING] + ([sandbox.NAMESPACE] if sandbox.mode() == sandbox.NAMESPACE else [])


def log(tmp_path: Path, pod_name: str, container: str) -> str:
    return (tmp_path / "logs" / "default" / pod_name / f"{container}.log").read_text()


def gone(pids: list[int]) -> bool:
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            continue
    return True


def test_pool_registers_ready_nodes_and_leases(store: MemoryStore, make_pool: PoolFactory) -> None:
    make_pool()
    nodes = store.list(NODES).items
    assert [n["metadata"]["name"] for n in nodes] == ["node-0", "node-1"]
    ready = [next(c for c in n["status"]["conditions"] if c["type"] == "Ready") for n in nodes]
    assert all(c["status"] == "True" and c["reason"] == "KubeletReady" for c in ready)
    # every nodeInfo field a kubelet reports, with this host's values (kubeProxyVersion is deprecated)
    info = nodes[0]["status"]["nodeInfo"]
    assert len(info) == 10 and all(v for k, v in info.items() if k != "kubeProxyVersion")
    assert {c["type"] for c in nodes[0]["status"]["conditions"]} == {
        "MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}  # fmt: skip
    assert nodes[0]["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert {lease["spec"]["holderIdentity"] for lease in store.list(LEASES).items} == {"node-0", "node-1"}


def test_pod_runs_to_succeeded_with_its_output_logged(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path
) -> None:
    make_pool()
    store.create(
        PODS, pod("hello", python("main", "import sys; print('hi from', sys.argv[0])"), restartPolicy="Never")
    )
    done = wait_phase(store, "hello", "Succeeded", "Failed")
    assert done["status"]["phase"] == "Succeeded"
    (status,) = done["status"]["containerStatuses"]
    assert status["state"]["terminated"]["reason"] == "Completed"
    assert log(tmp_path, "hello", "main") == "hi from -c\n"
    assert LEGACY_FINALIZER not in (done["metadata"].get("finalizers") or [])
    assert done["status"]["podIP"] == "127.0.0.1"


def test_failing_container_fails_the_pod_with_its_exit_code(
    store: MemoryStore, make_pool: PoolFactory
) -> None:
    make_pool()
    store.create(PODS, pod("bad", python("main", "import sys; sys.exit(3)"), restartPolicy="Never"))
    done = wait_phase(store, "bad", "Succeeded", "Failed")
    assert done["status"]["phase"] == "Failed"
    terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")


def test_missing_executable_is_a_start_error(store: MemoryStore, make_pool: PoolFactory) -> None:
    make_pool()
    store.create(
        PODS, pod("noexec", {"name": "main", "command": ["no-such-binary-xyz"]}, restartPolicy="Never")
    )
    done = wait_phase(store, "noexec", "Failed")
    terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (128, "StartError")
    assert terminated["message"] == (
        'unable to start container process: exec: "no-such-binary-xyz": executable file not found in $PATH'
    )


@pytest.mark.slow
@pytest.mark.parametrize("isolation", MODES)
def test_what_cannot_start_is_a_start_error_through_the_wrappers(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path, isolation: str
) -> None:
    """Behind the memory cgroup's and the namespace's shells, where an exec failure was the shell's 127."""
    make_pool(isolation=isolation)
    (tmp_path / "plain.sh").write_text("echo never\n")
    containers = [
        {"name": "missing", "command": ["nosuch"]},
        {"name": "plain", "command": [str(tmp_path / "plain.sh")]},
        {"name": "nodir", "command": ["true"], "workingDir": str(tmp_path / "gone")},
        {"name": "fine", "command": ["sh", "-c", "exit 127"]},  # the program's own 127 stays an Error
    ]
    store.create(PODS, pod("cannot", *containers, restartPolicy="Never"))
    done = wait_phase(store, "cannot", "Failed", timeout=20)
    states = {s["name"]: s["state"]["terminated"] for s in done["status"]["containerStatuses"]}
    assert {n: (t["exitCode"], t["reason"]) for n, t in states.items()} == {
        "missing": (128, "StartError"), "plain": (128, "StartError"), "nodir": (128, "StartError"),
        "fine": (127, "Error")}  # fmt: skip
    assert states["plain"]["message"].endswith(f'exec: "{tmp_path / "plain.sh"}": permission denied')
    assert states["nodir"]["message"].endswith(
        f'chdir to cwd ("{tmp_path / "gone"}") failed: no such file or directory'
    )


def test_the_agents_own_status_writes_bring_no_reconcile(
    store: MemoryStore, make_pool: PoolFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pod that runs and ends is reconciled twice: when it comes and when its container exits. The echo
    of each status write is the pod as written (the in-process store tells the informer before the write
    returns, so it often comes first) and brings no pass of its own."""
    passes: list[tuple[str, str]] = []
    reconcile = agent_module.NodeAgent.reconcile
    monkeypatch.setattr(
        agent_module.NodeAgent, "reconcile", lambda self, key: passes.append(key) or reconcile(self, key)
    )
    make_pool()
    names = [f"quick-{i}" for i in range(8)]
    for name in names:
        store.create(PODS, pod(name, {"name": "main", "command": ["true"]}, restartPolicy="Never"))
    for name in names:
        wait_phase(store, name, "Succeeded")
    time.sleep(0.3)  # an echo would be reconciled by now
    assert sorted(passes) == sorted([("default", n) for n in names] * 2)


def test_on_failure_restarts_the_container(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path
) -> None:
    make_pool()
    marker = tmp_path / "attempted"
    code = (
        f"import pathlib, sys; m = pathlib.Path({str(marker)!r}); first = not m.exists(); m.touch(); "
        "print('first' if first else 'second'); sys.exit(1 if first else 0)"
    )
    store.create(PODS, pod("retry", python("main", code), restartPolicy="OnFailure"))
    done = wait_phase(store, "retry", "Succeeded", "Failed")
    assert done["status"]["phase"] == "Succeeded"
    (status,) = done["status"]["containerStatuses"]
    assert status["restartCount"] == 1
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert log(tmp_path, "retry", "main") == "second\n"
    assert log(tmp_path, "retry", "main.previous") == "first\n"  # kubectl logs --previous
    # kubelet events, identical ones counted on one Event (client-go's correlator)
    events = {e["reason"]: e for e in store.list(EVENTS, ListOptions(namespace="default")).items}
    assert events["Started"]["count"] == 2 and events["Started"]["message"] == "Started container main"
    assert events["Created"]["involvedObject"]["fieldPath"] == "spec.containers{main}"
    assert events["Created"]["source"]["component"] == "kubelet"


def test_init_container_runs_before_the_main_container(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path
) -> None:
    make_pool()
    shared = tmp_path / "shared.txt"
    init = python("init", f"open({str(shared)!r}, 'w').write('prepared')")
    main = python("main", f"print(open({str(shared)!r}).read())")
    store.create(PODS, pod("ordered", main, initContainers=[init], restartPolicy="Never"))
    done = wait_phase(store, "ordered", "Succeeded", "Failed")
    assert done["status"]["phase"] == "Succeeded"
    assert log(tmp_path, "ordered", "main") == "prepared\n"
    assert done["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"


def test_a_sidecar_started_lets_the_next_init_container_and_main_go_in_one_pass(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path
) -> None:
    """A native sidecar (an init container with ``restartPolicy: Always``) counts as done once started, so
    the next init container starts in the same pass; the agent's own status write never wakes it again."""
    make_pool()
    sidecar = python("side", "import time; time.sleep(30)", restartPolicy="Always")
    init = python("init", "print('after the sidecar')")
    main = python("main", "print('main')")
    store.create(PODS, pod("sided", main, initContainers=[sidecar, init], restartPolicy="Never"))
    done = wait_phase(store, "sided", "Succeeded", "Failed")
    assert done["status"]["phase"] == "Succeeded"
    assert log(tmp_path, "sided", "init") == "after the sidecar\n"
    assert log(tmp_path, "sided", "main") == "main\n"


def test_deleting_a_running_pod_stops_its_whole_group_before_it_disappears(
    store: MemoryStore, make_pool: PoolFactory
) -> None:
    pool = make_pool()
    stubborn = (
        "import signal, subprocess, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "subprocess.Popen(['sleep', '60']); time.sleep(60)"
    )
    store.create(PODS, pod("sleeper", python("main", stubborn), terminationGracePeriodSeconds=1))
    wait_phase(store, "sleeper", "Running")
    leader = wait_for(lambda: pool.agent("node-0").processes().get(("default", "sleeper")), what="process")[0]
    members = wait_for(
        lambda: len(group_members(leader)) == 2 and group_members(leader), what="child process"
    )
    store.delete(PODS, "default", "sleeper")
    terminating = store.get(PODS, "default", "sleeper")
    # graceful deletion, as kube-apiserver's: marked with the pod's period, no finalizer holds it
    assert terminating["metadata"]["deletionTimestamp"]
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 1
    assert not terminating["metadata"].get("finalizers")
    time.sleep(0.5)  # SIGTERM is ignored: within the grace period both the pod and its processes remain
    assert _exists(store, "sleeper") and not gone(members)
    wait_for(lambda: not _exists(store, "sleeper"), timeout=8, what="pod deleted")
    assert gone(members)


def test_a_shorter_grace_period_on_a_second_delete_cuts_the_wait_for_sigkill(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path
) -> None:
    make_pool()
    ready = tmp_path / "ignoring"
    stubborn = (
        "import pathlib, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"pathlib.Path({str(ready)!r}).touch(); time.sleep(120)"
    )
    store.create(PODS, pod("slow", python("main", stubborn), terminationGracePeriodSeconds=60))
    wait_for(ready.exists, what="SIGTERM ignored")
    store.delete(PODS, "default", "slow")  # 60 s: SIGTERM is ignored, so the pod would stay a minute
    time.sleep(0.5)
    assert _exists(store, "slow")
    store.delete(PODS, "default", "slow", grace_period=1)  # kubectl delete --grace-period=1
    assert store.get(PODS, "default", "slow")["metadata"]["deletionGracePeriodSeconds"] == 1
    wait_for(lambda: not _exists(store, "slow"), timeout=15, what="pod deleted after the shorter grace")


def test_a_pod_deleted_while_its_agent_was_away_goes_when_the_agent_returns(
    store: MemoryStore, make_pool: PoolFactory
) -> None:
    """The kubelet's restart: a pod marked for deletion whose processes are gone is deleted with grace 0."""
    pool = make_pool()
    store.create(PODS, pod("away", python("main", "import time; time.sleep(60)")))
    wait_phase(store, "away", "Running")
    pool.stop()  # its processes stop with it; the Lease stays, so the delete below is graceful
    store.delete(PODS, "default", "away")
    assert store.get(PODS, "default", "away")["metadata"]["deletionGracePeriodSeconds"] == 30
    make_pool()
    wait_for(lambda: not _exists(store, "away"), timeout=10, what="pod deleted by the returning agent")


def test_pool_stop_kills_every_process_group(store: MemoryStore, tmp_path: Path) -> None:
    config = ClusterConfig(node_groups=[NodeGroup(name="node", count=1)])
    pool = AgentPool(store, WallClock(), config, tmp_path / "logs", stop_grace_seconds=1)
    pool.start()
    try:
        store.create(PODS, pod("a", {"name": "main", "command": ["sh", "-c", "sleep 60 & sleep 60"]}))
        leader = wait_for(lambda: pool.agent("node-0").processes().get(("default", "a")), what="process")[0]
        members = wait_for(lambda: len(group_members(leader)) == 3 and group_members(leader), what="children")
    finally:
        pool.stop()
    assert gone(members)


def test_pods_of_one_jobset_share_a_local_master_port(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path
) -> None:
    pool = make_pool()
    show = "import os; print(os.environ['PET_MASTER_ADDR'], os.environ['PET_MASTER_PORT'], os.environ['MASTER_ADDR'])"
    for jobset in ("alpha", "beta"):
        for index in range(2):
            env = [
                {"name": "PET_MASTER_ADDR", "value": f"{jobset}-node-0-0.{jobset}"},
                {"name": "PET_MASTER_PORT", "value": "29500"},
                {"name": "MASTER_ADDR", "value": "$(PET_MASTER_ADDR)"},
            ]
            labels = {JOBSET_NAME_LABEL: jobset}
            name = f"{jobset}-node-0-{index}"
            spec = pod(
                name,
                python("node", show, env=env),
                node=f"node-{index}",
                labels=labels,
                restartPolicy="Never",
            )
            store.create(PODS, spec)
    outputs = {}
    for jobset in ("alpha", "beta"):
        lines = []
        for index in range(2):
            wait_phase(store, f"{jobset}-node-0-{index}", "Succeeded")
            lines.append(log(tmp_path, f"{jobset}-node-0-{index}", "node").split())
        assert lines[0] == lines[1]
        addr, port, master = lines[0]
        assert addr == master == "127.0.0.1"
        outputs[jobset] = int(port)
    assert outputs["alpha"] != outputs["beta"]
    assert 29500 not in outputs.values()
    wait_for(lambda: not pool.ports.held(), what="ports released")


def test_config_map_reference_waits_until_the_config_map_exists(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent_module, "CONFIG_RETRY_SECONDS", 0.1)
    make_pool()
    env = [{"name": "LR", "valueFrom": {"configMapKeyRef": {"name": "hp", "key": "lr"}}}]
    store.create(
        PODS, pod("cfg", python("main", "import os; print(os.environ['LR'])", env=env), restartPolicy="Never")
    )

    def waiting_reason() -> str | None:
        statuses = (store.get(PODS, "default", "cfg").get("status") or {}).get("containerStatuses") or [{}]
        return (statuses[0].get("state") or {}).get("waiting", {}).get("reason")

    wait_for(lambda: waiting_reason() == "CreateContainerConfigError", what="config error")
    assert phase_of(store, "cfg") == "Pending"
    store.create(
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "hp", "namespace": "default"},
            "data": {"lr": "0.01"},
        },
    )
    wait_phase(store, "cfg", "Succeeded")
    assert log(tmp_path, "cfg", "main") == "0.01\n"


def test_gpus_are_assigned_per_pod_and_exhaustion_fails_admission(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path
) -> None:
    config = ClusterConfig.model_validate(
        {"nodeGroups": [{"name": "gpu", "count": 1, "capacity": {"nvidia.com/gpu": 2}, "gpuDevices": [4, 5]}]}
    )
    make_pool(config)
    show = "import os, time; print(repr(os.environ['CUDA_VISIBLE_DEVICES'])); time.sleep(0.5)"

    def gpu_pod(name: str, count: int) -> dict[str, Any]:
        resources = {"limits": {"nvidia.com/gpu": count}} if count else {}
        return pod(name, python("main", show, resources=resources), node="gpu-0", restartPolicy="Never")

    store.create(PODS, gpu_pod("two", 2))
    wait_phase(store, "two", "Running")
    store.create(PODS, gpu_pod("more", 1))
    store.create(PODS, gpu_pod("none", 0))
    refused = wait_phase(store, "more", "Failed")
    assert refused["status"]["reason"] == "UnexpectedAdmissionError"
    wait_phase(store, "two", "Succeeded")
    wait_phase(store, "none", "Succeeded")
    assert log(tmp_path, "two", "main") == "'4,5'\n"
    assert log(tmp_path, "none", "main") == "''\n"


def test_working_directory_and_path_resolution(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path
) -> None:
    make_pool()
    work = tmp_path / "work"
    work.mkdir()
    container = {"name": "main", "command": ["sh", "-c", "pwd; command -v python"], "workingDir": str(work)}
    store.create(PODS, pod("where", container, restartPolicy="Never"))
    wait_phase(store, "where", "Succeeded")
    cwd, python_path = log(tmp_path, "where", "main").split()
    assert cwd == str(work)
    assert os.path.dirname(python_path) == os.path.dirname(sys.executable)


def _exists(store: MemoryStore, name: str) -> bool:
    try:
        store.get(PODS, "default", name)
    except NotFound:
        return False
    return True


RENDEZVOUS = """
import os, socket, sys, time
host, port, rank = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), int(os.environ["RANK"])
if rank == 0:
    with socket.create_server((host, port)) as server:
        conn, _ = server.accept()
        print(conn.recv(64).decode())
else:
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection((host, port)) as conn:
                conn.sendall(b"hello from rank 1")
            break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit(1)
            time.sleep(0.05)
"""


def test_ranks_of_a_jobset_reach_each_other_through_the_rewritten_master(
    store: MemoryStore, make_pool: PoolFactory, tmp_path: Path
) -> None:
    make_pool()
    for rank in range(2):
        env = [
            {"name": "MASTER_ADDR", "value": "job-node-0-0.job"},
            {"name": "MASTER_PORT", "value": "29500"},
            {"name": "RANK", "value": str(rank)},
        ]
        labels = {JOBSET_NAME_LABEL: "job"}
        spec = pod(
            f"job-node-0-{rank}",
            python("node", RENDEZVOUS, env=env),
            node=f"node-{rank}",
            labels=labels,
            restartPolicy="Never",
        )
        store.create(PODS, spec)
    for rank in range(2):
        assert (
            wait_phase(store, f"job-node-0-{rank}", "Succeeded", "Failed")["status"]["phase"] == "Succeeded"
        )
    assert log(tmp_path, "job-node-0-0", "node") == "hello from rank 1\n"


def test_fallback_to_logs_on_error_makes_the_log_tail_the_termination_message(
    store: MemoryStore, make_pool: PoolFactory
) -> None:
    make_pool()
    code = "import sys; print('\\n'.join(f'line {i}' for i in range(100))); sys.exit(2)"
    container = python("main", code, terminationMessagePolicy="FallbackToLogsOnError")
    store.create(PODS, pod("tail", container, restartPolicy="Never"))
    done = wait_phase(store, "tail", "Failed")
    message = done["status"]["containerStatuses"][0]["state"]["terminated"]["message"]
    assert message.splitlines() == [f"line {i}" for i in range(20, 100)]  # kubelet keeps the last 80 lines
