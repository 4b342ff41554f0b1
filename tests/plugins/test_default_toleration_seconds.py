"""default-toleration-seconds mirrors DefaultTolerationSeconds (spec §2), order included."""

from __future__ import annotations

from typing import Any

import pytest

from tests.reviews import pod, request, tol
from webhooks.core.config import load_config
from webhooks.core.plugin import Context
from webhooks.plugins import REGISTRY
from webhooks.plugins.default_toleration_seconds import Settings, mutate

NR, UR = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
NR300 = tol(NR, "Exists", effect="NoExecute", seconds=300)
UR300 = tol(UR, "Exists", effect="NoExecute", seconds=300)
ALPHA_NR = tol("node.alpha.kubernetes.io/notReady", "Exists", effect="NoExecute", seconds=300)
ALPHA_UR = tol("node.alpha.kubernetes.io/unreachable", "Exists", effect="NoExecute", seconds=300)
FOO = tol("foo", "Equal", "bar", "NoSchedule")

CASES: list[tuple[str, list[dict[str, Any]] | None, list[dict[str, Any]]]] = [
    ("a pod with no tolerations gets not-ready then unreachable", None, [NR300, UR300]),
    ("an empty list gets both", [], [NR300, UR300]),
    (
        "the alpha keys are not recognised and both are appended",
        [ALPHA_NR, ALPHA_UR],
        [ALPHA_NR, ALPHA_UR, NR300, UR300],
    ),
    ("alpha not-ready only still gets both", [ALPHA_NR], [ALPHA_NR, NR300, UR300]),
    ("alpha unreachable only still gets both", [ALPHA_UR], [ALPHA_UR, NR300, UR300]),
    ("an unrelated toleration is kept first", [FOO], [FOO, NR300, UR300]),
    (
        "a not-ready toleration gets only unreachable",
        [tol(NR, "Exists", effect="NoExecute", seconds=700)],
        [tol(NR, "Exists", effect="NoExecute", seconds=700), UR300],
    ),
    (
        "an unreachable toleration gets only not-ready",
        [tol(UR, "Exists", effect="NoExecute", seconds=700)],
        [tol(UR, "Exists", effect="NoExecute", seconds=700), NR300],
    ),
    (
        "both present changes nothing",
        [
            tol(NR, "Exists", effect="NoExecute", seconds=1),
            tol(UR, "Exists", effect="NoExecute", seconds=2),
        ],
        [
            tol(NR, "Exists", effect="NoExecute", seconds=1),
            tol(UR, "Exists", effect="NoExecute", seconds=2),
        ],
    ),
    (
        "unreachable with an empty effect covers unreachable",
        [tol(UR, "Exists")],
        [tol(UR, "Exists"), NR300],
    ),
    (
        "a wildcard with an empty effect covers both",
        [tol(operator="Exists")],
        [tol(operator="Exists")],
    ),
    (
        "a wildcard restricted to NoSchedule covers neither",
        [tol(operator="Exists", effect="NoSchedule")],
        [tol(operator="Exists", effect="NoSchedule"), NR300, UR300],
    ),
    (
        "operator and value are ignored by the coverage test",
        [tol(NR, "Equal", "true", "NoExecute")],
        [tol(NR, "Equal", "true", "NoExecute"), UR300],
    ),
    (
        "a not-ready NoSchedule toleration does not cover NoExecute",
        [tol(NR, "Exists", effect="NoSchedule")],
        [tol(NR, "Exists", effect="NoSchedule"), NR300, UR300],
    ),
    (
        "invalid input such as seconds with NoSchedule passes through untouched",
        [tol("x", "Exists", effect="NoSchedule", seconds=5)],
        [tol("x", "Exists", effect="NoSchedule", seconds=5), NR300, UR300],
    ),
]


@pytest.mark.parametrize(
    ("before", "after"), [(b, a) for _, b, a in CASES], ids=[i for i, _, _ in CASES]
)
def test_forgiveness_admission(
    before: list[dict[str, Any]] | None, after: list[dict[str, Any]]
) -> None:
    obj = pod(tolerations=before)
    result = mutate(request(obj), obj, Context(Settings()))
    final = result.obj if result.obj is not None else obj
    assert final["spec"].get("tolerations", []) == after


def test_configured_seconds_are_copied_as_is() -> None:
    config = load_config(
        {
            "plugins": {
                "default-toleration-seconds": {"notReadySeconds": 60, "unreachableSeconds": 0}
            }
        },
        REGISTRY,
    )
    obj = pod()
    result = mutate(request(obj), obj, Context(config.settings("default-toleration-seconds")))
    assert result.obj is not None
    seconds = [t["tolerationSeconds"] for t in result.obj["spec"]["tolerations"]]
    assert seconds == [60, 0]


def test_the_patch_appends_to_an_existing_list_rather_than_replacing_it() -> None:
    obj = pod(tolerations=[FOO])
    result = mutate(request(obj), obj, Context(Settings()))
    assert [op["op"] for op in result.patch] == ["add", "add"]
    assert all(op["path"] == "/spec/tolerations/-" for op in result.patch)


UNREADABLE: list[tuple[str, Any]] = [
    ("a spec that is a list", []),
    ("a spec that is a string", "spec"),
    ("a spec that is a number", 7),
    ("tolerations that are an object", {"tolerations": {"key": "x"}}),
    ("tolerations that are a string", {"tolerations": "all"}),
]


@pytest.mark.parametrize("spec", [s for _, s in UNREADABLE], ids=[i for i, _ in UNREADABLE])
def test_a_spec_it_cannot_read_is_left_alone_for_validation_to_report(spec: Any) -> None:
    obj = {**pod(), "spec": spec}
    result = mutate(request(obj), obj, Context(Settings()))
    assert (result.obj, result.patch, result.violations) == (None, [], ())


def test_a_pod_without_a_spec_gets_both_tolerations_in_a_new_spec() -> None:
    obj = {k: v for k, v in pod().items() if k != "spec"}
    result = mutate(request(obj), obj, Context(Settings()))
    assert result.patch == [
        {"op": "add", "path": "/spec", "value": {"tolerations": [NR300, UR300]}}
    ]
