"""The dashboard in a real headless Chromium (Debian's chromium + chromedriver, driven by selenium) against
the real control plane: HTTPS API server + embedded cluster (controllers, schedulers, Kueue, node agents
running real processes), as ``gangplane up`` composes them.

A coscheduling gang waits behind a blocker with its reason shown; when the blocker goes, the page turns the
gang to Running by itself (server-sent events, no reload) within 2 s of its pods running; the Queues page
shows a Kueue ClusterQueue's usage. Screenshots land in the test's tmp dir, or in $GANGPLANE_SCREENSHOTS.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import Cluster, wait_for

from gangplane.agent.nodes import ClusterConfig, NodeGroup
from gangplane.api.scheduling import kueue as kq
from gangplane.clock import WallClock
from gangplane.cluster.local import LocalCluster
from gangplane.cluster.visibility import visibility_routes
from gangplane.server.admission import TrainerAdmission
from gangplane.server.lifecycle import make_server
from gangplane.server.resources import default_registry
from gangplane.store import catalog
from gangplane.store.base import Object
from gangplane.store.memory import MemoryStore

pytestmark = pytest.mark.slow
CHROMEDRIVER = "/usr/bin/chromedriver"
TRAINER = "trainer.kubeflow.org/v1alpha1"


def _runtime(name: str, scheduler: str | None = None, pod_group: dict[str, Any] | None = None) -> Object:
    pod: dict[str, Any] = {"containers": [{"name": "node", "image": "local"}]}
    if scheduler:
        pod["schedulerName"] = scheduler
    rjob = {
        "name": "node",
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": pod}},
        },
    }
    spec: dict[str, Any] = {"mlPolicy": {"numNodes": 1}, "template": {"spec": {"replicatedJobs": [rjob]}}}
    if pod_group:
        spec["podGroupPolicy"] = pod_group
    return {"apiVersion": TRAINER, "kind": "ClusterTrainingRuntime", "metadata": {"name": name}, "spec": spec}


def _trainjob(name: str, runtime: str, nodes: int, cpu: str, queue: str = "") -> Object:
    trainer = {
        "numNodes": nodes,
        "command": [sys.executable, "-c", "import time; time.sleep(600)"],
        "resourcesPerNode": {"requests": {"cpu": cpu}},
    }
    labels = {kq.QUEUE_NAME_LABEL: queue} if queue else {}
    return {
        "apiVersion": TRAINER,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"runtimeRef": {"name": runtime}, "trainer": trainer},
    }


def _kueue_objects() -> list[Object]:
    flavors = [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": 4}]}]
    return [
        {"apiVersion": kq.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": "default"}, "spec": {}},
        {
            "apiVersion": kq.API_VERSION,
            "kind": "ClusterQueue",
            "metadata": {"name": "team-a"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}],
            },
        },
        {
            "apiVersion": kq.API_VERSION,
            "kind": "LocalQueue",
            "metadata": {"name": "lq-a", "namespace": "default"},
            "spec": {"clusterQueue": "team-a"},
        },
    ]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Cluster, str, str]]:
    """The embedded cluster behind the HTTPS API server; yields it, the base URL and the token."""
    admission = TrainerAdmission(default_registry())
    store = MemoryStore(admission=admission)
    admission.bind(store)
    config = ClusterConfig(
        node_groups=[
            NodeGroup(name="cpu", count=2, name_prefix="node-", capacity={"cpu": "4", "memory": "8Gi"})
        ]
    )
    local = LocalCluster(store, WallClock(), config, tmp_path / "home" / "logs", scheduler_period=0.2)
    port = _free_port()
    server = make_server(
        tmp_path / "home", store, port=port, extra_routes=visibility_routes(local.kueue.reconciler)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    local.start()
    thread.start()
    wait_for(lambda: server.started, 15, "the API server")
    token = (tmp_path / "home" / "token").read_text().strip()
    try:
        yield Cluster(store, tmp_path / "home" / "logs", local), f"https://127.0.0.1:{port}", token
    finally:
        server.should_exit = True
        thread.join(10)
        local.stop()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    if not (shutil.which("chromium") and Path(CHROMEDRIVER).exists()):
        pytest.skip("Debian's chromium and chromium-driver are not installed (.ci/run installs them as root)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or ""
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--ignore-certificate-errors",
        "--window-size=1440,900",
        f"--user-data-dir={tmp_path / 'chromium'}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("GANGPLANE_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _row_state(driver: Any, job: str) -> str | None:
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    try:
        return str(driver.find_element("id", f"job-default-{job}").get_attribute("data-state"))
    except (NoSuchElementException, StaleElementReferenceException):
        return None


def _all_running(cluster: Cluster, job: str, count: int) -> bool:
    pods = [p for p in cluster.pods(job) if not p["metadata"].get("deletionTimestamp")]
    return len(pods) == count and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def _all_bound(cluster: Cluster, job: str, count: int) -> bool:
    pods = [p for p in cluster.pods(job) if not p["metadata"].get("deletionTimestamp")]
    return len(pods) == count and all(p["spec"].get("nodeName") for p in pods)


def _first_times(cluster: Cluster, driver: Any, job: str, count: int, timeout: float) -> dict[str, float]:
    """Polls store and page together (every 50 ms) for when the pods first were all bound, all running,
    and when the page first showed the job Running."""
    seen: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(seen) < 3 and time.monotonic() < deadline:
        now = time.monotonic()
        checks = {
            "bound": lambda: _all_bound(cluster, job, count),
            "running": lambda: _all_running(cluster, job, count),
            "page": lambda: _row_state(driver, job) == "Running",
        }
        for name, check in checks.items():
            if name not in seen and check():
                seen[name] = now
        time.sleep(0.05)
    assert len(seen) == 3, f"timed out; seen {sorted(seen)}\n{cluster.diagnose(job)}"
    return seen


def test_without_a_token_the_browser_gets_401_and_no_data(
    served: tuple[Cluster, str, str], browser: Any, tmp_path: Path
) -> None:
    cluster, base, _ = served
    cluster.create(_runtime("plain"))
    cluster.create(_trainjob("private-job", "plain", 1, "1"))
    browser.get(f"{base}/ui/jobs")
    assert "private-job" not in browser.page_source and "Sign in" in browser.page_source
    browser.get(f"{base}/ui/login#token=wrong-token")
    wait_for(lambda: "not this control plane" in browser.page_source, 10, "the refusal")
    assert "private-job" not in browser.page_source
    browser.save_screenshot(str(_shots(tmp_path) / "login-refused.png"))


def test_a_waiting_gang_turns_running_live_and_kueue_usage_shows(
    served: tuple[Cluster, str, str], browser: Any, tmp_path: Path
) -> None:
    cluster, base, token = served
    shots = _shots(tmp_path)
    cluster.create(_runtime("plain"))
    cluster.create(
        _runtime("gang", "scheduler-plugins-scheduler", {"coscheduling": {"scheduleTimeoutSeconds": 600}})
    )
    for obj in _kueue_objects():
        cluster.create(obj)
    cluster.create(_trainjob("blocker", "plain", 2, "2"))
    cluster.create(_trainjob("queued", "plain", 1, "1", queue="lq-a"))
    wait_for(
        lambda: _all_running(cluster, "blocker", 2) and _all_running(cluster, "queued", 1), 60, "the blockers"
    )
    cluster.create(_trainjob("gang", "gang", 2, "3"))

    browser.get(f"{base}/ui/login#token={token}")
    wait_for(lambda: browser.current_url.endswith("/ui/jobs"), 15, "the sign-in")
    wait_for(lambda: _row_state(browser, "gang") == "Waiting", 30, "the gang to show as Waiting")
    row = browser.find_element("id", "job-default-gang").text
    assert "Unschedulable" in row and "0/2 bound" in row, row  # the reason, with its numbers
    browser.save_screenshot(str(shots / "jobs-waiting.png"))

    cluster.store.delete(catalog.TRAINJOBS, "default", "blocker")
    seen = _first_times(cluster, browser, "gang", 2, timeout=60)
    print(
        f"gang pods bound -> running {seen['running'] - seen['bound']:.2f}s, "
        f"bound -> page shows Running {seen['page'] - seen['bound']:.2f}s"
    )
    assert seen["page"] - seen["bound"] <= 2.0, f"the page showed Running only {seen} (monotonic seconds)"
    browser.save_screenshot(str(shots / "jobs-running.png"))

    browser.get(f"{base}/ui/queues")
    usage = browser.find_element("id", "kueue-team-a").text
    assert "1 / 4" in usage and "queued" in usage, usage
    browser.save_screenshot(str(shots / "queues.png"))
    for view in ("cluster", "timeline", "jobs/default/gang"):
        browser.get(f"{base}/ui/{view}")
        assert "gang" in browser.page_source
        browser.save_screenshot(str(shots / f"{view.replace('/', '-')}.png"))
