"""pod-toleration-restriction: upstream PodTolerationRestriction (spec §6, current admission.go)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.reviews import apply, container, decide_alone, pod, tol
from webhooks.cluster.files import StaticCluster
from webhooks.core.config import load_config
from webhooks.core.plugin import Phase
from webhooks.core.result import Outcome
from webhooks.plugins import REGISTRY
from webhooks.plugins.pod_toleration_restriction import NAME, NOT_WHITELISTED, Settings

DEFAULTS = "scheduler.alpha.kubernetes.io/defaultTolerations"
WHITELIST = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
MEMORY = tol("node.kubernetes.io/memory-pressure", "Exists", effect="NoSchedule")
TEAM = tol("team", "Equal", "ml", "NoSchedule")
NS_DEFAULTS = json.dumps([TEAM])
CLUSTER_DEFAULT = tol("spot", "Exists", effect="NoSchedule")
BURSTABLE = [container(requests={"memory": "64Mi"})]


def decide(obj: dict[str, Any], **kw: Any) -> Outcome:
    return decide_alone(NAME, obj, **kw)


def tolerations_after(obj: dict[str, Any], **kw: Any) -> Any:
    outcome = decide(obj, phases=("mutate",), **kw)
    assert outcome.allowed, outcome.message
    return apply(obj, outcome.patch)["spec"].get("tolerations")


def test_it_is_off_by_default_and_adds_memory_pressure_once_on() -> None:
    config = load_config(None, REGISTRY)
    assert not config.plugins[NAME].enabled
    assert config.settings(NAME) == Settings(memory_pressure_toleration=True)


DEFAULT_CASES: list[tuple[str, dict[str, str] | None, Any, Any]] = [
    ("namespace defaults are added", {DEFAULTS: NS_DEFAULTS}, None, [TEAM]),
    (
        "namespace defaults come after the pod's own",
        {DEFAULTS: NS_DEFAULTS},
        [tol("x", "Exists")],
        [tol("x", "Exists"), TEAM],
    ),
    ("an absent annotation falls back to the cluster defaults", None, None, [CLUSTER_DEFAULT]),
    ("an empty annotation blocks the cluster defaults", {DEFAULTS: ""}, None, None),
    ("a null annotation is an empty list and blocks them too", {DEFAULTS: "null"}, None, None),
    (
        "a broader default replaces the pod's narrower entry (superset merge)",
        {DEFAULTS: '[{"key": "team", "operator": "Exists"}]'},
        [TEAM],
        [tol("team", "Exists")],
    ),
    (
        "the merge collapses the pod's own duplicates, as upstream always merges",
        {DEFAULTS: NS_DEFAULTS},
        [tol("team", "Exists"), tol("team", "Exists")],
        [tol("team", "Exists")],
    ),
    (
        "unknown fields and empty strings in the annotation are dropped",
        {DEFAULTS: '[{"key": "a", "operator": "Exists", "value": "", "colour": "red"}]'},
        None,
        [tol("a", "Exists")],
    ),
    (
        "no extras for a BestEffort pod without defaults: its list is left as written",
        {DEFAULTS: ""},
        [tol("team", "Exists"), tol("team", "Exists")],
        [tol("team", "Exists"), tol("team", "Exists")],
    ),
]


@pytest.mark.parametrize(
    ("annotations", "before", "after"),
    [c[1:] for c in DEFAULT_CASES],
    ids=[c[0] for c in DEFAULT_CASES],
)
def test_defaults_on_create(annotations: dict[str, str] | None, before: Any, after: Any) -> None:
    obj = pod(namespace="web", tolerations=before)
    settings = {"defaultTolerations": [CLUSTER_DEFAULT]}
    assert tolerations_after(obj, annotations=annotations, settings=settings) == after


QOS: list[tuple[str, dict[str, Any], bool]] = [
    ("a Burstable pod gets memory-pressure", pod(namespace="web", containers=BURSTABLE), True),
    ("a BestEffort pod does not", pod(namespace="web"), False),
    (
        "an extended resource alone leaves a pod BestEffort",
        pod(namespace="web", containers=[container(requests={"nvidia.com/gpu": "1"})]),
        False,
    ),
    (
        "an init container's request counts",
        pod(namespace="web", init_containers=BURSTABLE),
        True,
    ),
    (
        "the recorded class wins over the spec (status.qosClass)",
        {**pod(namespace="web", containers=BURSTABLE), "status": {"qosClass": "BestEffort"}},
        False,
    ),
    (
        "a recorded Guaranteed class gets it even with an empty spec",
        {**pod(namespace="web"), "status": {"qosClass": "Guaranteed"}},
        True,
    ),
    (
        "pod-level resources decide when present",
        pod(namespace="web", resources={"limits": {"cpu": "1"}}),
        True,
    ),
    (
        "pod-level resources without cpu or memory make it BestEffort, whatever containers ask",
        pod(
            namespace="web", containers=BURSTABLE, resources={"requests": {"hugepages-2Mi": "2Mi"}}
        ),
        False,
    ),
]


@pytest.mark.parametrize(("obj", "added"), [c[1:] for c in QOS], ids=[c[0] for c in QOS])
def test_memory_pressure_for_pods_that_are_not_best_effort(
    obj: dict[str, Any], added: bool
) -> None:
    assert (tolerations_after(obj) == [MEMORY]) is added
    assert tolerations_after(obj, settings={"memoryPressureToleration": False}) is None


def test_on_update_memory_pressure_is_merged_but_defaults_are_not() -> None:
    old = pod(namespace="web", containers=BURSTABLE)
    new = pod(namespace="web", containers=BURSTABLE)
    after = tolerations_after(new, annotations={DEFAULTS: NS_DEFAULTS}, operation="UPDATE", old=old)
    assert after == [MEMORY]


def test_on_update_a_best_effort_pod_is_left_alone() -> None:
    obj = pod(namespace="web", tolerations=[tol("a", "Exists"), tol("a", "Exists")])
    outcome = decide(obj, annotations={DEFAULTS: NS_DEFAULTS}, operation="UPDATE", old=obj)
    assert outcome.allowed and outcome.patch == []


WHITELIST_CASES: list[tuple[str, dict[str, str] | None, dict[str, Any], Any, str | None]] = [
    (
        "a toleration outside the namespace whitelist",
        {WHITELIST: '[{"key": "a", "operator": "Exists"}]'},
        {},
        [tol("b", "Exists")],
        "namespace",
    ),
    (
        "a toleration covered by the namespace whitelist",
        {WHITELIST: '[{"key": "a", "operator": "Exists"}]'},
        {},
        [tol("a", "Equal", "x", "NoSchedule")],
        None,
    ),
    (
        "the cluster whitelist applies without an annotation, and the message says so",
        None,
        {"tolerationsWhitelist": [{"key": "a", "operator": "Exists"}]},
        [tol("b", "Exists")],
        "cluster",
    ),
    (
        "an empty annotation blocks the cluster whitelist",
        {WHITELIST: ""},
        {"tolerationsWhitelist": [{"key": "a", "operator": "Exists"}]},
        [tol("b", "Exists")],
        None,
    ),
    (
        "a pod without tolerations always passes",
        {WHITELIST: '[{"key": "a", "operator": "Exists"}]'},
        {},
        [],
        None,
    ),
    (
        "merged namespace defaults must be whitelisted too",
        {
            WHITELIST: '[{"key": "a", "operator": "Exists"}]',
            DEFAULTS: '[{"key": "b", "operator": "Exists"}]',
        },
        {},
        [],
        "namespace",
    ),
]


@pytest.mark.parametrize(
    ("annotations", "settings", "tolerations", "scope"),
    [c[1:] for c in WHITELIST_CASES],
    ids=[c[0] for c in WHITELIST_CASES],
)
def test_the_whitelist(
    annotations: dict[str, str] | None, settings: dict[str, Any], tolerations: Any, scope: Any
) -> None:
    obj = pod(namespace="web", tolerations=tolerations)
    outcome = decide(obj, annotations=annotations, settings=settings)
    assert outcome.allowed is (scope is None)
    if scope is not None:
        assert outcome.message == NOT_WHITELISTED.format(scope=scope)
        assert outcome.message.endswith(f"conflict with its {scope} whitelist")


def test_the_memory_pressure_toleration_must_be_whitelisted_as_upstream_requires() -> None:
    obj = pod(namespace="web", containers=BURSTABLE, tolerations=[tol("a", "Exists")])
    outcome = decide(obj, annotations={WHITELIST: '[{"key": "a", "operator": "Exists"}]'})
    assert outcome.message == NOT_WHITELISTED.format(scope="namespace")


@pytest.mark.parametrize("phase", ["mutate", "validate"])
def test_on_update_the_whitelist_is_checked_again(phase: Phase) -> None:
    obj = pod(namespace="web", tolerations=[tol("b", "Exists")])
    outcome = decide(
        obj,
        annotations={WHITELIST: '[{"key": "a", "operator": "Exists"}]'},
        phases=(phase,),
        operation="UPDATE",
        old=obj,
    )
    assert outcome.message == NOT_WHITELISTED.format(scope="namespace")


def test_the_mutating_denial_keeps_what_the_merge_would_have_written() -> None:
    obj = pod(namespace="web", tolerations=[tol("b", "Exists")])
    outcome = decide(
        obj,
        annotations={DEFAULTS: NS_DEFAULTS, WHITELIST: '[{"key": "team", "operator": "Exists"}]'},
        phases=("mutate",),
    )
    assert not outcome.allowed
    assert apply(obj, outcome.patch)["spec"]["tolerations"] == [tol("b", "Exists"), TEAM]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{", "not valid JSON"),
        ('{"key": "a"}', "must be a JSON list of tolerations"),
        ('["a"]', "item 0 must be an object"),
        ('[{"key": 1}]', "item 0: key must be a string"),
        (
            '[{"key": "a", "tolerationSeconds": "5"}]',
            "item 0: tolerationSeconds must be an integer",
        ),
    ],
    ids=[
        "broken JSON",
        "an object instead of a list",
        "an item that is not an object",
        "a key that is not a string",
        "seconds that are not an integer",
    ],
)
@pytest.mark.parametrize("annotation", [DEFAULTS, WHITELIST], ids=["defaults", "whitelist"])
def test_an_unparsable_annotation_names_it(annotation: str, text: str, fragment: str) -> None:
    obj = pod(namespace="web", tolerations=[tol("x", "Exists")])
    outcome = decide(obj, annotations={annotation: text})
    assert not outcome.allowed
    assert outcome.message.startswith(f"namespace 'web' annotation {annotation}: ")
    assert fragment in outcome.message


def test_a_missing_namespace_gets_the_cluster_defaults() -> None:
    settings = {"defaultTolerations": [CLUSTER_DEFAULT]}
    after = tolerations_after(pod(namespace="nowhere"), settings=settings, cluster=StaticCluster())
    assert after == [CLUSTER_DEFAULT]


def test_a_toleration_entry_that_is_not_an_object_is_not_judged_by_the_whitelist() -> None:
    obj = pod(namespace="web", tolerations=["junk", tol("a", "Exists")])  # type: ignore[list-item]
    annotations = {WHITELIST: '[{"key": "a", "operator": "Exists"}]'}
    assert decide(obj, annotations=annotations, phases=("validate",)).allowed


def test_tolerations_that_are_not_a_list_are_left_for_api_validation() -> None:
    obj = pod(namespace="web", containers=BURSTABLE)
    obj["spec"]["tolerations"] = "junk"
    outcome = decide(obj, annotations={DEFAULTS: NS_DEFAULTS})
    assert outcome.allowed and outcome.patch == []


def test_configured_tolerations_are_stored_as_the_api_server_stores_them() -> None:
    config = load_config(
        {
            "plugins": {
                NAME: {"defaultTolerations": [{"key": "a", "operator": "Exists", "value": ""}]}
            }
        },
        REGISTRY,
    )
    assert config.settings(NAME).default_tolerations == ({"key": "a", "operator": "Exists"},)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (
            {"default_tolerations": ("a",)},
            'defaultTolerations: [0]: Invalid value: "a": must be a toleration object',
        ),
        (
            {"tolerations_whitelist": ({"key": "a/b/c", "operator": "Exists"},)},
            'tolerationsWhitelist: [0].key: Invalid value: "a/b/c": a qualified name',
        ),
    ],
    ids=["a toleration that is not a mapping", "a key with two slashes"],
)
def test_settings_built_in_code_are_checked_too(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        Settings(**kw)
    assert str(caught.value).startswith(message)
