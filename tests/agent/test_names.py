"""JobSet pod hosts and rendezvous ports made local."""

from __future__ import annotations

import itertools
import re

import pytest

from gangplane.agent.names import PortAllocator, job_identity, rewrite_args, rewrite_env
from gangplane.api.jobset import JOBSET_NAME_LABEL


def jobset_pod(jobset: str = "mnist", subdomain: str | None = None, namespace: str = "team") -> dict:
    spec = {"subdomain": subdomain} if subdomain else {}
    labels = {JOBSET_NAME_LABEL: jobset}
    return {"metadata": {"name": "p", "namespace": namespace, "labels": labels}, "spec": spec}


def ports(declared: int) -> int:
    return {29500: 40001, 1234: 40002}.get(declared, 1)


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("PET_MASTER_ADDR", "mnist-node-0-0.mnist", "127.0.0.1"),
        ("MASTER_ADDR", "mnist-node-0-0.mnist", "127.0.0.1"),
        ("PET_MASTER_PORT", "29500", "40001"),
        ("MASTER_PORT", "29500", "40001"),
        ("DMLC_TRACKER_PORT", "29500", "40001"),
        ("JAX_COORDINATOR_ADDRESS", "mnist-node-0-0.mnist:29500", "127.0.0.1:40001"),
        ("FQDN", "mnist-dataset-initializer-0-0.mnist.team.svc.cluster.local:1234", "127.0.0.1:40002"),
        ("CUSTOM_SUBDOMAIN", "mnist-node-1-3.net", "127.0.0.1"),
        ("LIST", "mnist-node-0-0.mnist:29500,mnist-node-0-1.mnist:29500", "127.0.0.1:40001,127.0.0.1:40001"),
        ("OTHER_JOB", "other-node-0-0.mnist", "other-node-0-0.mnist"),
        ("PREFIXED", "xmnist-node-0-0.mnist", "xmnist-node-0-0.mnist"),
        ("WRONG_SUBDOMAIN", "mnist-node-0-0.elsewhere", "mnist-node-0-0.elsewhere"),
        ("PORT", "29500", "29500"),
        ("PET_NNODES", "2", "2"),
    ],
)
def test_rewrite_env(name: str, value: str, expected: str) -> None:
    job = job_identity(jobset_pod(subdomain="net"))
    assert rewrite_env({name: value}, job, ports) == {name: expected}


def test_pods_outside_a_jobset_are_left_alone() -> None:
    plain = {"metadata": {"name": "p", "namespace": "default"}}
    assert job_identity(plain) is None
    env = {"MASTER_ADDR": "mnist-node-0-0.mnist", "MASTER_PORT": "29500"}
    assert rewrite_env(env, None, ports) == env


def test_torchtune_rendezvous_argument_is_rewritten() -> None:
    job = job_identity(jobset_pod())
    args = ["tune", "run", "--rdzv_endpoint=mnist-node-0-0.mnist:29500", "full_finetune"]
    assert rewrite_args(args, job, ports)[2] == "--rdzv_endpoint=127.0.0.1:40001"


def test_identity_keys_by_namespace_and_jobset() -> None:
    job = job_identity(jobset_pod("a", namespace="ns"))
    assert job is not None and job.key == ("ns", "a") and job.subdomains == ("a",)


def test_port_allocator_is_shared_per_job_and_released_with_the_last_holder() -> None:
    candidates = itertools.count(50000)
    allocator = PortAllocator(pick=lambda: next(candidates))
    a = allocator.port(("ns", "a"), 29500, "pod-0")
    assert allocator.port(("ns", "a"), 29500, "pod-1") == a
    b = allocator.port(("ns", "b"), 29500, "pod-2")
    assert b != a
    allocator.release(("ns", "a"), "pod-0")
    assert allocator.held()[("ns", "a", 29500)] == a
    allocator.release(("ns", "a"), "pod-1")
    assert ("ns", "a", 29500) not in allocator.held()
    assert allocator.held() == {("ns", "b", 29500): b}


def test_port_allocator_never_hands_out_a_held_port_twice() -> None:
    proposals = iter([7000, 7000, 7000, 7001])
    allocator = PortAllocator(pick=lambda: next(proposals))
    assert allocator.port(("ns", "a"), 1, "x") == 7000
    assert allocator.port(("ns", "b"), 1, "y") == 7001


def test_default_port_picking_gives_distinct_bindable_ports() -> None:
    allocator = PortAllocator()
    got = {allocator.port(("ns", f"j{i}"), 29500, "h") for i in range(5)}
    assert len(got) == 5 and all(1024 < p < 65536 for p in got)


def test_job_ports_come_from_below_the_ephemeral_range_and_are_free() -> None:
    import random

    from gangplane.agent.names import JOB_PORTS, FreeJobPorts

    first = [FreeJobPorts(random.Random(7))() for _ in range(5)]
    again = [FreeJobPorts(random.Random(7))() for _ in range(5)]
    assert first == again  # seeded: reproducible
    assert all(p in JOB_PORTS and p < 32768 for p in first)


def _compiled_patterns() -> set[str]:
    return {key[1] for key in re._cache if isinstance(key[1], str)}  # type: ignore[attr-defined]


def test_a_job_whose_texts_name_no_host_compiles_no_pattern() -> None:
    # A compiled pattern per job would stay in re's module cache (512 entries) long after the job.
    re.purge()
    job = job_identity(jobset_pod(jobset="nohosts"))
    env = {"PATH": "/bin", "MASTER_PORT": "29500", "OTHER": "other-node-0-0.other"}
    assert rewrite_env(env, job, ports) == {**env, "MASTER_PORT": "40001"}
    assert rewrite_args(["true", "nohosts"], job, ports) == ["true", "nohosts"]
    assert not any("nohosts" in pattern for pattern in _compiled_patterns())


def test_a_text_naming_the_job_is_still_rewritten_alongside_others() -> None:
    job = job_identity(jobset_pod(jobset="js"))
    env = {"A": "plain", "B": "js-node-0-0.js:29500", "C": "js-"}
    assert rewrite_env(env, job, ports) == {"A": "plain", "B": "127.0.0.1:40001", "C": "js-"}
