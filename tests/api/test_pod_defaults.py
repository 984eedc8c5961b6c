"""Pod defaulting at create, as kube-apiserver does it. Cases follow upstream's tables:
``pkg/apis/core/v1/defaults_test.go`` (``TestSetDefaultPodSpecHostNetwork`` family, ``TestSetDefaultContainer``
image pull policy cases, ``TestSetDefaultRequestsPod``), ``plugin/pkg/admission/priority/admission_test.go``
(``TestPodAdmission``), ``plugin/pkg/admission/defaulttolerationseconds/admission_test.go``, and
``pkg/apis/core/helper/qos/qos_test.go`` (``TestComputePodQOS``)."""

from __future__ import annotations

from typing import Any

import pytest

from gangplane.api.pod_defaults import admit_pod, default_pod, qos_class
from gangplane.errors import Forbidden

CLASSES = {
    "high": {"metadata": {"name": "high"}, "value": 1000},
    "never": {"metadata": {"name": "never"}, "value": 5, "preemptionPolicy": "Never"},
    "fallback": {"metadata": {"name": "fallback"}, "value": 7, "globalDefault": True},
}


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec},
    }


def no_classes(name: str | None) -> dict[str, Any] | None:
    return None


def test_spec_defaults_and_initial_status() -> None:
    out = default_pod(pod(), no_classes)
    spec = out["spec"]
    assert {k: spec[k] for k in ("restartPolicy", "dnsPolicy", "terminationGracePeriodSeconds", "schedulerName",
                                 "enableServiceLinks", "securityContext", "serviceAccountName", "priority")} == {
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30,
        "schedulerName": "default-scheduler", "enableServiceLinks": True, "securityContext": {},
        "serviceAccountName": "default", "priority": 0}  # fmt: skip
    container = spec["containers"][0]
    assert (container["terminationMessagePath"], container["terminationMessagePolicy"]) == (
        "/dev/termination-log", "File")  # fmt: skip
    assert out["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_given_values_are_kept() -> None:
    out = default_pod(
        pod(restartPolicy="Never", schedulerName="volcano", terminationGracePeriodSeconds=0), no_classes
    )
    assert (out["spec"]["restartPolicy"], out["spec"]["schedulerName"]) == ("Never", "volcano")
    assert out["spec"]["terminationGracePeriodSeconds"] == 0


@pytest.mark.parametrize(
    ("image", "policy"),
    [("busybox", "Always"), ("busybox:latest", "Always"), ("busybox:1.36", "IfNotPresent"),
     ("registry:5000/busybox", "Always"), ("registry:5000/busybox:1", "IfNotPresent"),
     ("busybox@sha256:" + "0" * 64, "IfNotPresent")],
)  # fmt: skip
def test_image_pull_policy(image: str, policy: str) -> None:
    out = default_pod({"spec": {"containers": [{"name": "c", "image": image}]}}, no_classes)
    assert out["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_requests_default_to_limits_and_ports_to_tcp() -> None:
    container = {"name": "c", "image": "x:1", "ports": [{"containerPort": 80}],
                 "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}  # fmt: skip
    out = default_pod({"spec": {"containers": [container]}}, no_classes)
    got = out["spec"]["containers"][0]
    assert got["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
    assert got["ports"][0]["protocol"] == "TCP"
    assert out["status"]["qosClass"] == "Burstable"


# admission_test.go TestPodAdmission: (priorityClassName, classes) -> (priority, class name, policy) or error
PRIORITY = {
    "pod with no priority class and no global default": (None, {}, (0, None, None)),
    "pod with a priority class": ("high", CLASSES, (1000, "high", "PreemptLowerPriority")),
    "pod with no priority class gets the global default": (None, CLASSES, (7, "fallback", "PreemptLowerPriority")),
    "pod with a never-preempting class": ("never", CLASSES, (5, "never", "Never")),
}  # fmt: skip


@pytest.mark.parametrize(("name", "classes", "want"), PRIORITY.values(), ids=PRIORITY.keys())
def test_priority_admission(name: str | None, classes: dict[str, Any], want: tuple[Any, ...]) -> None:
    def lookup(wanted: str | None) -> dict[str, Any] | None:
        if wanted is None:
            return next((c for c in classes.values() if c.get("globalDefault")), None)
        return classes.get(wanted)

    spec = default_pod(pod(**({"priorityClassName": name} if name else {})), lookup)["spec"]
    assert (spec["priority"], spec.get("priorityClassName"), spec.get("preemptionPolicy")) == want


class Reader:
    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return CLASSES.get(name)

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return list(CLASSES.values())


def test_missing_priority_class_is_forbidden() -> None:
    with pytest.raises(Forbidden, match="no PriorityClass with name nope was found"):
        admit_pod(pod(priorityClassName="nope"), Reader())
    assert admit_pod(pod(), Reader())["spec"]["priority"] == 7


def test_default_toleration_seconds_unless_already_tolerated() -> None:
    tolerations = default_pod(pod(), no_classes)["spec"]["tolerations"]
    assert tolerations == [
        {"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]  # fmt: skip
    everything = [{"operator": "Exists"}]
    assert default_pod(pod(tolerations=everything), no_classes)["spec"]["tolerations"] == everything
    own = {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 5,
    }
    assert default_pod(pod(tolerations=[own]), no_classes)["spec"]["tolerations"][0] == own


# qos_test.go TestComputePodQOS
@pytest.mark.parametrize(
    ("resources", "qos"),
    [({}, "BestEffort"),
     ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
     ({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
     ({"requests": {"cpu": "1"}}, "Burstable"),
     ({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "Burstable")],
)  # fmt: skip
def test_qos_class(resources: dict[str, Any], qos: str) -> None:
    assert qos_class({"spec": {"containers": [{"name": "c", "resources": resources}]}}) == qos
