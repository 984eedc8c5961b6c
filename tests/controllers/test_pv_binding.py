"""The PV controller's decisions, ported from kube-controller-manager's
``pkg/controller/volume/persistentvolume/binder_test.go`` (TestSync; case names kept) over the claim side
(the volume's phase is ``sync_volume``'s, tested separately), plus local provisioning and reclaim."""

from __future__ import annotations

from typing import Any

import pytest

from gangplane.controllers import pv_binding as pb

RETAIN, DELETE = "Retain", "Delete"


def volume(name: str, size: str, uid: str = "", claim: str = "", phase: str = "Pending", policy: str = RETAIN,
           *annotations: str, cls: str = "") -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                            "persistentVolumeReclaimPolicy": policy, "hostPath": {"path": f"/tmp/{name}"}}  # fmt: skip
    if claim:
        spec["claimRef"] = {"namespace": "default", "name": claim, "uid": uid}
    if cls:
        spec["storageClassName"] = cls
    meta = {"name": name, "annotations": {a: "yes" for a in annotations}}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def claim(name: str, uid: str, size: str, volume_name: str = "", phase: str = "Pending", *annotations: str,
          cls: str | None = "") -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if volume_name:
        spec["volumeName"] = volume_name
    if cls is not None:
        spec["storageClassName"] = cls
    meta = {"name": name, "namespace": "default", "uid": uid, "annotations": {a: "yes" for a in annotations}}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def applied(old: dict[str, Any], decision: pb.Decision) -> dict[str, Any]:
    new = decision.claim or old
    return {**new, "status": decision.claim_status or old["status"]}


BY, DONE = pb.BOUND_BY_CONTROLLER, pb.BIND_COMPLETED


@pytest.mark.parametrize(
    ("case", "volumes", "given", "bound_to", "phase", "annotations", "events"),
    [
        ("1-1 - successful bind", [volume("volume1-1", "1Gi")], claim("claim1-1", "uid1-1", "1Gi"),
         "volume1-1", "Bound", {BY, DONE}, []),
        ("1-2 - noop", [volume("volume1-2", "1Gi")], claim("claim1-2", "uid1-2", "10Gi"),
         None, "Pending", set(), ["FailedBinding"]),
        ("1-3 - reset to Pending", [volume("volume1-3", "1Gi")], claim("claim1-3", "uid1-3", "10Gi", "", "Bound"),
         None, "Pending", set(), ["FailedBinding"]),
        ("1-4 - smallest volume", [volume("volume1-4_1", "10Gi"), volume("volume1-4_2", "1Gi")],
         claim("claim1-4", "uid1-4", "1Gi"), "volume1-4_2", "Bound", {BY, DONE}, []),
        ("1-5 - prebound volume by name - success",
         [volume("volume1-5_1", "10Gi", "", "claim1-5"), volume("volume1-5_2", "1Gi")],
         claim("claim1-5", "uid1-5", "1Gi"), "volume1-5_1", "Bound", {BY, DONE}, []),
        ("1-6 - prebound volume by UID - success",
         [volume("volume1-6_1", "10Gi", "uid1-6", "claim1-6"), volume("volume1-6_2", "1Gi")],
         claim("claim1-6", "uid1-6", "1Gi"), "volume1-6_1", "Bound", {BY, DONE}, []),
        ("1-7 - prebound volume to different claim", [volume("volume1-7", "10Gi", "uid1-777", "claim1-7")],
         claim("claim1-7", "uid1-7", "1Gi"), None, "Pending", set(), ["FailedBinding"]),
        ("1-8 - complete bind after crash - PV bound",
         [volume("volume1-8", "1Gi", "uid1-8", "claim1-8", "Pending", RETAIN, BY)],
         claim("claim1-8", "uid1-8", "1Gi"), "volume1-8", "Bound", {BY, DONE}, []),
        ("1-10 - complete bind after crash - PVC bound",
         [volume("volume1-10", "1Gi", "uid1-10", "claim1-10", "Bound")],
         claim("claim1-10", "uid1-10", "1Gi", "volume1-10", "Pending", BY, DONE), "volume1-10", "Bound", {BY, DONE},
         []),
        ("2-1 - claim prebound to non-existing volume - noop", [], claim("claim2-1", "uid2-1", "10Gi", "volume2-1"),
         "volume2-1", "Pending", set(), []),
        ("2-2 - claim prebound to non-existing volume - reset status", [],
         claim("claim2-2", "uid2-2", "10Gi", "volume2-2", "Bound"), "volume2-2", "Pending", set(), []),
        ("2-3 - claim prebound to unbound volume", [volume("volume2-3", "1Gi")],
         claim("claim2-3", "uid2-3", "1Gi", "volume2-3"), "volume2-3", "Bound", {DONE}, []),
        ("2-4 - claim prebound to prebound volume by name", [volume("volume2-4", "1Gi", "", "claim2-4")],
         claim("claim2-4", "uid2-4", "1Gi", "volume2-4"), "volume2-4", "Bound", {DONE}, []),
        ("2-6 - claim prebound to already bound volume",
         [volume("volume2-6", "1Gi", "uid2-6_1", "claim2-6_1", "Bound")],
         claim("claim2-6", "uid2-6", "1Gi", "volume2-6", "Bound"), "volume2-6", "Pending", set(), []),
        ("3-1 - bound claim with missing VolumeName", [], claim("claim3-1", "uid3-1", "10Gi", "", "Bound", BY, DONE),
         None, "Lost", {BY, DONE}, ["ClaimLost"]),
        ("3-2 - bound claim with missing volume", [],
         claim("claim3-2", "uid3-2", "10Gi", "volume3-2", "Bound", BY, DONE),
         "volume3-2", "Lost", {BY, DONE}, ["ClaimLost"]),
        ("3-3 - bound claim with unbound volume", [volume("volume3-3", "10Gi")],
         claim("claim3-3", "uid3-3", "10Gi", "volume3-3", "Pending", BY, DONE), "volume3-3", "Bound", {BY, DONE}, []),
        ("3-4 - bound claim with prebound volume", [volume("volume3-4", "10Gi", "claim3-4-x", "claim3-4")],
         claim("claim3-4", "uid3-4", "10Gi", "volume3-4", "Pending", BY, DONE), "volume3-4", "Lost", {BY, DONE},
         ["ClaimMisbound"]),
        ("3-5 - bound claim with bound volume", [volume("volume3-5", "10Gi", "uid3-5", "claim3-5")],
         claim("claim3-5", "uid3-5", "10Gi", "volume3-5", "Pending", DONE), "volume3-5", "Bound", {DONE}, []),
    ],
)  # fmt: skip
def test_sync_claim_as_binder_test(
    case: str, volumes: list[dict[str, Any]], given: dict[str, Any], bound_to: str | None, phase: str,
    annotations: set[str], events: list[str],
) -> None:  # fmt: skip
    decision = pb.sync_claim(given, volumes, [], "/state/claims")
    after = applied(given, decision)
    assert after["spec"].get("volumeName") == bound_to, case
    assert after["status"]["phase"] == phase, case
    assert set(after["metadata"]["annotations"]) == annotations, case
    assert [e.reason for e in decision.events] == events, case
    if phase == "Bound" and decision.volume is not None:
        assert decision.volume["spec"]["claimRef"]["uid"] == given["metadata"]["uid"], case


def test_a_claim_status_write_changes_only_the_fields_the_controller_owns() -> None:
    """Upstream's ``updateClaimStatus`` sets the phase and, bound, the access modes and capacity (reset when
    unbound) on a copy of the status: a condition another controller set (the resizer's) stays."""
    resizing = {"type": "Resizing", "status": "True"}
    given = claim("claim", "uid", "1Gi")
    given["status"]["conditions"] = [resizing]
    bound = applied(given, pb.sync_claim(given, [volume("volume", "1Gi")], [], "/state/claims"))
    assert bound["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                               "conditions": [resizing]}  # fmt: skip
    lost = applied(bound, pb.sync_claim(bound, [], [], "/state/claims"))
    assert lost["status"] == {**bound["status"], "phase": "Lost"}
    unbound = claim("claim", "uid", "10Gi", "", "Bound")
    unbound["status"] = {**bound["status"], "phase": "Bound"}
    pending = applied(unbound, pb.sync_claim(unbound, [volume("volume", "1Gi")], [], "/state/claims"))
    assert pending["status"] == {"phase": "Pending", "conditions": [resizing]}


CLASS = {**pb.default_storage_class(), "metadata": {**pb.default_storage_class()["metadata"], "uid": "c"}}


LABELS = {"foo": "true", "bar": "false"}


def test_1_11_and_1_12_bind_only_when_the_selector_matches() -> None:
    labelled = volume("volume1-1", "1Gi")
    labelled["metadata"]["labels"] = dict(LABELS)
    selecting = claim("claim1-1", "uid1-1", "1Gi")
    selecting["spec"]["selector"] = {"matchLabels": dict(LABELS)}
    bound = pb.sync_claim(selecting, [labelled], [], "/c")  # 1-11 - bind when selector matches
    assert bound.claim is not None and bound.claim["spec"]["volumeName"] == "volume1-1"
    missed = pb.sync_claim(selecting, [volume("volume1-1", "1Gi")], [], "/c")  # 1-12 - does not match
    assert missed.claim is None and [e.reason for e in missed.events] == ["FailedBinding"]
    expressions = {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["true"]},
                                        {"key": "baz", "operator": "DoesNotExist"}]}  # fmt: skip
    assert pb.sync_claim(
        {**selecting, "spec": {**selecting["spec"], "selector": expressions}}, [labelled], [], "/c"
    ).claim
    provisioned = pb.sync_claim({**selecting, "spec": {**selecting["spec"], "storageClassName": "standard"}}, [],
                                [CLASS], "/c")  # fmt: skip
    assert provisioned.create_volume is None and provisioned.events[0].reason == "ProvisioningFailed"


def test_a_claim_without_a_class_gets_the_default_one_then_a_provisioned_volume() -> None:
    given = claim("data", "uid-d", "5Gi", cls=None)
    defaulted = pb.sync_claim(given, [], [CLASS], "/state/claims").claim
    assert defaulted is not None and defaulted["spec"]["storageClassName"] == "standard"
    decision = pb.sync_claim(defaulted, [], [CLASS], "/state/claims")
    made = decision.create_volume
    assert made is not None and made["metadata"]["name"] == "pvc-uid-d"
    assert made["spec"]["hostPath"] == {"path": "/state/claims/pvc-uid-d", "type": "DirectoryOrCreate"}
    assert made["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    assert made["spec"]["claimRef"]["uid"] == "uid-d" and made["spec"]["capacity"] == {"storage": "5Gi"}
    assert [e.reason for e in decision.events] == ["ProvisioningSucceeded"]
    rebound = pb.sync_claim(defaulted, [made], [CLASS], "/state/claims")
    assert rebound.claim is not None and rebound.claim["spec"]["volumeName"] == "pvc-uid-d"
    assert pb.provisioned_here(made) == "/state/claims/pvc-uid-d"


def test_a_claim_of_a_missing_or_foreign_class_waits_with_upstreams_event() -> None:
    missing = pb.sync_claim(claim("a", "u", "1Gi", cls="fast"), [], [CLASS], "/c")
    assert missing.events == [
        pb.Event("Warning", "ProvisioningFailed", 'storageclass.storage.k8s.io "fast" not found')
    ]
    foreign = {"metadata": {"name": "ebs"}, "provisioner": "ebs.csi.aws.com"}
    waiting = pb.sync_claim(claim("a", "u", "1Gi", cls="ebs"), [], [CLASS, foreign], "/c")
    assert (
        waiting.events[0].reason == "ExternalProvisioning" and "ebs.csi.aws.com" in waiting.events[0].message
    )
    assert waiting.create_volume is None


def test_the_newest_default_class_wins() -> None:
    older = {"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z",
                          "annotations": {pb.IS_DEFAULT_CLASS: "true"}}}  # fmt: skip
    newer = {"metadata": {"name": "b", "creationTimestamp": "2026-02-01T00:00:00Z",
                          "annotations": {pb.IS_DEFAULT_CLASS: "true"}}}  # fmt: skip
    plain = {"metadata": {"name": "c", "creationTimestamp": "2026-03-01T00:00:00Z"}}
    assert pb.default_class([older, newer, plain]) is newer
    assert pb.default_class([plain]) is None


@pytest.mark.parametrize(
    ("case", "given", "its_claim", "phase", "deleted"),
    [
        ("unbound volume becomes Available", volume("v", "1Gi"), None, "Available", False),
        ("volume pre-bound by name waits Available", volume("v", "1Gi", "", "c"), None, "Available", False),
        ("bound volume with its bound claim", volume("v", "1Gi", "u", "c", "Pending"),
         claim("c", "u", "1Gi", "v", "Bound", DONE), "Bound", False),
        ("claim gone, Retain: Released", volume("v", "1Gi", "u", "c", "Bound"), None, "Released", False),
        ("claim gone, Delete: deleted", volume("v", "1Gi", "u", "c", "Bound", DELETE), None, "Bound", True),
        ("claim replaced (other uid), Delete: deleted", volume("v", "1Gi", "u", "c", "Bound", DELETE),
         claim("c", "other", "1Gi"), "Bound", True),
    ],
)  # fmt: skip
def test_sync_volume(
    case: str, given: dict[str, Any], its_claim: dict[str, Any] | None, phase: str, deleted: bool
) -> None:
    decision = pb.sync_volume(given, its_claim)
    assert decision.delete_volume is deleted, case
    assert (decision.volume_status or given["status"])["phase"] == phase, case


def _pod(phase: str, claim_name: str = "data", namespace: str = "default") -> dict[str, Any]:
    volumes = [{"name": "v", "persistentVolumeClaim": {"claimName": claim_name}}]
    return {"metadata": {"name": "p", "namespace": namespace}, "spec": {"volumes": volumes},
            "status": {"phase": phase}}  # fmt: skip


# pkg/controller/volume/pvcprotection/pvc_protection_controller_test.go: the finalizer is added to a live claim,
# kept while a pod that has not terminated uses it, and removed once none does.
@pytest.mark.parametrize(
    ("case", "deleting", "finalizers", "pods", "wanted"),
    [
        ("add finalizer to PVC", False, [], [], [pb.PVC_PROTECTION]),
        ("already protected", False, [pb.PVC_PROTECTION], [], None),
        ("deleted PVC, no pods: finalizer removed", True, [pb.PVC_PROTECTION, "other"], [], ["other"]),
        ("deleted PVC used by a running pod: kept", True, [pb.PVC_PROTECTION], [_pod("Running")], None),
        ("deleted PVC used by a pending pod: kept", True, [pb.PVC_PROTECTION], [_pod("Pending")], None),
        ("deleted PVC used by a finished pod: removed", True, [pb.PVC_PROTECTION], [_pod("Succeeded")], []),
        ("pod of another claim", True, [pb.PVC_PROTECTION], [_pod("Running", "other")], []),
        ("pod of another namespace", True, [pb.PVC_PROTECTION], [_pod("Running", namespace="ns2")], []),
    ],
)  # fmt: skip
def test_pvc_protection(
    case: str, deleting: bool, finalizers: list[str], pods: list[dict[str, Any]], wanted: list[str] | None
) -> None:
    given = claim("data", "uid", "1Gi")
    given["metadata"]["finalizers"] = finalizers
    if deleting:
        given["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert pb.protection(given, pods) == wanted, case
