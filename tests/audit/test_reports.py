"""Reports built from an audit: layout, the cap and its summary, both APIs, the CRD schema."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from bench import stored as cluster
from tests import crds
from tests.audit.test_scan import DEDICATED, NOW, audit
from webhooks.audit.reports import (
    MANAGED_BY,
    OPENREPORTS,
    REPORT_APIS,
    WGPOLICYK8S,
    build,
    timestamp,
)
from webhooks.audit.results import Audit, Ref

CONFIG = "plugins:\n  dedicated-nodes: {enabled: true}\n  anti-affinity-topology: {enabled: true}\n"
EXCEPTED = (
    CONFIG + "exceptions:\n  - {name: legacy, plugins: [dedicated-nodes], namespaces: [legacy]}\n"
)


def everything() -> Audit:
    """An audit with every kind of result: failures, warnings, drift, skips, a Node."""
    intruder = [*cluster.DEFAULT_TOLERATIONS, cluster.DEDICATED_TAINT]
    return audit(
        [
            *cluster.done_when(),
            cluster.namespace("legacy"),
            cluster.pod("old", "legacy", tolerations=intruder),
            cluster.pod(
                "etcd-cp1",
                "shop",
                controller=("Node", "cp1"),
                generated=False,
                annotations={"kubernetes.io/config.mirror": "x"},
            ),
        ],
        EXCEPTED,
    )


def by_name(reports: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["kind"], r["metadata"].get("namespace", "")): r for r in reports}


@pytest.mark.parametrize("api", sorted(REPORT_APIS), ids=lambda name: f"{name} reports")
def test_every_report_validates_against_the_openreports_crd_schema(api: str) -> None:
    for body in build(everything(), REPORT_APIS[api]):
        kind = "ClusterReport" if "Cluster" in body["kind"] else "Report"
        assert crds.errors(kind, body) == [], body["metadata"]


def test_one_report_per_namespace_with_results_and_one_for_the_cluster() -> None:
    reports = by_name(build(everything(), OPENREPORTS))
    assert sorted(reports) == [
        ("ClusterReport", ""),
        ("Report", "legacy"),
        ("Report", "shop"),
    ]
    for body in reports.values():
        assert body["metadata"]["name"] == "placement-webhooks"
        assert body["metadata"]["labels"] == {MANAGED_BY[0]: MANAGED_BY[1]}
        assert body["source"] == "placement-webhooks"
        assert body["configuration"] == {"limits": {"maxResults": 500}}


def test_the_namespace_report_holds_two_failures_and_the_drift_of_three_pods() -> None:
    shop = by_name(build(everything(), OPENREPORTS))["Report", "shop"]
    assert shop["summary"] == {"pass": 0, "fail": 2, "warn": 1, "error": 0, "skip": 0}
    rows = [
        (r["policy"], r["rule"], r["result"], r["severity"], r["resources"][0]["name"])
        for r in shop["results"]
    ]
    assert rows == [
        ("anti-affinity-topology", "violation", "fail", "high", "zonal"),
        ("dedicated-nodes", "violation", "fail", "high", "intruder"),
        ("default-toleration-seconds", "drift", "warn", "low", "web"),
    ]
    drift = shop["results"][2]
    assert drift["properties"] == {"pods": "3"}
    assert drift["resources"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "web",
            "namespace": "shop",
            "uid": "deployment-shop-web",
        }
    ]
    assert drift["message"] == cluster.ADDED_DEFAULTS
    assert all(r["timestamp"] == timestamp(NOW) for r in shop["results"])


def test_the_cluster_report_holds_the_node() -> None:
    report = by_name(build(everything(), OPENREPORTS))["ClusterReport", ""]
    assert [(r["policy"], r["resources"][0]) for r in report["results"]] == [
        (
            "taint-toleration-rules",
            {"apiVersion": "v1", "kind": "Node", "name": "worker-2", "uid": "node--worker-2"},
        )
    ]
    assert "namespace" not in report["metadata"]


def test_skips_name_the_exception_and_mirror_pods_stay_out_of_reports() -> None:
    reports = by_name(build(everything(), OPENREPORTS))
    legacy = reports["Report", "legacy"]
    assert [(r["result"], r["rule"], r["properties"]) for r in legacy["results"]] == [
        ("skip", "drift", {"exception": "legacy"}),
        ("skip", "violation", {"exception": "legacy"}),
    ]
    assert all("severity" not in r for r in legacy["results"])
    shop_subjects = {r["resources"][0]["name"] for r in reports["Report", "shop"]["results"]}
    assert "etcd-cp1" not in shop_subjects


def test_the_summary_counts_every_result_when_results_are_capped() -> None:
    pods = [
        cluster.pod(f"p{i:03d}", "shop", tolerations=[]) for i in range(12)
    ]  # 12 drifting bare pods: 12 results
    intruder = cluster.pod(
        "zz-intruder", "shop", tolerations=[*cluster.DEFAULT_TOLERATIONS, cluster.DEDICATED_TAINT]
    )
    found = audit([cluster.namespace("shop"), *pods, intruder], DEDICATED)
    (report,) = build(found, OPENREPORTS, max_results=5)
    assert report["summary"] == {"pass": 0, "fail": 1, "warn": 12, "error": 0, "skip": 0}
    assert len(report["results"]) == 5
    assert report["configuration"] == {"limits": {"maxResults": 5}}
    assert report["results"][0]["resources"][0]["name"] == "zz-intruder", "what fails comes first"


def test_the_older_api_puts_source_on_each_result_and_records_no_cap() -> None:
    found = everything()
    new = by_name(build(found, OPENREPORTS))
    old = by_name(build(found, WGPOLICYK8S, max_results=2))
    assert sorted(old) == [
        ("ClusterPolicyReport", ""),
        ("PolicyReport", "legacy"),
        ("PolicyReport", "shop"),
    ]
    shop = old["PolicyReport", "shop"]
    assert shop["apiVersion"] == "wgpolicyk8s.io/v1alpha2"
    assert "source" not in shop
    assert "configuration" not in shop
    assert {r["source"] for r in shop["results"]} == {"placement-webhooks"}
    assert len(shop["results"]) == 2
    assert shop["summary"] == new["Report", "shop"]["summary"]
    for body in old.values():
        assert {r.get("severity", "high") for r in body["results"]} <= {"high", "medium", "low"}


def test_the_timestamp_keeps_nanoseconds_exactly() -> None:
    moment = dt.datetime(2026, 3, 1, 12, 0, 5, 123456, tzinfo=dt.UTC)
    assert timestamp(moment) == {"seconds": 1772366405, "nanos": 123456000}


def test_a_clean_audit_has_no_reports() -> None:
    assert build(audit([cluster.namespace("shop"), cluster.pod("web", "shop")]), OPENREPORTS) == []


def test_a_reference_names_the_object_with_its_uid() -> None:
    ref = Ref("apps/v1", "Deployment", "shop", "web", "u-1")
    assert ref.reference() == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "namespace": "shop",
        "uid": "u-1",
    }


@pytest.mark.skipif(not crds.SHARED.is_dir(), reason="no ../shared/crds next to this checkout")
@pytest.mark.parametrize("name", sorted(crds.FILES.values()))
def test_the_fixture_crds_are_the_shared_ones(name: str) -> None:
    assert (crds.CRDS / name).read_bytes() == (crds.SHARED / name).read_bytes()


def test_the_strict_schema_refuses_a_field_the_crd_does_not_have() -> None:
    body = build(everything(), OPENREPORTS)[0]
    body["results"][0]["ruel"] = "typo"
    assert any("ruel" in problem for problem in crds.errors("Report", body))
