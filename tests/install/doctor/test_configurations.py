"""``configurations``: the live webhook configurations against the render for the running config."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from tests.install.doctor.building import charted, edited
from webhooks.configfile import parse_config
from webhooks.install.doctor import configurations
from webhooks.install.doctor.findings import Status
from webhooks.install.webhookconfig import KINDS

MUTATING, VALIDATING = KINDS["mutate"], KINDS["validate"]


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(None, id="the chart's defaults match"),
        pytest.param({"webhooks": {"perPlugin": True}}, id="one webhook per plugin matches"),
        pytest.param(
            {"webhooks": {"nodes": {"enabled": True}, "mutating": {"failurePolicy": "Fail"}}},
            id="the Node webhook and a fail-closed mutating webhook match",
        ),
        pytest.param(
            {
                "webhooks": {
                    "timeoutSeconds": 3,
                    "excludeNamespaces": ["kube-system", "kube-node-lease", "monitoring"],
                    "namespaceSelector": {"matchLabels": {"team": "a"}},
                    "objectSelector": {
                        "matchExpressions": [{"key": "k8s-app", "operator": "DoesNotExist"}]
                    },
                    "mutating": {"reinvocationPolicy": "Never"},
                    "matchConditions": {
                        "skipUnchangedUpdates": False,
                        "skipUsers": ["system:serviceaccount:kube-system:cluster-autoscaler"],
                        "skipGroups": ["ops"],
                    },
                }
            },
            id="every install-time choice is read back from the objects",
        ),
        pytest.param(
            {"webhooks": {"matchConditions": {"enabled": False}}},
            id="configurations without match conditions match",
        ),
    ],
)
def test_a_chart_install_matches_its_render(values: dict[str, Any] | None) -> None:
    findings = configurations.check(charted(values))
    assert [f.status for f in findings] == [Status.OK], [f.line() for f in findings]


def test_the_install_window_policy_is_not_a_difference() -> None:
    """``helm install`` renders every webhook Ignore until its probe switches them."""
    installation = charted({"webhooks": {"mutating": {"failurePolicy": "Fail"}}}, upgrade=False)
    policies = {h["failurePolicy"] for c in installation.configurations for h in c["webhooks"]}
    assert policies == {"Ignore"}
    assert [f.status for f in configurations.check(installation)] == [Status.OK]


def _drop_rule(configuration: dict[str, Any]) -> None:
    configuration["webhooks"][0]["rules"].pop()


def _edit_condition(configuration: dict[str, Any]) -> None:
    configuration["webhooks"][0]["matchConditions"][0]["expression"] = "true"


def _lose_own_namespace(configuration: dict[str, Any]) -> None:
    expression = configuration["webhooks"][0]["namespaceSelector"]["matchExpressions"][0]
    expression["values"] = [v for v in expression["values"] if v != "placement"]


def _side_effects(configuration: dict[str, Any]) -> None:
    configuration["webhooks"][0]["sideEffects"] = "NoneOnDryRun"


def _review_versions(configuration: dict[str, Any]) -> None:
    configuration["webhooks"][0]["admissionReviewVersions"] = ["v1", "v1beta1"]


def _other_path(configuration: dict[str, Any]) -> None:
    configuration["webhooks"][0]["clientConfig"]["service"]["path"] = "/mutate"


def _rename(configuration: dict[str, Any]) -> None:
    configuration["webhooks"][0]["name"] = "other.placement-webhooks.svc"


@pytest.mark.parametrize(
    ("kind", "edit", "field"),
    [
        pytest.param(VALIDATING, _drop_rule, "rules", id="a rule removed names rules"),
        pytest.param(
            MUTATING, _edit_condition, "matchConditions", id="an edited condition names it"
        ),
        pytest.param(
            VALIDATING,
            _lose_own_namespace,
            "namespaceSelector",
            id="a selector that no longer excludes the own namespace names it",
        ),
        pytest.param(VALIDATING, _side_effects, "sideEffects", id="sideEffects changed"),
        pytest.param(
            MUTATING, _review_versions, "admissionReviewVersions", id="review versions changed"
        ),
        pytest.param(VALIDATING, _other_path, "clientConfig", id="another path is a difference"),
    ],
)
def test_an_edited_webhook_fails_naming_the_webhook_and_the_field(
    kind: str, edit: Callable[[dict[str, Any]], None], field: str
) -> None:
    [finding] = configurations.check(edited(charted(None), kind, edit))
    assert finding.status is Status.FAIL
    assert f"{kind} placement-webhooks: webhook " in finding.reason
    assert finding.reason.endswith(f"in {field}")
    assert "helm upgrade" in finding.fix


def test_a_per_plugin_webhook_with_another_reinvocation_policy_is_named() -> None:
    def never(configuration: dict[str, Any]) -> None:
        configuration["webhooks"][-1]["reinvocationPolicy"] = "Never"

    installation = charted({"webhooks": {"perPlugin": True}})
    [finding] = configurations.check(edited(installation, MUTATING, never))
    assert finding.status is Status.FAIL
    assert finding.reason.endswith("in reinvocationPolicy")


def test_a_renamed_webhook_is_both_missing_and_unexpected() -> None:
    findings = configurations.check(edited(charted(None), VALIDATING, _rename))
    assert [f.status for f in findings] == [Status.FAIL, Status.FAIL]
    assert "webhook validate.placement-webhooks.svc is missing" in findings[0].reason
    assert "other.placement-webhooks.svc is not in the render" in findings[1].reason


def test_a_missing_configuration_the_config_needs_fails() -> None:
    installation = charted(None)
    kept = tuple(c for c in installation.configurations if c["kind"] == MUTATING)
    [finding] = configurations.check(replace(installation, configurations=kept))
    assert finding.status is Status.FAIL
    assert finding.reason.startswith(f"{VALIDATING} placement-webhooks is missing")


def test_a_configuration_the_config_no_longer_needs_warns() -> None:
    installation = charted(None)
    assert installation.config is not None
    only_validating = {
        name: {"enabled": False}
        for name, plugin in installation.config.plugins.items()
        if plugin.enabled
    }
    # A config with every plugin off registers nothing: both configurations are stale.
    config = parse_config(
        ("plugins:\n" + "".join(f"  {n}: {{enabled: false}}\n" for n in only_validating)).encode(),
        "config.yaml",
    )
    findings = configurations.check(replace(installation, config=config))
    assert [f.status for f in findings] == [Status.WARN, Status.WARN]
    assert "enables no half it would register" in findings[0].reason


@pytest.mark.parametrize(
    ("change", "status", "words"),
    [
        pytest.param(
            {"configurations": ()},
            Status.FAIL,
            "no Mutating- or ValidatingWebhookConfiguration named placement-webhooks",
            id="no configurations at all fails",
        ),
        pytest.param(
            {"config": None, "config_note": "no Deployment running serve in namespace x"},
            Status.WARN,
            "the running config was not found (no Deployment running serve in namespace x)",
            id="no running config warns with why",
        ),
        pytest.param(
            {"unread": {"configurations": "HTTP 403: forbidden"}},
            Status.FAIL,
            "cannot read the webhook configurations: HTTP 403: forbidden",
            id="configurations that cannot be read fail",
        ),
    ],
)
def test_what_cannot_be_compared_is_said(
    change: dict[str, Any], status: Status, words: str
) -> None:
    [finding] = configurations.check(replace(charted(None), **change))
    assert finding.status is status
    assert words in finding.reason
    assert finding.fix
