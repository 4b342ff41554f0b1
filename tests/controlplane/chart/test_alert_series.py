"""The API server's own series behind the chart's alerts, read from a real API server.

With the chart's configurations registered and ``serve`` stopped, every Pod create in a
workload namespace fails the calls: the fail-closed validating webhook's failure must show up
in the series ``PlacementWebhooksCallsFailing`` reads, the fail-open mutating webhook's in
the one ``PlacementWebhooksFailingOpen`` reads, each selected by the very matchers of the
rendered PrometheusRule. A rule on a series or label the API server does not export would
never fire, and no unit test can see that.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from controlplane.harness import ControlPlane, create_namespace
from controlplane.harness.apply import apply_objects
from controlplane.harness.metrics import apiserver_metrics
from controlplane.harness.process import Component
from tests.charts.render import render
from tests.controlplane.chart.conftest import FIGURES
from tests.controlplane.chart.served import refusal, rendered, serve_release
from tests.waiting import eventually

RELEASE, NAMESPACE, WORKLOADS = "al", "placement-al", "al-apps"
SELECTOR = re.compile(r"(\w+)\{([^}]*)\}")
MATCHER = re.compile(r'(\w+)\s*(=~|=)\s*"((?:[^"\\]|\\.)*)"')
SAMPLE = re.compile(r"^(\w+)\{([^}]*)\} (\S+)$")


def _alert_selector(alert: str) -> tuple[str, dict[str, tuple[str, str]]]:
    """The series and label matchers the rendered rule ``alert`` reads."""
    values = {"metrics": {"prometheusRule": {"enabled": True}}}
    objects = render(values, name=RELEASE, namespace=NAMESPACE)
    [rule] = [
        r
        for o in objects
        if o["kind"] == "PrometheusRule"
        for g in o["spec"]["groups"]
        for r in g["rules"]
        if r.get("alert") == alert
    ]
    series, matchers = SELECTOR.search(rule["expr"]).groups()  # type: ignore[union-attr]
    return series, {
        label: (op, value.replace("\\\\", "\\")) for label, op, value in MATCHER.findall(matchers)
    }


def _selected(text: str, series: str, matchers: dict[str, tuple[str, str]]) -> float:
    """The sum of the samples of ``series`` that the PromQL matchers select."""
    total = 0.0
    for line in text.splitlines():
        sample = SAMPLE.match(line)
        if not sample or sample.group(1) != series:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', sample.group(2)))
        if all(
            re.fullmatch(value, labels.get(label, "")) if op == "=~" else labels.get(label) == value
            for label, (op, value) in matchers.items()
        ):
            total += float(sample.group(3))
    return total


@pytest.mark.parametrize(
    ("alert", "policy"),
    [
        pytest.param(
            "PlacementWebhooksCallsFailing", "Fail", id="fail-closed calls are refused requests"
        ),
        pytest.param("PlacementWebhooksFailingOpen", "Ignore", id="fail-open calls fail open"),
    ],
)
def test_the_series_an_alert_reads_rises_when_the_server_is_stopped(
    plane: ControlPlane,
    admin: Any,
    tmp_path: Path,
    processes: list[Component],
    alert: str,
    policy: str,
) -> None:
    series, matchers = _alert_selector(alert)
    objects = rendered(None, RELEASE, NAMESPACE)
    policies = {
        h["name"]: h["failurePolicy"]
        for o in objects
        if o["kind"].endswith("WebhookConfiguration")
        for h in o["webhooks"]
    }
    assert policy in policies.values()
    if alert == "PlacementWebhooksCallsFailing":
        create_namespace(admin, NAMESPACE)
        create_namespace(admin, WORKLOADS)
        apply_objects(admin, objects)
        served = serve_release(plane, admin, RELEASE, NAMESPACE, tmp_path, processes=processes)
        eventually(lambda: refusal(admin, WORKLOADS, "up") == "", "answered while up", 30)
        served.component.stop()
    before = _selected(apiserver_metrics(plane.api), series, matchers)
    for attempt in range(5):
        # The mutating webhook is called first and fails open; the validating one then
        # fails closed: each create adds one sample to each series.
        assert "failed calling webhook" in refusal(admin, WORKLOADS, f"down-{attempt}")
    after = _selected(apiserver_metrics(plane.api), series, matchers)
    FIGURES.append(
        (f"{alert}: {series} over 5 Pod creates with serve stopped", f"+{after - before:g}")
    )
    assert after - before >= 5, f"{series}{matchers}: {before} -> {after}"
