"""``availability``: replicas, the disruption budget, the priority class and readiness."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.install.doctor.fakeclient import FakeClient, installation, status
from webhooks.install.doctor import availability
from webhooks.install.doctor.findings import Status

DEPLOYMENT = ("GET", "/apis/apps/v1/namespaces/placement-webhooks/deployments/placement-webhooks")
BUDGETS = ("GET", "/apis/policy/v1/namespaces/placement-webhooks/poddisruptionbudgets")
LABELS = {
    "app.kubernetes.io/name": "placement-webhooks",
    "app.kubernetes.io/instance": "placement-webhooks",
    "app.kubernetes.io/component": "webhook",
}
FAIL_CLOSED = (
    {
        "kind": "ValidatingWebhookConfiguration",
        "webhooks": [{"name": "validate.x", "failurePolicy": "Fail"}],
    },
)
FAIL_OPEN = (
    {
        "kind": "MutatingWebhookConfiguration",
        "webhooks": [{"name": "mutate.x", "failurePolicy": "Ignore"}],
    },
)


def deployment(
    replicas: int = 2, ready: int | None = None, priority: str = "system-cluster-critical"
) -> dict[str, Any]:
    """The chart's Deployment, as far as the check reads it."""
    spec: dict[str, Any] = {"priorityClassName": priority} if priority else {}
    return {
        "spec": {
            "replicas": replicas,
            "template": {"metadata": {"labels": dict(LABELS)}, "spec": spec},
        },
        "status": {"readyReplicas": replicas if ready is None else ready},
    }


def budget(
    name: str = "placement-webhooks", selector: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": selector if selector is not None else dict(LABELS)},
            **spec,
        },
    }


def _check(
    found: dict[str, Any],
    budgets: list[dict[str, Any]],
    configurations: tuple[dict[str, Any], ...] = FAIL_CLOSED,
) -> list[Any]:
    client = FakeClient({DEPLOYMENT: (200, found), BUDGETS: (200, {"items": budgets})})
    return availability.check(installation(client, configurations=configurations))


@pytest.mark.parametrize(
    ("found", "budgets", "configurations", "expected"),
    [
        pytest.param(
            deployment(),
            [budget(minAvailable=1)],
            FAIL_CLOSED,
            [Status.OK] * 4,
            id="the chart's defaults are all ok",
        ),
        pytest.param(
            deployment(replicas=1),
            [],
            FAIL_CLOSED,
            [Status.FAIL, Status.OK, Status.OK],
            id="one replica behind a fail-closed webhook fails",
        ),
        pytest.param(
            deployment(replicas=1),
            [],
            FAIL_OPEN,
            [Status.WARN, Status.OK, Status.OK],
            id="one replica behind fail-open webhooks only is a warning",
        ),
        pytest.param(
            deployment(replicas=2),
            [budget(minAvailable=2)],
            FAIL_CLOSED,
            [Status.OK, Status.FAIL, Status.OK, Status.OK],
            id="a budget with minAvailable equal to the replicas fails: drains deadlock",
        ),
        pytest.param(
            deployment(replicas=3),
            [budget(minAvailable="100%")],
            FAIL_CLOSED,
            [Status.OK, Status.FAIL, Status.OK, Status.OK],
            id="minAvailable 100% blocks every eviction too",
        ),
        pytest.param(
            deployment(replicas=3),
            [budget(maxUnavailable=0)],
            FAIL_CLOSED,
            [Status.OK, Status.FAIL, Status.OK, Status.OK],
            id="maxUnavailable 0 blocks every eviction",
        ),
        pytest.param(
            deployment(replicas=3),
            [budget(maxUnavailable="50%")],
            FAIL_CLOSED,
            [Status.OK] * 4,
            id="maxUnavailable 50% of 3 rounds up to 2: one stays",
        ),
        pytest.param(
            deployment(replicas=2),
            [budget(minAvailable=0)],
            FAIL_CLOSED,
            [Status.OK, Status.WARN, Status.OK, Status.OK],
            id="a budget that lets every replica go protects nothing",
        ),
        pytest.param(
            deployment(replicas=2),
            [budget(minAvailable=2, selector={"app": "other"})],
            FAIL_CLOSED,
            [Status.OK, Status.WARN, Status.OK, Status.OK],
            id="a budget selecting other pods does not count: no budget is a warning",
        ),
        pytest.param(
            deployment(priority=""),
            [budget(minAvailable=1)],
            FAIL_CLOSED,
            [Status.OK, Status.OK, Status.WARN, Status.OK],
            id="no priority class is a warning",
        ),
        pytest.param(
            deployment(ready=1),
            [budget(minAvailable=1)],
            FAIL_CLOSED,
            [Status.OK, Status.OK, Status.OK, Status.WARN],
            id="one of two ready is a warning",
        ),
        pytest.param(
            deployment(ready=0),
            [budget(minAvailable=1)],
            FAIL_CLOSED,
            [Status.OK, Status.OK, Status.OK, Status.FAIL],
            id="none ready fails",
        ),
    ],
)
def test_each_protection_is_a_finding(
    found: dict[str, Any],
    budgets: list[dict[str, Any]],
    configurations: tuple[dict[str, Any], ...],
    expected: list[Status],
) -> None:
    findings = _check(found, budgets, configurations)
    assert [f.status for f in findings] == expected
    for finding in findings:
        assert finding.check == "availability"
        assert (finding.status == Status.OK) == (finding.fix == "")


def test_a_deadlocking_budget_says_what_minimum_would_do() -> None:
    findings = _check(deployment(replicas=3), [budget(minAvailable=3)])
    [failing] = [f for f in findings if f.status == Status.FAIL]
    assert "minAvailable 3" in failing.reason
    assert "set minAvailable to at most 2" in failing.fix


def test_a_webhook_without_a_failure_policy_fails_closed_as_the_api_defaults_it() -> None:
    closed = ({"webhooks": [{"name": "validate.x"}]},)
    findings = _check(deployment(replicas=1), [], closed)
    assert findings[0].status == Status.FAIL
    assert "validate.x" in findings[0].reason


def test_a_missing_deployment_is_a_warning_naming_it() -> None:
    client = FakeClient({DEPLOYMENT: status(404, "not found")})
    [finding] = availability.check(installation(client))
    assert finding.status == Status.WARN
    assert "placement-webhooks/placement-webhooks" in finding.reason


def test_unreadable_budgets_are_said_and_the_rest_is_still_judged() -> None:
    client = FakeClient({DEPLOYMENT: (200, deployment()), BUDGETS: status(403, "forbidden")})
    findings = availability.check(installation(client))
    assert [f.status for f in findings] == [Status.OK, Status.OK, Status.OK, Status.WARN]
    assert "could not be read: forbidden" in findings[-1].reason


def test_the_deployment_gather_found_is_judged_without_reading_it_again() -> None:
    found = deployment(replicas=3)
    found["metadata"] = {"name": "serving-elsewhere", "namespace": "placement-webhooks"}
    client = FakeClient({BUDGETS: (200, {"items": [budget(minAvailable=1)]})})
    gathered = replace(installation(client, configurations=FAIL_CLOSED), deployment=found)
    findings = availability.check(gathered)
    assert [f.status for f in findings] == [Status.OK] * 4
    assert findings[0].reason == "3 replicas"
    assert DEPLOYMENT not in [(method, path) for method, path, _ in client.asked]
