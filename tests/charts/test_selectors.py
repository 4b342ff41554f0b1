"""Which pods the chart's selectors pick: webhook pods, and nothing else, ever.

The Deployment's selector is immutable once released (a change fails every `helm upgrade`),
and the Service, the PodDisruptionBudget and the NetworkPolicy must never count or route to
a pod that is not a webhook server (an audit pod counted by the budget lets a drain take the
last webhook replica; an audit pod behind the Service answers admission calls with a refused
connection). So both selectors are pinned here, and every other pod the chart can render is
checked against them.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from tests.charts.render import NAMESPACE, RELEASE, of_kind, one, render

#: Deployment.spec.selector: immutable. It must not change after 1.0 (nor, in practice,
#: now: a release installed with another selector cannot be upgraded in place).
DEPLOYMENT_SELECTOR = {
    "app.kubernetes.io/name": "placement-webhooks",
    "app.kubernetes.io/instance": RELEASE,
}
#: What the Service, the budget, the NetworkPolicy, anti-affinity and spread select: must not
#: change after 1.0 either (a wider one counts or routes to pods that are not webhooks).
WEBHOOK_SELECTOR = {**DEPLOYMENT_SELECTOR, "app.kubernetes.io/component": "webhook"}

#: Values that render every kind of pod the chart has: the audit CronJob, the install hook,
#: the test pods, the webhook Deployment.
EVERY_POD: dict[str, Any] = {"audit": {"enabled": True}, "networkPolicy": {"enabled": True}}


@functools.cache
def _everything() -> tuple[dict[str, Any], ...]:
    return tuple(render(EVERY_POD))


def everything() -> list[dict[str, Any]]:
    return list(_everything())


def pod_templates(objects: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """``kind/name`` → the labels of the pods each object makes (or is)."""
    found: dict[str, dict[str, str]] = {}
    for obj in objects:
        spec = obj.get("spec", {})
        template = None
        if obj["kind"] in {"Deployment", "Job", "DaemonSet", "StatefulSet", "ReplicaSet"}:
            template = spec["template"]
        elif obj["kind"] == "CronJob":
            template = spec["jobTemplate"]["spec"]["template"]
        elif obj["kind"] == "Pod":
            template = obj
        if template is not None:
            found[f"{obj['kind']}/{obj['metadata']['name']}"] = dict(
                template["metadata"].get("labels") or {}
            )
    return found


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return selector.items() <= labels.items()


def test_the_deployment_selector_is_pinned() -> None:
    deployment = one(render(), "Deployment")
    assert deployment["spec"]["selector"] == {"matchLabels": DEPLOYMENT_SELECTOR}


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("Service", ("spec", "selector")),
        ("PodDisruptionBudget", ("spec", "selector", "matchLabels")),
        ("NetworkPolicy", ("spec", "podSelector", "matchLabels")),
    ],
    ids=["the Service's", "the disruption budget's", "the network policy's"],
)
def test_the_webhook_selector_is_pinned(kind: str, path: tuple[str, ...]) -> None:
    node: Any = one(everything(), kind)
    for key in path:
        node = node[key]
    assert node == WEBHOOK_SELECTOR


def test_anti_affinity_and_spread_count_only_webhook_pods() -> None:
    pod = one(render(), "Deployment")["spec"]["template"]["spec"]
    [term] = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == WEBHOOK_SELECTOR
    [spread] = pod["topologySpreadConstraints"]
    assert spread["labelSelector"]["matchLabels"] == WEBHOOK_SELECTOR


def test_webhook_pods_carry_both_selectors() -> None:
    labels = one(render(), "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert matches(DEPLOYMENT_SELECTOR, labels)
    assert matches(WEBHOOK_SELECTOR, labels)


def test_no_other_pod_matches_either_selector() -> None:
    templates = pod_templates(everything())
    others = {key: labels for key, labels in templates.items() if not key.startswith("Deploy")}
    assert any(key.startswith("CronJob/") for key in others), "the audit CronJob must render"
    for key, labels in others.items():
        assert not matches(DEPLOYMENT_SELECTOR, labels), key
        assert not matches(WEBHOOK_SELECTOR, labels), key
        assert labels["app.kubernetes.io/instance"] == RELEASE
        assert labels["app.kubernetes.io/part-of"] == "placement-webhooks"


def test_no_audit_pod_is_counted_by_the_disruption_budget() -> None:
    objects = everything()
    budget = one(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"]
    cronjob = one(objects, "CronJob")
    labels = cronjob["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    assert labels["app.kubernetes.io/component"] == "audit"
    assert not matches(budget, labels)


def test_pod_labels_from_values_do_not_change_any_selector() -> None:
    objects = render({"podLabels": {"team": "platform"}})
    assert one(objects, "Deployment")["spec"]["selector"]["matchLabels"] == DEPLOYMENT_SELECTOR
    assert one(objects, "Service")["spec"]["selector"] == WEBHOOK_SELECTOR
    labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert labels["team"] == "platform"


def test_the_metrics_service_selects_webhook_pods_in_the_release_namespace() -> None:
    objects = render({"metrics": {"serviceMonitor": {"enabled": True}}})
    [metrics] = [
        s for s in of_kind(objects, "Service") if s["metadata"]["name"].endswith("-metrics")
    ]
    assert metrics["spec"]["selector"] == WEBHOOK_SELECTOR
    assert metrics["metadata"]["namespace"] == NAMESPACE
