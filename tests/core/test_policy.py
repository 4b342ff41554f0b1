"""Rolling a policy out: actions, overrides, monitor mode and exceptions, through the chain."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests import reviews
from tests.reviews import Unreachable, container, namespace, pod, tol
from webhooks.cluster.files import StaticCluster
from webhooks.core.admission import Admission
from webhooks.core.config import ConfigError, load_config
from webhooks.core.plugin import PHASES
from webhooks.core.result import Outcome
from webhooks.core.review import parse_review
from webhooks.plugins import REGISTRY

DEDICATED = "dedicated-nodes"
GPU_TEAM = tol("dedicated", "Equal", "gpu-team", "NoSchedule")
NOW = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)
CLUSTER = StaticCluster(
    [
        namespace("ml", "gpu-team"),
        {**namespace("web"), "metadata": {"name": "web", "labels": {"env": "prod"}}},
        {**namespace("dev"), "metadata": {"name": "dev", "labels": {"env": "dev"}}},
        namespace("plain"),
    ]
)


def admit(obj: dict[str, Any], config: dict[str, Any], **kw: Any) -> Outcome:
    return reviews.decide(obj, config=config, cluster=CLUSTER, now=lambda: NOW, **kw)


def dedicated(**section: Any) -> dict[str, Any]:
    return {"plugins": {DEDICATED: {"enabled": True, **section}}}


def foreign(ns: str = "web", **labels: str) -> dict[str, Any]:
    obj = pod(namespace=ns, tolerations=[GPU_TEAM])
    obj["metadata"]["labels"].update(labels)
    return obj


# --- actions --------------------------------------------------------------------------------


def test_enforce_is_the_default_and_denies() -> None:
    outcome = admit(foreign(), dedicated())
    assert not outcome.allowed and outcome.denied_by == (DEDICATED,)
    assert (DEDICATED, "denied") in outcome.decisions


def test_warn_admits_and_warns_naming_the_toleration() -> None:
    outcome = admit(foreign(), dedicated(action="warn"))
    assert outcome.allowed
    (warning,) = outcome.warnings
    assert warning.startswith(f"{DEDICATED}: toleration dedicated=gpu-team:NoSchedule (Equal)")
    assert "warn: toleration dedicated=gpu-team" in outcome.audit_annotations[DEDICATED]
    assert (DEDICATED, "warned") in outcome.decisions
    assert [action for _, action in outcome.advisories] == ["warn"]


def test_audit_admits_without_warnings_and_keeps_it_for_the_audit_log() -> None:
    outcome = admit(foreign(), dedicated(action="audit"))
    assert outcome.allowed and outcome.warnings == ()
    assert outcome.audit_annotations[DEDICATED].startswith("audit: toleration dedicated=gpu-team")
    assert (DEDICATED, "audited") in outcome.decisions


OVERRIDES: list[tuple[str, str, str, str]] = [
    ("an override matching the namespace's labels applies", "web", "warn", "denied"),
    ("the first override that matches wins", "dev", "warn", "audited"),
    ("a namespace no override matches keeps the plugin's action", "plain", "warn", "warned"),
    ("without overrides that match, enforce stays enforce", "plain", "enforce", "denied"),
]


@pytest.mark.parametrize(
    ("ns", "base", "decision"), [c[1:] for c in OVERRIDES], ids=[c[0] for c in OVERRIDES]
)
def test_action_overrides_pick_by_namespace_labels(ns: str, base: str, decision: str) -> None:
    overrides = [
        {"namespaceSelector": {"matchLabels": {"env": "prod"}}, "action": "enforce"},
        {
            "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "Exists"}]},
            "action": "audit",
        },
    ]
    outcome = admit(foreign(ns), dedicated(action=base, actionOverrides=overrides))
    assert (DEDICATED, decision) in outcome.decisions
    assert outcome.allowed is (decision != "denied")


def test_the_first_matching_override_wins() -> None:
    overrides = [
        {"namespaceSelector": {}, "action": "audit"},
        {"namespaceSelector": {"matchLabels": {"env": "prod"}}, "action": "enforce"},
    ]
    outcome = admit(foreign("web"), dedicated(actionOverrides=overrides))
    assert outcome.allowed and (DEDICATED, "audited") in outcome.decisions


def test_an_action_never_turns_a_lookup_failure_into_an_admission() -> None:
    config = load_config(dedicated(action="audit"), REGISTRY)
    outcome = reviews.decide(foreign(), config=config, cluster=Unreachable(), phases=("validate",))
    assert not outcome.allowed and outcome.code == 500


# --- monitor mode ---------------------------------------------------------------------------


def test_monitor_mode_returns_no_patch_and_says_what_it_would_have_added() -> None:
    obj = pod(containers=[container(requests={"nvidia.com/gpu": "1"})])
    config = {
        "plugins": {
            "extended-resource-toleration": {"mutation": "monitor"},
            "default-toleration-seconds": {"enabled": False},
        }
    }
    outcome = admit(obj, config)
    assert outcome.allowed and outcome.patch == []
    note = outcome.audit_annotations["extended-resource-toleration"]
    assert "nvidia.com/gpu" in note and note.startswith("monitor, not applied: added")
    assert ("extended-resource-toleration", "monitored") in outcome.decisions


def test_the_rest_of_the_chain_sees_the_object_unchanged_under_monitor() -> None:
    obj = pod()
    config = {"plugins": {"default-toleration-seconds": {"mutation": "monitor"}}}
    outcome = admit(obj, config)
    assert outcome.patch == [] and outcome.obj == obj
    assert [p for p, _ in outcome.monitored] == ["default-toleration-seconds"]


# --- exceptions -----------------------------------------------------------------------------


def excepted(**fields: Any) -> dict[str, Any]:
    exception = {"name": "dcgm", "plugins": [DEDICATED], "namespaces": ["web"], **fields}
    return {**dedicated(), "exceptions": [exception]}


def test_a_matching_exception_admits_under_enforce_and_is_recorded() -> None:
    config = excepted(objectSelector={"matchLabels": {"app": "dcgm"}})
    outcome = admit(foreign(app="dcgm"), config)
    assert outcome.allowed
    assert outcome.excepted == (("dcgm", DEDICATED),)
    assert outcome.audit_annotations["exception"] == "dcgm"


def test_an_expired_exception_no_longer_applies_and_is_reported() -> None:
    config = excepted(
        objectSelector={"matchLabels": {"app": "dcgm"}}, expires="2026-01-01T00:00:00Z"
    )
    outcome = admit(foreign(app="dcgm"), config)
    assert not outcome.allowed
    assert ("dcgm", DEDICATED) in outcome.expired and outcome.excepted == ()


def test_an_exception_that_has_not_expired_yet_applies() -> None:
    outcome = admit(foreign(), excepted(expires="2027-01-31T00:00:00+01:00"))
    assert outcome.allowed


MATCHERS: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    ("every matcher given must match: the namespace differs", {"namespaces": ["dev"]}, {}, False),
    ("values inside one matcher are alternatives", {"namespaces": ["dev", "web"]}, {}, True),
    (
        "the object selector must match the admitted object's labels",
        {"objectSelector": {"matchLabels": {"app": "other"}}},
        {},
        False,
    ),
    (
        "a service account matches the pod's serviceAccountName in its namespace",
        {"serviceAccounts": ["web:dcgm"]},
        {"serviceAccountName": "dcgm"},
        True,
    ),
    (
        "a pod naming no service account runs as default",
        {"serviceAccounts": ["web:default"]},
        {},
        True,
    ),
    (
        "a service account of another namespace does not match",
        {"serviceAccounts": ["ml:dcgm"]},
        {"serviceAccountName": "dcgm"},
        False,
    ),
    ("users match the requester", {"users": ["kubernetes-admin"]}, {}, True),
    (
        "groups match any of the requester's groups",
        {"groups": ["nope", "system:masters"]},
        {},
        True,
    ),
    ("a group the requester is not in does not match", {"groups": ["ops"]}, {}, False),
    ("empty matchers are not given", {"users": [], "groups": []}, {}, True),
    ("an exception for every plugin", {"plugins": ["*"]}, {}, True),
    ("an exception for another plugin does not apply", {"plugins": ["runtime-class"]}, {}, False),
]


@pytest.mark.parametrize(
    ("fields", "spec", "allowed"), [c[1:] for c in MATCHERS], ids=[c[0] for c in MATCHERS]
)
def test_exception_matchers(fields: dict[str, Any], spec: dict[str, Any], allowed: bool) -> None:
    obj = foreign()
    obj["spec"].update(spec)
    assert admit(obj, excepted(**fields)).allowed is allowed


@pytest.mark.parametrize(
    ("groups", "allowed"),
    [
        pytest.param([{"a": 1}, "system:masters"], True, id="a map among the groups is skipped"),
        pytest.param([["nested"]], False, id="only lists among the groups match nothing"),
        pytest.param("system:masters", False, id="groups that are no list match nothing"),
    ],
)
def test_groups_of_any_shape_are_matched_without_an_internal_error(
    groups: Any, allowed: bool
) -> None:
    body = reviews.review(foreign())
    body["request"]["userInfo"]["groups"] = groups
    config = load_config(excepted(groups=["system:masters"]), REGISTRY)
    outcome = Admission(REGISTRY, config, CLUSTER, now=lambda: NOW).decide(
        parse_review(body), PHASES, None
    )
    assert outcome.code != 500, outcome.message
    assert outcome.allowed is allowed


def test_an_exception_skips_the_mutating_half_too() -> None:
    config = {
        **dedicated(),
        "exceptions": [{"name": "ml-free", "plugins": [DEDICATED], "namespaces": ["ml"]}],
    }
    outcome = admit(pod(namespace="ml"), config)
    assert DEDICATED not in outcome.changed_by
    assert ("ml-free", DEDICATED) in outcome.excepted


# --- config errors ----------------------------------------------------------------------------

ERRORS: list[tuple[str, dict[str, Any], str]] = [
    (
        "an action on a plugin that never denies",
        {"plugins": {"default-toleration-seconds": {"action": "warn"}}},
        "plugins.default-toleration-seconds.action: not a setting of default-toleration-seconds",
    ),
    (
        "a mutation mode on a plugin that never mutates",
        {"plugins": {"taint-toleration-rules": {"mutation": "monitor"}}},
        "plugins.taint-toleration-rules.mutation: not a setting",
    ),
    ("an unknown action", dedicated(action="deny"), f"plugins.{DEDICATED}.action: must be one of"),
    (
        "an override without an action",
        dedicated(actionOverrides=[{"namespaceSelector": {}}]),
        f"plugins.{DEDICATED}.actionOverrides[0].action: is required",
    ),
    (
        "an override with a bad selector operator",
        dedicated(
            actionOverrides=[
                {
                    "namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]},
                    "action": "warn",
                }
            ]
        ),
        f"plugins.{DEDICATED}.actionOverrides[0].namespaceSelector: matchExpressions[0].operator",
    ),
    (
        "an exception without a name",
        {"exceptions": [{"plugins": ["*"]}]},
        "exceptions[0].name: is required",
    ),
    (
        "an exception without plugins",
        {"exceptions": [{"name": "x"}]},
        "exceptions[0].plugins: is required",
    ),
    (
        "an exception naming an unknown plugin",
        {"exceptions": [{"name": "x", "plugins": ["nope"]}]},
        'exceptions[0].plugins: unknown plugin "nope"',
    ),
    (
        "an unknown matcher",
        {"exceptions": [{"name": "x", "plugins": ["*"], "labels": {}}]},
        "exceptions[0].labels: unknown key",
    ),
    (
        "an expiry that is not a time",
        {"exceptions": [{"name": "x", "plugins": ["*"], "expires": "next week"}]},
        "exceptions[0].expires: must be an RFC 3339 time",
    ),
    (
        "a service account without its namespace",
        {"exceptions": [{"name": "x", "plugins": ["*"], "serviceAccounts": ["dcgm"]}]},
        'exceptions[0].serviceAccounts: "dcgm" must be namespace:name',
    ),
    (
        "two exceptions with one name",
        {"exceptions": [{"name": "x", "plugins": ["*"]}, {"name": "x", "plugins": ["*"]}]},
        'exceptions[1].name: "x" is used twice',
    ),
]


@pytest.mark.parametrize(("data", "message"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_unusable_policy_config_names_the_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(data, REGISTRY)
    assert str(caught.value).startswith(message)


def test_enforcing_turns_every_action_into_enforce() -> None:
    config = load_config(
        dedicated(action="audit", actionOverrides=[{"namespaceSelector": {}, "action": "warn"}]),
        REGISTRY,
    )
    strict = config.enforcing()
    assert strict.plugins[DEDICATED].action == "enforce"
    assert strict.plugins[DEDICATED].action_overrides == ()
    outcome = reviews.decide(foreign(), config=strict, cluster=CLUSTER)
    assert not outcome.allowed
