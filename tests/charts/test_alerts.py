"""The PrometheusRule and the Grafana dashboard: opt-in, every series they read exists, every
expression parses, and the alerts an operator pages on are there."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import promql_parser
import pytest

from tests.charts.render import CHART, NAMESPACE, RELEASE, of_kind, one, render

ROOT = Path(__file__).resolve().parents[2]
RULES = {"metrics": {"prometheusRule": {"enabled": True}}}
DASHBOARD = {"metrics": {"dashboard": {"enabled": True}}}

#: Series other components export, by name as their docs list them: the API server's
#: admission metrics (stable: admission_duration; alpha: the others), kube-state-metrics,
#: and Prometheus' own ``up``.
FOREIGN = {
    "apiserver_admission_webhook_admission_duration_seconds_bucket",
    "apiserver_admission_webhook_admission_duration_seconds_count",
    "apiserver_admission_webhook_rejection_count",
    "apiserver_admission_webhook_fail_open_count",
    "kube_deployment_status_replicas_available",
    "up",
}
SERIES = re.compile(r"\b(placement_webhooks_[a-z_]+|apiserver_[a-z_]+|kube_[a-z_]+|up)\s*\{")


def ours() -> set[str]:
    """Every series name the server's code defines (counters and histograms with suffixes)."""
    text = "".join(p.read_text() for p in (ROOT / "webhooks" / "server").glob("*.py"))
    names = set(re.findall(r"placement_webhooks_[a-z_]+", text))
    return names | {f"{n}_bucket" for n in names} | {f"{n}_count" for n in names}


def rules(values: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    rule = one(render({**RULES, **(values or {})}), "PrometheusRule")
    [group] = rule["spec"]["groups"]
    return {r["alert"]: r for r in group["rules"]}


def dashboard_exprs() -> list[str]:
    data = json.loads((CHART / "files" / "dashboard.json").read_text())
    exprs = [t["expr"] for p in data["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] for v in data["templating"]["list"] if v["type"] == "query"]
    return exprs


def test_nothing_renders_unless_asked() -> None:
    objects = render()
    assert of_kind(objects, "PrometheusRule") == []
    assert not [o for o in objects if o["metadata"]["name"].endswith("-dashboard")]


def test_the_alerts_an_operator_pages_on() -> None:
    found = rules()
    assert {name: r["labels"]["severity"] for name, r in found.items()} == {
        "PlacementWebhooksDown": "critical",
        "PlacementWebhooksCallsFailing": "critical",
        "PlacementWebhooksNotScraped": "critical",
        "PlacementWebhooksFailingOpen": "warning",
        "PlacementWebhooksSlow": "warning",
        "PlacementWebhooksDenying": "warning",
        "PlacementWebhooksErrors": "warning",
        "PlacementWebhooksCertificateExpiring": "warning",
        "PlacementWebhooksCertificateExpiringSoon": "critical",
        "PlacementWebhooksCAExpiring": "warning",
        "PlacementWebhooksCAExpiringSoon": "critical",
    }
    # Down is read from outside the server: its own metrics vanish with it.
    assert "kube_deployment_status_replicas_available" in found["PlacementWebhooksDown"]["expr"]
    assert found["PlacementWebhooksNotScraped"]["expr"].startswith("absent(up{")
    assert 'error_type="calling_webhook_error"' in found["PlacementWebhooksCallsFailing"]["expr"]
    assert "< 1209600" in found["PlacementWebhooksCertificateExpiring"]["expr"]
    assert "< 172800" in found["PlacementWebhooksCertificateExpiringSoon"]["expr"]


def test_api_server_series_are_narrowed_to_this_releases_webhooks() -> None:
    expr = rules()["PlacementWebhooksFailingOpen"]["expr"]
    assert f'name=~".*\\\\.{RELEASE}\\\\.svc"' in expr
    matcher = re.compile(rf".*\.{re.escape(RELEASE)}\.svc")
    for name in (f"validate.{RELEASE}.svc", f"nodes.validate.{RELEASE}.svc"):
        assert matcher.fullmatch(name)
    assert not matcher.fullmatch(f"validate.other-{RELEASE}.svc")


def test_the_servers_series_are_narrowed_to_the_scrape_job() -> None:
    own = f'namespace="{NAMESPACE}", job="{RELEASE}-metrics"'
    assert own in rules()["PlacementWebhooksErrors"]["expr"]
    tuned = rules({"metrics": {"prometheusRule": {"enabled": True, "job": "hooks"}}})
    assert 'job="hooks"' in tuned["PlacementWebhooksErrors"]["expr"]


def test_thresholds_labels_and_placement_are_values() -> None:
    values = {
        "metrics": {
            "prometheusRule": {
                "enabled": True,
                "namespace": "monitoring",
                "labels": {"release": "kube-prometheus-stack"},
                "alertLabels": {"team": "platform"},
                "latencySeconds": 0.5,
                "deniedRatio": 0.1,
                "certificateDays": 30,
            }
        }
    }
    rule = one(render(values), "PrometheusRule")
    assert rule["metadata"]["namespace"] == "monitoring"
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    found = {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}
    assert all(r["labels"]["team"] == "platform" for r in found.values())
    assert found["PlacementWebhooksSlow"]["expr"].endswith("> 0.5")
    assert found["PlacementWebhooksDenying"]["expr"].endswith("> 0.1")
    assert found["PlacementWebhooksCertificateExpiring"]["expr"].endswith(f"< {30 * 86400}")


@pytest.mark.parametrize("source", ["alerts", "dashboard"])
def test_every_series_read_is_one_that_exists(source: str) -> None:
    exprs = [r["expr"] for r in rules().values()] if source == "alerts" else dashboard_exprs()
    used = {name for expr in exprs for name in SERIES.findall(expr)}
    assert used
    assert used <= ours() | FOREIGN, sorted(used - ours() - FOREIGN)


@pytest.mark.parametrize("source", ["alerts", "dashboard"])
def test_every_expression_parses_as_promql(source: str) -> None:
    exprs = [r["expr"] for r in rules().values()] if source == "alerts" else dashboard_exprs()
    for expr in exprs:
        concrete = expr.replace("$__rate_interval", "5m")
        concrete = re.sub(r"\$(\w+)", "x", concrete)
        if concrete.startswith("label_values("):  # Grafana's: label_values(SELECTOR, LABEL)
            concrete = concrete[len("label_values(") : concrete.rindex(",")]
        promql_parser.parse(concrete)


def test_the_dashboard_config_map_carries_the_charts_file_for_the_grafana_sidecar() -> None:
    values = {
        "metrics": {
            "dashboard": {
                "enabled": True,
                "namespace": "monitoring",
                "annotations": {"grafana_folder": "Platform"},
            }
        }
    }
    [config] = [o for o in render(values) if o["metadata"]["name"] == f"{RELEASE}-dashboard"]
    assert config["metadata"]["namespace"] == "monitoring"
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config["metadata"]["annotations"] == {"grafana_folder": "Platform"}
    shipped = json.loads((CHART / "files" / "dashboard.json").read_text())
    assert json.loads(config["data"]["placement-webhooks.json"]) == shipped


def test_the_dashboard_shows_health_the_api_servers_view_and_the_servers() -> None:
    data = json.loads((CHART / "files" / "dashboard.json").read_text())
    titles = [p["title"] for p in data["panels"]]
    assert [p["title"] for p in data["panels"] if p["type"] == "row"] == [
        "Health",
        "Seen by the API server",
        "The server",
    ]
    assert "Available replicas" in titles and "Serving certificate expires in" in titles
    ids = [p["id"] for p in data["panels"]]
    assert len(ids) == len(set(ids))
    assert data["uid"] == "placement-webhooks"
