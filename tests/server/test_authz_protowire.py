"""Pure pieces: the admin's access reviews, the protobuf request envelope and protobuf bodies."""

from __future__ import annotations

import pytest

from gangplane.errors import ApiError
from gangplane.server import authz, k8sproto, protowire

_field = protowire.field_bytes


def test_envelope_names_the_kind_and_keeps_the_raw_message() -> None:
    type_meta = _field(1, b"v1") + _field(2, b"ConfigMap")
    body = protowire.MAGIC + _field(1, type_meta) + _field(2, b"\x0a\x02hi") + _field(4, b"application/x")
    found = protowire.envelope(body)
    assert (found.api_version, found.kind, found.raw) == ("v1", "ConfigMap", b"\x0a\x02hi")
    assert protowire.fields(found.raw) == {1: [b"hi"]}
    assert protowire.fields(b"\x08\x96\x01") == {1: [150]}  # the protobuf docs' varint example


@pytest.mark.parametrize("bad", [b"k8s\x00\x0a\x05ab", b"k8s\x00\x08\xff", b"{}"])
def test_malformed_envelopes_are_rejected(bad: bytes) -> None:
    with pytest.raises(protowire.WireError):
        protowire.envelope(bad)


def test_reviews_allow_the_admin_everything() -> None:
    spec = {"resourceAttributes": {"verb": "create", "resource": "trainjobs"}}
    answer = authz.access_review({"kind": "SelfSubjectAccessReview", "spec": spec})
    assert answer["status"]["allowed"] is True and answer["spec"] == spec
    rules = authz.rules_review({"spec": {"namespace": "default"}})["status"]
    assert rules["resourceRules"] == [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
    assert authz.subject_review({})["status"]["userInfo"]["username"] == "gangplane-admin"


def test_protobuf_bodies_decode_to_kubernetes_json() -> None:
    from google.protobuf import message_factory

    pool = k8sproto._pool()
    secret = message_factory.GetMessageClass(pool.FindMessageTypeByName("k8s.io.api.core.v1.Secret"))()
    secret.metadata.name = "hf"
    secret.metadata.namespace = ""  # Go writes unset strings: dropped, as omitempty would
    secret.metadata.creationTimestamp.seconds = 0
    secret.data["HF_TOKEN"] = b"hf_abc"
    secret.type = "Opaque"
    type_meta = _field(1, b"v1") + _field(2, b"Secret")
    raw = secret.SerializeToString()
    body = protowire.MAGIC + _field(1, type_meta) + _field(2, raw)
    assert k8sproto.decode(body) == {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf"}, "data": {"HF_TOKEN": "aGZfYWJj"},
        "type": "Opaque",
    }  # fmt: skip
    with pytest.raises(ApiError) as unsupported:
        k8sproto.decode(protowire.MAGIC + _field(1, _field(1, b"apps/v1") + _field(2, b"Deployment")))
    assert unsupported.value.code == 415
