"""ObjectMeta validation against apimachinery's own test tables.

Good and bad values are ported from ``staging/src/k8s.io/apimachinery/pkg/util/validation/validation_test.go``
(``TestIsDNS1123Subdomain``, ``TestIsDNS1123Label``, ``TestIsDNS1035Label``, ``TestIsQualifiedName``,
``TestIsValidLabelValue``) and ``pkg/api/validation/objectmeta_test.go`` (``TestValidateObjectMetaOwnerReferences``,
``TestValidateAnnotations``, ``TestValidateFinalizersUpdate``/name cases).
"""

from __future__ import annotations

from typing import Any

import pytest

from gangplane.api import objectmeta as om
from gangplane.errors import CauseType

SUBDOMAIN_GOOD = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "1--a--b--2",
                  "a.a", "ab.a", "abc.a", "a1.a", "a-1.a", "a--1--2--b.a", "a.1", "ab.1", "abc.1", "a1.1", "a-1.1",
                  "a--1--2--b.1", "0.a", "01.a", "012.a", "1a.a", "1-a.a", "1--a--b--2", "0.1", "01.1", "012.1",
                  "1a.1", "1-a.1", "1--a--b--2.1", "a.b.c.d.e", "aa.bb.cc.dd.ee", "1.2.3.4.5", "11.22.33.44.55",
                  "a" * 253]  # fmt: skip
SUBDOMAIN_BAD = ["", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_", "_a", "a_b",
                 "1_", "_1", "1_2", ".", "a.", ".a", "a..b", "1.", ".1", "1..2", " ", "a ", " a", "a b", "1 ", " 1",
                 "1 2", "A.a", "aB.a", "ab.A", "A1.a", "a1.A", "A.1", "aB.1", "A1.1", "1A.1", "0.A", "01.A",
                 "012.A", "1A.a", "1a.A", "A.B.C.D.E", "AA.BB.CC.DD.EE", "a.B.c.d.e", "aa.bB.cc.dd.ee", "a@b",
                 "a,b", "a_b", "a;b", "a:b", "a%b", "a?b", "a$b", "a" * 254]  # fmt: skip
LABEL_GOOD = [
    "a",
    "ab",
    "abc",
    "a1",
    "a-1",
    "a--1--2--b",
    "0",
    "01",
    "012",
    "1a",
    "1-a",
    "1--a--b--2",
    "a" * 63,
]
LABEL_BAD = ["", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_", "_a", "a_b", "1_",
             "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2", " ", "a ", " a", "a b", "1 ", " 1", "1 2",
             "a" * 64]  # fmt: skip
DNS1035_GOOD = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "a" * 63]
DNS1035_BAD = ["0", "01", "012", "1a", "1-a", "1--a--b--2", "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-",
               "-a", "1-", "-1", "_", "a_", "_a", "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1",
               "1.2", " ", "a ", " a", "a b", "1 ", " 1", "1 2", "a" * 64]  # fmt: skip
QUALIFIED_GOOD = ["simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple", "now-with-dashes/simple",
                  "now-with-dashes/now-with-dashes", "now.with.dots/now-with-dashes",
                  "now-with.dashes-and.dots/now-with-dashes", "now.with.dots/now.with.dots",
                  "now-with.dashes-and.dots/now-with.dashes-and.dots", "1-num.2-num/3-num", "1234/5678",
                  "1.2.3.4/5678", "Uppercase_Is_OK_123", "example.com/Uppercase_Is_OK_123",
                  "requests.storage-foo", "a" * 63, "a" * 253 + "/" + "b" * 63]  # fmt: skip
QUALIFIED_BAD = ["nospecialchars%^=@", "cantendwithadash-", "-cantstartwithadash-", "only/one/slash",
                 "Example.com/abc", "example_com/abc", "example.com/", "/simple", "a" * 64,
                 "a" * 254 + "/abc"]  # fmt: skip
VALUE_GOOD = ["simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234", "a" * 63, "", "A", "AB",
              "AbC", "A1", "A-1", "1-A"]  # fmt: skip
VALUE_BAD = ["nospecialchars%^=@", "Tama-nui-te-rā.is_Māori.sun", "\\backslashes\\are\\bad", "-starts-with-dash",
             "ends-with-dash-", ".starts.with.dot", "ends.with.dot.", "a" * 64]  # fmt: skip

RULES = [
    (om.dns1123_subdomain, SUBDOMAIN_GOOD, SUBDOMAIN_BAD),
    (om.dns1123_label, LABEL_GOOD, LABEL_BAD),
    (om.dns1035_label, DNS1035_GOOD, DNS1035_BAD),
    (om.qualified_name, QUALIFIED_GOOD, QUALIFIED_BAD),
    (om.label_value, VALUE_GOOD, VALUE_BAD),
]


@pytest.mark.parametrize(("rule", "good", "bad"), RULES, ids=[r[0].__name__ for r in RULES])
def test_upstream_good_and_bad_values(rule: Any, good: list[str], bad: list[str]) -> None:
    assert {v: rule(v) for v in good if rule(v)} == {}
    assert [v for v in bad if not rule(v)] == []


def ref(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": f"uid-{name}", **extra}


def test_owner_references() -> None:
    """``TestValidateObjectMetaOwnerReferences``: missing fields, List kinds, two controllers."""
    assert om.owner_errors([ref("a"), ref("b", controller=True)]) == []
    assert [e.path for e in om.owner_errors([{"apiVersion": "v1", "kind": "Pod", "name": "a"}])] == [
        "metadata.ownerReferences[0].uid"
    ]
    assert om.owner_errors([ref("a", kind="PodList")])[0].path == "metadata.ownerReferences[0].kind"
    two = om.owner_errors([ref("a", controller=True), ref("b", controller=True)])
    assert [e.detail for e in two] == ["Only one reference can have Controller set to true"]


def test_annotations_are_limited_to_256_kib_in_total() -> None:
    assert om.annotation_errors({"a": "x" * (256 * 1024 - 1)}) == []
    too_long = om.annotation_errors({"a": "x" * (256 * 1024)})
    assert [(e.type, e.path) for e in too_long] == [(CauseType.TOO_LONG, "metadata.annotations")]


def test_generate_name_is_checked_with_its_trailing_dash_masked() -> None:
    assert om.name_errors({"generateName": "job-"}, om.dns1123_subdomain) == []
    assert om.name_errors({"generateName": "a..b-"}, om.dns1123_subdomain)[0].path == "metadata.generateName"
    assert om.name_errors({}, om.dns1123_subdomain)[0].type is CauseType.REQUIRED


@pytest.mark.parametrize(
    ("metadata", "path"),
    [
        ("x", "metadata"),
        ({"ownerReferences": 5}, "metadata.ownerReferences"),
        ({"ownerReferences": [{"uid": 5}]}, "metadata.ownerReferences[0].uid"),
        ({"labels": {"a": 5}}, "metadata.labels[a]"),
        ({"finalizers": 5}, "metadata.finalizers"),
        ({"finalizers": [None]}, "metadata.finalizers[0]"),
        ({"name": 5}, "metadata.name"),
        ({"generation": "1"}, "metadata.generation"),
    ],
)
def test_type_errors_name_the_field(metadata: Any, path: str) -> None:
    assert [e.path for e in om.type_errors(metadata)] == [path]
