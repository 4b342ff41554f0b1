"""``endpoints``: the Services the webhooks call exist, serve the port, have ready endpoints."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.install.doctor.building import charted
from webhooks.install.doctor import endpoints
from webhooks.install.doctor.findings import Status

KEY = "placement/placement-webhooks"
SERVICE = {
    "spec": {
        "selector": {"app.kubernetes.io/name": "placement-webhooks"},
        "ports": [{"name": "https", "port": 443}],
    }
}


def _slice(*ready: bool | None) -> dict[str, Any]:
    points = []
    for value in ready:
        conditions = {} if value is None else {"ready": value}
        points.append({"addresses": ["10.0.0.1"], "conditions": conditions})
    return {"endpoints": points}


@pytest.mark.parametrize(
    ("service", "slices", "status", "words"),
    [
        pytest.param(SERVICE, (_slice(True, False),), Status.OK, "1 ready endpoint",
                     id="one ready endpoint is ok"),
        pytest.param(SERVICE, (_slice(None),), Status.OK, "1 ready endpoint",
                     id="an endpoint without a ready condition counts as ready"),
        pytest.param(SERVICE, (_slice(False, False),), Status.FAIL,
                     "no ready endpoints (2 not ready",
                     id="only endpoints that are not ready fail"),
        pytest.param(SERVICE, (), Status.FAIL,
                     "selector app.kubernetes.io/name=placement-webhooks",
                     id="no EndpointSlice at all fails naming the selector"),
        pytest.param(None, None, Status.FAIL, "does not exist", id="a missing Service fails"),
        pytest.param({"spec": {"ports": [{"port": 8443}]}}, (_slice(True),), Status.FAIL,
                     "has no port 443", id="a Service without the called port fails"),
    ],
)  # fmt: skip
def test_judging_one_service(
    service: dict[str, Any] | None,
    slices: tuple[dict[str, Any], ...] | None,
    status: Status,
    words: str,
) -> None:
    finding = endpoints.judge(KEY, service, slices, {443})
    assert finding.status is status, finding.line()
    assert words in finding.reason
    if status is Status.FAIL:
        assert finding.fix


def test_the_fix_for_no_endpoints_says_how_to_look() -> None:
    finding = endpoints.judge(KEY, SERVICE, (), {443})
    assert "kubectl -n placement get endpointslices" in finding.fix


def test_check_reads_the_services_the_configurations_call() -> None:
    installation = replace(
        charted(None),
        services={KEY: SERVICE},
        endpoint_slices={KEY: (_slice(True),)},
    )
    [finding] = endpoints.check(installation)
    assert finding.status is Status.OK
    assert KEY in finding.reason


def test_a_service_that_could_not_be_read_warns() -> None:
    installation = replace(charted(None), unread={f"service {KEY}": "HTTP 403: forbidden"})
    [finding] = endpoints.check(installation)
    assert finding.status is Status.WARN
    assert "HTTP 403" in finding.reason


def test_webhooks_called_by_url_have_no_service_to_check() -> None:
    from webhooks.install.webhookconfig import WebhookSettings, configurations

    settings = WebhookSettings(url="https://webhooks.example:8443")
    table = [{"name": "a", "validate": {"pods": ["CREATE"]}}]
    installation = replace(
        charted(None), configurations=tuple(configurations(settings, table, ["a"]))
    )
    [finding] = endpoints.check(installation)
    assert finding.status is Status.OK
    assert "called by URL" in finding.reason
