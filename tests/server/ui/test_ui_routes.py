"""The dashboard's routes on the real app: the login gate (401 without data), every view rendering the
store's objects, fragments, logs, and the live event stream."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from objects import cluster_queue, job, jobset, local_queue, node, pod, put, trainjob, workload
from starlette.testclient import TestClient

from gangplane.server.app import create_app
from gangplane.server.ui.session import COOKIE, session_value
from gangplane.store import MemoryStore, catalog

TOKEN = "ui-test-token"
SECRET_NAME = "secret-gang"


@pytest.fixture
def filled(store: MemoryStore) -> MemoryStore:
    put(store, catalog.NODES, node("node-0"))
    put(store, catalog.TRAINJOBS, trainjob(SECRET_NAME, waiting=("GangUnschedulable", "2 pods need 4 cpu")))
    put(store, catalog.JOBSETS, jobset(SECRET_NAME))
    put(store, catalog.PODS, pod(SECRET_NAME, 0))
    put(store, catalog.CLUSTER_QUEUES, cluster_queue("team-a", "4"))
    put(store, catalog.LOCAL_QUEUES, local_queue("lq-a", "team-a"))
    put(store, catalog.WORKLOADS, workload("w1", "lq-a", "3", admitted_to="team-a"))
    return store


@pytest.fixture
def app_client(filled: MemoryStore, logs_dir: Path) -> Iterator[TestClient]:
    app = create_app(filled, token=TOKEN, logs_dir=logs_dir)
    with TestClient(app, base_url="https://testserver", follow_redirects=False) as c:
        yield c


def _signed_in(client: TestClient) -> TestClient:
    client.cookies.set(COOKIE, session_value(TOKEN), domain="testserver.local", path="/ui")
    return client


PAGES = [
    "/ui/jobs",
    "/ui/cluster",
    "/ui/queues",
    "/ui/timeline",
    f"/ui/jobs/default/{SECRET_NAME}",
    "/ui/jobs/fragment",
    "/ui/events?watch=pods",
    f"/ui/pods/default/{SECRET_NAME}-node-0-0/log",
]


@pytest.mark.parametrize("path", PAGES)
@pytest.mark.parametrize(
    "auth",
    [{}, {"Authorization": "Bearer wrong"}, {"Cookie": f"{COOKIE}=forged"}, {"Cookie": f"{COOKIE}={TOKEN}"}],
)
def test_without_the_token_every_page_is_401_and_shows_no_data(
    app_client: TestClient, path: str, auth: dict[str, str]
) -> None:
    response = app_client.get(path, headers=auth)
    assert response.status_code == 401
    assert (
        SECRET_NAME not in response.text and "team-a" not in response.text and "node-0" not in response.text
    )
    assert "name=token" in response.text  # the login form, nothing else


def test_a_wrong_token_does_not_sign_in(app_client: TestClient) -> None:
    response = app_client.post("/ui/login", data={"token": "nope"})
    assert response.status_code == 401 and SECRET_NAME not in response.text
    assert "set-cookie" not in response.headers


def test_the_token_signs_in_with_a_secure_httponly_cookie_that_is_not_the_token(
    app_client: TestClient,
) -> None:
    response = app_client.post("/ui/login", data={"token": TOKEN})
    assert response.status_code == 303 and response.headers["location"] == "/ui/"
    cookie = response.headers["set-cookie"]
    for attribute in ("Secure", "HttpOnly", "SameSite=Strict", "Path=/ui"):
        assert attribute in cookie
    assert TOKEN not in cookie
    page = app_client.get("/ui/jobs")  # the client keeps the cookie (https base URL)
    assert page.status_code == 200 and SECRET_NAME in page.text


def test_the_session_cookie_is_no_api_credential(app_client: TestClient) -> None:
    _signed_in(app_client)
    assert app_client.get("/api/v1/pods").status_code == 401


def test_the_bearer_token_opens_the_dashboard_too(app_client: TestClient) -> None:
    response = app_client.get("/ui/jobs", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200


def test_static_assets_and_the_login_page_need_no_token(app_client: TestClient) -> None:
    assert app_client.get("/ui/static/htmx.min.js").status_code == 200
    assert app_client.get("/ui/static/ui.css").status_code == 200
    assert app_client.get("/ui/login").status_code == 401  # the form, with no data


def test_jobs_page_shows_the_waiting_gang_and_its_reason(app_client: TestClient) -> None:
    text = _signed_in(app_client).get("/ui/jobs").text
    assert SECRET_NAME in text and "GangUnschedulable" in text and "2 pods need 4 cpu" in text
    assert "0/2 bound" in text
    assert "content-security-policy" in app_client.get("/ui/jobs").headers


def test_every_view_and_fragment_renders(app_client: TestClient) -> None:
    _signed_in(app_client)
    for view in ("jobs", "cluster", "queues", "timeline"):
        for path in (f"/ui/{view}", f"/ui/{view}/fragment"):
            response = app_client.get(path)
            assert response.status_code == 200, (path, response.text[:500])
    assert app_client.get("/ui/nope").status_code == 404


def test_queues_page_shows_usage_of_the_cluster_queue(app_client: TestClient) -> None:
    text = _signed_in(app_client).get("/ui/queues").text
    assert "team-a" in text and "3 / 4" in text and "w1" in text


def test_job_detail_shows_the_tree(app_client: TestClient) -> None:
    text = _signed_in(app_client).get(f"/ui/jobs/default/{SECRET_NAME}").text
    assert "JobSet" in text and f"{SECRET_NAME}-node-0-0" in text and "not bound" in text
    assert app_client.get("/ui/jobs/default/missing").status_code == 404


def test_pod_log_tail(app_client: TestClient, logs_dir: Path) -> None:
    path = logs_dir / "default" / f"{SECRET_NAME}-node-0-0" / "node.log"
    path.parent.mkdir(parents=True)
    path.write_text("".join(f"line {i}\n" for i in range(500)))
    text = _signed_in(app_client).get(f"/ui/pods/default/{SECRET_NAME}-node-0-0/log").text
    assert text.startswith("line 300\n") and text.endswith("line 499\n")


def test_event_stream_sends_one_coalesced_change(filled: MemoryStore, app_client: TestClient) -> None:
    _signed_in(app_client)

    seen_data = threading.Event()

    def burst() -> None:
        # Bursts until the stream has spoken: on a loaded machine the stream's watch may open after the
        # first burst, which it would then never see (a fixed delay made this test hang).
        for round_ in range(100):
            time.sleep(0.1)
            for i in range(20):
                put(filled, catalog.PODS, pod("burst", round_ * 20 + i))
            if seen_data.wait(0.2):
                return

    threading.Thread(target=burst, daemon=True).start()
    with app_client.stream("GET", "/ui/events?watch=pods,trainjobs") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        seen = []
        for line in lines:
            seen.append(line)
            if line.startswith("data:"):
                break
    seen_data.set()
    assert "event: changed" in seen
    assert int(seen[-1].split(":")[1]) >= 1


def test_the_recorder_puts_evicted_pods_on_the_timeline(filled: MemoryStore, app_client: TestClient) -> None:
    _signed_in(app_client)
    put(filled, catalog.JOBS, job(SECRET_NAME))
    put(filled, catalog.PODS, pod(SECRET_NAME, 7, node_name="node-0", phase="Running"))
    app_client.get("/ui/timeline")  # the first look starts the recorder
    time.sleep(0.3)
    filled.delete(catalog.PODS, "default", f"{SECRET_NAME}-node-0-7")
    deadline = time.monotonic() + 10
    while "taken off node-0" not in (text := app_client.get("/ui/timeline?kind=evicted").text):
        assert time.monotonic() < deadline, text[-2000:]
        time.sleep(0.1)


def test_pages_stay_small_and_quick_with_1000_trainjobs_and_5000_pods(
    store: MemoryStore, logs_dir: Path
) -> None:
    for i in range(1000):
        put(
            store, catalog.TRAINJOBS, trainjob(f"j{i}", waiting=("PodsUnschedulable", "x") if i % 2 else None)
        )
        for k in range(5):
            put(store, catalog.PODS, pod(f"j{i}", k))
    app = create_app(store, token=TOKEN, logs_dir=logs_dir)
    with TestClient(
        app, base_url="https://testserver", headers={"Authorization": f"Bearer {TOKEN}"}
    ) as client:
        for path in ("/ui/jobs/fragment", "/ui/jobs/fragment?state=Waiting&page=4", "/ui/timeline/fragment"):
            start = time.perf_counter()
            response = client.get(path)
            elapsed = time.perf_counter() - start
            assert response.status_code == 200 and elapsed < 3.0, (path, elapsed)
            assert len(response.content) < 600_000, (path, len(response.content))
        assert response.text.count("<li class=") <= 300  # the timeline keeps the 300 most recent
        assert client.get("/ui/jobs/fragment").text.count('<tr id="job-') == 100  # one page
