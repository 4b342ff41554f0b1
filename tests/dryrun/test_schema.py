"""``--schema`` messages show values as JSON, and deep objects validate without crashing."""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

pytest.importorskip("kubernetes_validate")

from webhooks.dryrun.schema import KubernetesSchema, Missing


@pytest.fixture(scope="module")
def schema() -> KubernetesSchema:
    return KubernetesSchema("1.30")


def test_no_version_means_the_newest_the_installed_package_knows() -> None:
    from kubernetes_validate import utils

    newest = max(utils.all_versions(), key=lambda v: tuple(int(p) for p in v.split(".")[:2]))
    assert KubernetesSchema().version == ".".join(newest.split(".")[:2])


def _pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


MESSAGES = [
    (
        "a boolean where a string goes",
        _pod(tolerations=[{"key": "k", "value": True}]),
        "spec.tolerations[0].value: true is not of type string or null",
    ),
    (
        "a string where an integer goes",
        _pod(tolerations=[{"key": "k", "tolerationSeconds": "300"}]),
        'spec.tolerations[0].tolerationSeconds: "300" is not of type integer or null',
    ),
    (
        "a missing required field",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
        'spec: "containers" is a required property',
    ),
    (
        "an unknown field",
        _pod(tolerationz=[]),
        'spec: Additional properties are not allowed ("tolerationz" was unexpected)',
    ),
    (
        "several unknown fields",
        _pod(b=1, a=2),
        'spec: Additional properties are not allowed ("a", "b" were unexpected)',
    ),
    (
        "an int-or-string given a list",
        _pod(
            containers=[
                {
                    "name": "c",
                    "image": "i",
                    "ports": [{"containerPort": 80}],
                    "livenessProbe": {"httpGet": {"port": [1]}},
                }
            ]
        ),
        "spec.containers[0].livenessProbe.httpGet.port: [1] is not valid under any of the given"
        " schemas",
    ),
]


@pytest.mark.parametrize(
    ("obj", "message"), [m[1:] for m in MESSAGES], ids=[m[0] for m in MESSAGES]
)
def test_messages_show_values_as_json(schema: KubernetesSchema, obj: Any, message: str) -> None:
    errors = schema.errors(obj)
    assert errors is not None
    assert message in [error.message for error in errors]


def test_a_huge_or_deep_value_is_cut_in_the_message(schema: KubernetesSchema) -> None:
    deep: Any = []
    for _ in range(5_000):
        deep = [deep]
    errors = schema.errors(_pod(tolerations=[{"key": "k", "value": deep}]))
    assert errors is not None
    ((path, message, _),) = errors
    assert path == "spec.tolerations[0].value"
    assert message.endswith("… is not of type string or null")
    assert len(message) < 150


def _crd(levels: int) -> dict[str, Any]:
    props: Any = {"type": "string"}
    for _ in range(levels):
        props = {"type": "object", "properties": {"a": props}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": props},
                }
            ],
        },
    }


@pytest.mark.parametrize("levels", [40, 1_000, 4_990], ids=["shallow", "2,000 deep", "10,000 deep"])
def test_a_crd_whose_schema_nests_deep_validates_and_leaves_no_trace(
    schema: KubernetesSchema, levels: int
) -> None:
    limit, stack = sys.getrecursionlimit(), threading.stack_size()
    assert schema.errors(_crd(levels)) == []
    assert (sys.getrecursionlimit(), threading.stack_size()) == (limit, stack)


def test_an_error_deep_inside_is_found_at_its_path(schema: KubernetesSchema) -> None:
    crd = _crd(1_000)
    node = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for _ in range(999):
        node = node["properties"]["a"]
    node["type"] = 7
    errors = schema.errors(crd)
    assert errors is not None and len(errors) >= 1
    path = errors[0].path
    assert path.endswith(".properties.a.type")


ENUMS = [
    (
        "a string outside the enum",
        ["Always", "Never"],
        "Sometimes",
        '"Sometimes" is not one of ["Always","Never"]',
    ),
    ("true is not 1", [1, 2], True, "true is not one of [1,2]"),
    ("1.0 is 1", [1, 2], 1.0, None),
]


@pytest.mark.parametrize(
    ("allowed", "value", "message"), [e[1:] for e in ENUMS], ids=[e[0] for e in ENUMS]
)
def test_enum_compares_as_json_and_shows_json(
    allowed: list[Any], value: Any, message: str | None
) -> None:
    import jsonschema

    from webhooks.dryrun.schema import _json_messages

    validator = _json_messages(jsonschema)({"enum": allowed})
    found = [error.message for error in validator.iter_errors(value)]
    assert found == ([message] if message else [])


FINDINGS = [
    pytest.param(
        {"apiVersion": "extensions/v1beta1", "kind": "Deployment", "spec": {"bogus": 1}},
        "error",
        [
            (
                "apiVersion",
                "extensions/v1beta1 Deployment was removed in Kubernetes 1.16; use apps/v1",
            )
        ],
        id="a removed version is one error naming the release and the replacement",
    ),
    pytest.param(
        {"apiVersion": "example.com/v1", "kind": "Widget"},
        "error",
        [
            (
                "apiVersion",
                "no schema for example.com/v1 Widget: Kubernetes 1.30 has no such kind; give its"
                " CustomResourceDefinition as an input or with --schema-location",
            )
        ],
        id="a kind no schema covers is a finding by default",
    ),
    pytest.param(
        {"apiVersion": "apps.example.com/v1", "kind": "Deployment", "spec": {"x": 1}},
        "error",
        [
            (
                "apiVersion",
                "no schema for apps.example.com/v1 Deployment: Kubernetes 1.30 has no such kind;"
                " give its CustomResourceDefinition as an input or with --schema-location",
            )
        ],
        id="a custom resource named like a built-in kind is not checked as the built-in",
    ),
    pytest.param(
        {"apiVersion": "example.com/v1", "kind": "Widget"}, "skip", None, id="skip checks nothing"
    ),
    pytest.param({"kind": "Widget"}, "error", None, id="no apiVersion: not a schema question"),
    pytest.param(
        {"apiVersion": "v1", "kind": "List", "items": []},
        "error",
        None,
        id="kubectl's List is read by kubectl, not the API server",
    ),
]


@pytest.mark.parametrize(("obj", "missing", "expected"), FINDINGS)
def test_removed_and_unknown_kinds(
    obj: dict[str, Any], missing: Missing, expected: list[tuple[str, str]] | None
) -> None:
    errors = KubernetesSchema("1.30", missing=missing).errors(obj)
    if expected is None:
        assert errors is None
    else:
        assert errors is not None
        assert [(e.path, e.message) for e in errors] == expected
        assert {e.action for e in errors} == {"enforce"}


def test_warn_reports_a_missing_schema_as_a_warning() -> None:
    errors = KubernetesSchema("1.30", missing="warn").errors(
        {"apiVersion": "example.com/v1", "kind": "Widget"}
    )
    assert errors is not None
    assert [e.action for e in errors] == ["warn"]


def test_a_removal_later_than_the_chosen_release_is_still_checked_by_its_schema() -> None:
    # flowcontrol v1beta2 went away in 1.29; a 1.28 cluster serves it, so its schema applies.
    obj = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta2",
        "kind": "FlowSchema",
        "metadata": {"name": "f"},
        "spec": {"priorityLevelConfiguration": {"name": "p"}, "bogus": 1},
    }
    earlier = KubernetesSchema("1.28").errors(obj)
    assert earlier is not None
    assert [e.path for e in earlier] == ["spec.bogus"]
    later = KubernetesSchema("1.29").errors(obj)
    assert later is not None
    assert [e.message for e in later] == [
        "flowcontrol.apiserver.k8s.io/v1beta2 FlowSchema was removed in Kubernetes 1.29; use"
        " flowcontrol.apiserver.k8s.io/v1"
    ]
