"""``timeouts``: within the API's 1..30 s, and the fail-closed chain of a pod create in budget."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.install.doctor.building import charted, edited
from webhooks.install.doctor import timeouts
from webhooks.install.doctor.findings import Status
from webhooks.install.webhookconfig import KINDS


def _pods_hook(kind: str, seconds: int, policy: str = "Fail", **extra: Any) -> dict[str, Any]:
    rule = {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["CREATE"],
        "resources": ["pods"],
    }
    hook = {"name": f"h{seconds}.example.com", "rules": [rule], "failurePolicy": policy}
    return {
        "kind": kind,
        "metadata": {"name": "other"},
        "webhooks": [{**hook, "timeoutSeconds": seconds, **extra}],
    }


def test_the_chart_defaults_are_ok_and_say_the_figure() -> None:
    [finding] = timeouts.check(charted(None))
    assert finding.status is Status.OK
    assert "waits at most 5 s" in finding.reason
    assert "budget 30 s" in finding.reason


@pytest.mark.parametrize(
    ("others", "status", "worst"),
    [
        pytest.param((_pods_hook(KINDS["validate"], 20),), Status.OK, "at most 20 s",
                     id="validating webhooks run in parallel: the longest counts"),
        pytest.param((_pods_hook(KINDS["mutate"], 20),), Status.OK, "at most 25 s",
                     id="a mutating one adds to the longest validating one"),
        pytest.param((_pods_hook(KINDS["mutate"], 10, reinvocationPolicy="IfNeeded"),),
                     Status.OK, "at most 25 s", id="a reinvoked mutating one counts twice"),
        pytest.param((_pods_hook(KINDS["mutate"], 30, "Ignore"),), Status.OK, "at most 5 s",
                     id="fail-open webhooks are not in the chain"),
        pytest.param((_pods_hook(KINDS["mutate"], 14, reinvocationPolicy="IfNeeded"),),
                     Status.WARN, "wait 33 s", id="over 30 s warns"),
    ],
)  # fmt: skip
def test_the_chain_of_a_pod_create(
    others: tuple[dict[str, Any], ...], status: Status, worst: str
) -> None:
    findings = timeouts.check(replace(charted(None), others=others))
    assert [f.status for f in findings] == [status], [f.line() for f in findings]
    assert worst in findings[0].reason


def test_a_timeout_outside_the_api_limit_fails() -> None:
    def slow(configuration: dict[str, Any]) -> None:
        configuration["webhooks"][0]["timeoutSeconds"] = 45

    findings = timeouts.check(edited(charted(None), KINDS["validate"], slow))
    assert findings[0].status is Status.FAIL
    assert "timeoutSeconds 45 is outside 1..30" in findings[0].reason
    assert findings[-1].status is Status.WARN, "45 s alone is over the budget"


def test_an_unset_timeout_is_the_api_default() -> None:
    assert timeouts.timeout_of({}) == 10
