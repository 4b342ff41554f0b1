"""default-toleration-seconds mirrors DefaultTolerationSeconds (spec §2), order included."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import reviews
from tests.reviews import apply, namespace, pod, request, tol
from webhooks.cluster.files import StaticCluster
from webhooks.core.config import load_config
from webhooks.core.plugin import Context, LookupFailure
from webhooks.core.result import Outcome
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


# --- per-namespace failover time (namespaceOverrides; beyond upstream) ---------------------

NR_ANNOTATION = "placement-webhooks.io/not-ready-seconds"
UR_ANNOTATION = "placement-webhooks.io/unreachable-seconds"
NAME = "default-toleration-seconds"


def nr(seconds: int | None) -> dict[str, Any]:
    return tol(NR, "Exists", effect="NoExecute", seconds=seconds)


def ur(seconds: int | None) -> dict[str, Any]:
    return tol(UR, "Exists", effect="NoExecute", seconds=seconds)


def admit(
    obj: dict[str, Any],
    annotations: dict[str, str] | None,
    settings: dict[str, Any],
    *,
    operation: str = "CREATE",
    cluster: Any = None,
    plugins: dict[str, Any] | None = None,
) -> Outcome:
    """The whole default chain, as the server runs it, with the Namespace ``web``."""
    config = {"plugins": {NAME: settings, **(plugins or {})}}
    if cluster is None:
        cluster = StaticCluster([namespace("web", annotations=annotations)])
    kw: dict[str, Any] = {"operation": operation}
    if operation == "UPDATE":
        kw["old"] = obj
    return reviews.decide(obj, config=config, cluster=cluster, **kw)


def stored(outcome: Outcome, obj: dict[str, Any]) -> Any:
    assert outcome.allowed, outcome.message
    return apply(obj, outcome.patch)["spec"].get("tolerations")


ON = {"namespaceOverrides": True}
THIRTY = {NR_ANNOTATION: "30"}

OVERRIDES: list[
    tuple[str, dict[str, Any], dict[str, str] | None, list[dict[str, Any]] | None, Any]
] = [
    (
        "with the setting on, a new pod with no tolerations gets the namespace's 30 s",
        ON,
        THIRTY,
        None,
        [nr(30), ur(300)],
    ),
    (
        "with the setting on, the in-tree plugin's 300 s default is rewritten to 30 s in place",
        ON,
        THIRTY,
        [nr(300), ur(300)],
        [nr(30), ur(300)],
    ),
    (
        "without the setting, a new pod gets exactly upstream's defaults",
        {},
        THIRTY,
        None,
        [nr(300), ur(300)],
    ),
    (
        "without the setting, the in-tree defaults are left exactly as upstream leaves them",
        {},
        THIRTY,
        [nr(300), ur(300)],
        [nr(300), ur(300)],
    ),
    (
        "both annotations set both tolerations",
        ON,
        {NR_ANNOTATION: "30", UR_ANNOTATION: "10"},
        [nr(300), ur(300)],
        [nr(30), ur(10)],
    ),
    (
        "zero means evict at once, as a toleration of 0 s does",
        ON,
        {NR_ANNOTATION: "0", UR_ANNOTATION: "0"},
        None,
        [nr(0), ur(0)],
    ),
    (
        "a user's not-ready toleration with other seconds is left alone",
        ON,
        THIRTY,
        [nr(600)],
        [nr(600), ur(300)],
    ),
    (
        "an entry equal to the default after the user's own covering entry is the user's",
        ON,
        THIRTY,
        [nr(600), nr(300)],
        [nr(600), nr(300), ur(300)],
    ),
    (
        "an exact duplicate of the in-tree entry is the same toleration, rewritten with it",
        ON,
        THIRTY,
        [nr(300), FOO, nr(300)],
        [nr(30), FOO, nr(30), ur(300)],
    ),
    (
        "a not-ready toleration without seconds (forever) is left alone",
        ON,
        THIRTY,
        [nr(None), ur(300)],
        [nr(None), ur(300)],
    ),
    (
        "an Equal toleration with the default seconds is not the in-tree default",
        ON,
        THIRTY,
        [tol(NR, "Equal", "true", "NoExecute", 300), ur(300)],
        [tol(NR, "Equal", "true", "NoExecute", 300), ur(300)],
    ),
    (
        "a wildcard covers both, so nothing is added or rewritten",
        ON,
        THIRTY,
        [tol(operator="Exists")],
        [tol(operator="Exists")],
    ),
    (
        "the default is the configured notReadySeconds, not 300",
        {**ON, "notReadySeconds": 120},
        THIRTY,
        [nr(120), nr(300)],
        [nr(30), nr(300), ur(300)],
    ),
    (
        "a namespace asking for the default changes nothing",
        ON,
        {NR_ANNOTATION: "300"},
        [nr(300), ur(300)],
        [nr(300), ur(300)],
    ),
    (
        "a namespace without the annotations gets upstream's defaults",
        ON,
        {},
        None,
        [nr(300), ur(300)],
    ),
]


@pytest.mark.parametrize(
    ("settings", "annotations", "before", "after"),
    [case[1:] for case in OVERRIDES],
    ids=[case[0] for case in OVERRIDES],
)
def test_namespace_overrides(
    settings: dict[str, Any],
    annotations: dict[str, str] | None,
    before: list[dict[str, Any]] | None,
    after: Any,
) -> None:
    obj = pod(namespace="web", tolerations=before)
    assert stored(admit(obj, annotations, settings), obj) == after


def test_a_missing_namespace_means_no_override() -> None:
    obj = pod(namespace="web")
    outcome = admit(obj, None, ON, cluster=StaticCluster())
    assert stored(outcome, obj) == [nr(300), ur(300)]


def test_on_update_the_default_is_not_rewritten_but_what_is_added_follows_the_namespace() -> None:
    kept = pod(namespace="web", tolerations=[nr(300), ur(300)])
    assert admit(kept, THIRTY, ON, operation="UPDATE").patch == []
    older = pod(namespace="web", tolerations=[ur(300)])
    assert stored(admit(older, THIRTY, ON, operation="UPDATE"), older) == [ur(300), nr(30)]


def test_the_audit_annotation_says_where_the_seconds_came_from() -> None:
    obj = pod(namespace="web", tolerations=[nr(300)])
    outcome = admit(obj, {NR_ANNOTATION: "30", UR_ANNOTATION: "45"}, ON)
    assert outcome.audit_annotations[NAME] == (
        f"set {NR}:NoExecute to 30s from namespace annotation {NR_ANNOTATION}, for the "
        f"default 300s; added {UR}:NoExecute (Exists) for 45s from namespace annotation "
        f"{UR_ANNOTATION}"
    )


def test_each_pod_gets_its_own_copy_of_what_the_namespace_asks_for() -> None:
    """The toleration a Namespace's seconds make is built once and kept; every pod must get
    a copy of it, so a later edit of one pod's toleration reaches no other pod."""
    first = admit(pod(namespace="web"), THIRTY, ON)
    added = first.obj["spec"]["tolerations"][0] if first.obj else {}
    assert added == nr(30)
    added["tolerationSeconds"] = 1
    again = pod(namespace="web")
    assert stored(admit(again, THIRTY, ON), again) == [nr(30), ur(300)]


INVALID = [
    ("a word", "soon"),
    ("a negative number", "-5"),
    ("a fraction", "1.5"),
    ("a number with spaces", " 30"),
    ("an empty string", ""),
    ("a duration", "30s"),
    ("more seconds than tolerationSeconds holds", "9" * 20),
]


@pytest.mark.parametrize("value", [v for _, v in INVALID], ids=[i for i, _ in INVALID])
def test_an_annotation_that_is_not_a_non_negative_integer_is_ignored_reported_and_counted(
    value: str,
) -> None:
    obj = pod(namespace="web", tolerations=[nr(300), ur(300)])
    outcome = admit(obj, {NR_ANNOTATION: value, UR_ANNOTATION: "10"}, ON)
    assert stored(outcome, obj) == [nr(300), ur(10)]
    assert (
        f"ignored namespace 'web' annotation {NR_ANNOTATION}={value!r}"
        in (outcome.audit_annotations[NAME])
    )
    assert (NAME, "invalid_annotation") in outcome.decisions
    assert outcome.warnings == ()


def test_an_ignored_annotation_alone_is_reported_without_a_patch() -> None:
    obj = pod(namespace="web", tolerations=[nr(300), ur(300)])
    outcome = admit(obj, {NR_ANNOTATION: "soon"}, ON)
    assert outcome.patch == []
    assert (NAME, "invalid_annotation") in outcome.decisions
    assert "cluster default applies" in outcome.audit_annotations[NAME]


class CountingCluster(StaticCluster):
    """Counts Namespace lookups; raises on them when ``fail`` is set."""

    def __init__(self, *objects: dict[str, Any], fail: bool = False) -> None:
        super().__init__(objects)
        self.lookups = 0
        self.fail = fail

    def namespace(self, name: str) -> dict[str, Any] | None:
        self.lookups += 1
        if self.fail:
            raise LookupFailure("namespaces/web: timed out after 2s")
        return super().namespace(name)


LOOKUPS: list[tuple[str, dict[str, Any], list[dict[str, Any]] | None, int]] = [
    ("the default setting never looks the Namespace up", {}, None, 0),
    ("the setting on looks it up when something is added", ON, None, 1),
    ("the setting on looks it up when an in-tree default may be rewritten", ON, [nr(300)], 1),
    ("the setting on does not look it up when nothing could change", ON, [nr(1), ur(2)], 0),
]


@pytest.mark.parametrize(
    ("settings", "before", "lookups"),
    [case[1:] for case in LOOKUPS],
    ids=[case[0] for case in LOOKUPS],
)
def test_the_namespace_is_looked_up_only_when_needed(
    settings: dict[str, Any], before: list[dict[str, Any]] | None, lookups: int
) -> None:
    cluster = CountingCluster(namespace("web", annotations=THIRTY))
    obj = pod(namespace="web", tolerations=before)
    admit(obj, None, settings, cluster=cluster, plugins={"runtime-class": {"enabled": False}})
    assert cluster.lookups == lookups


def test_a_lookup_that_cannot_complete_refuses_the_pod() -> None:
    obj = pod(namespace="web")
    outcome = admit(obj, None, ON, cluster=CountingCluster(fail=True))
    assert not outcome.allowed
    assert outcome.code == 500
    assert "cluster lookup failed: namespaces/web: timed out" in outcome.message


@pytest.mark.parametrize(
    "before", [None, [nr(300), ur(300)]], ids=["no tolerations", "the in-tree defaults"]
)
def test_the_chain_on_its_own_output_changes_nothing(before: Any) -> None:
    obj = pod(namespace="web", tolerations=before)
    once = apply(obj, admit(obj, THIRTY, ON).patch)
    assert admit(once, THIRTY, ON).patch == []


PTR_DEFAULTS = "scheduler.alpha.kubernetes.io/defaultTolerations"
PTR_ON = {"enabled": True, "memoryPressureToleration": False}

SUPERSET: list[tuple[str, int, int]] = [
    ("a longer namespace defaultTolerations entry wins the superset merge", 60, 60),
    ("a shorter namespace defaultTolerations entry is absorbed by the override", 10, 30),
]


@pytest.mark.parametrize(
    ("default_seconds", "kept"), [c[1:] for c in SUPERSET], ids=[c[0] for c in SUPERSET]
)
def test_with_pod_toleration_restriction_the_longer_not_ready_entry_wins(
    default_seconds: int, kept: int
) -> None:
    annotations = {**THIRTY, PTR_DEFAULTS: json.dumps([nr(default_seconds)])}
    obj = pod(namespace="web", tolerations=[nr(300), ur(300)])
    outcome = admit(
        obj,
        annotations,
        ON,
        plugins={"pod-toleration-restriction": PTR_ON},
    )
    assert [t for t in stored(outcome, obj) if t["key"] == NR] == [nr(kept)]


@pytest.mark.parametrize(
    "before",
    [
        pytest.param([nr(300), nr(300)], id="the in-tree entry written twice"),
        pytest.param([nr(300), FOO, nr(300), ur(300)], id="a duplicate further down"),
    ],
)
def test_with_pod_toleration_restriction_a_duplicated_default_settles_in_one_pass(
    before: list[dict[str, Any]],
) -> None:
    """Rewriting one copy alone let the merge keep the other, longer one, and the next
    pass rewrote it again: ``mutate``'s output never read back unchanged."""
    annotations = {**THIRTY, PTR_DEFAULTS: json.dumps([FOO])}
    plugins = {"pod-toleration-restriction": PTR_ON}
    obj = pod(namespace="web", tolerations=before)
    once = apply(obj, admit(obj, annotations, ON, plugins=plugins).patch)
    assert [t for t in once["spec"]["tolerations"] if t["key"] == NR] == [nr(30)]
    assert admit(once, annotations, ON, plugins=plugins).patch == []
