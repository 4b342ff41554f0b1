"""``audit --write-reports`` against a real API server with the OpenReports CRDs installed.

What only a real server decides: whether the reports pass the CRDs' own schema (structural
validation, ``fieldValidation=Strict``) and server-side apply (field manager, forced
ownership, a second apply replacing the results in place); whether stale reports are found
by label and deleted; whether lists in pages of one or two, with the server's real
``continue`` tokens, give the same audit as one big page; and whether the DRA objects a
setting needs are read through the same client (a ResourceClaimTemplate and a
ResourceClaim of a DeviceClass with an ``extendedResourceName``).

The cluster is made the way clusters drift: PodNodeSelector is off in tree, so pods that
break a namespace's node selector are stored; ExtendedResourceToleration is off, so GPU
pods lack their toleration; the Deployment's pods are made by the real ReplicaSet
controller. The policy (``configs/audit.yaml``) turns both on, and DRA claims with them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from controlplane.harness import (
    ControlPlane,
    ControlPlaneOptions,
    create_namespace,
    create_pods,
    pod_manifest,
    running,
)
from controlplane.harness.cli import Run, placement_webhooks
from controlplane.harness.objects import service_account_kubeconfig
from controlplane.harness.process import wait_until
from controlplane.harness.resources import apply, install_crds
from controlplane.release import RELEASE
from tests import crds, dra
from tests.charts.render import render
from webhooks.audit.publish import publish
from webhooks.audit.reports import MANAGED_BY, NAME, OPENREPORTS, build
from webhooks.audit.results import Audit, Ref
from webhooks.cluster.listing import ApiError, connect
from webhooks.k8s.releases import DRA_EXTENDED_RESOURCE

CONFIG = Path(__file__).parent / "configs" / "audit.yaml"
ERT = "extended-resource-toleration"
PNS = "pod-node-selector"
GROUP = "/apis/openreports.io/v1alpha1"
LABELS = {MANAGED_BY[0]: MANAGED_BY[1]}


def _gpu(name: str, **spec: Any) -> dict[str, Any]:
    pod = pod_manifest(name, **spec)
    gpu = {dra.GPU: "1"}
    pod["spec"]["containers"][0]["resources"] = {"requests": gpu, "limits": gpu}
    return pod


def _claiming(name: str, **entry: str) -> dict[str, Any]:
    return pod_manifest(name, resourceClaims=[{"name": "gpu", **entry}])


def _report(kind: str, name: str, namespace: str = "", labels: Any = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "openreports.io/v1alpha1", "kind": kind, "metadata": meta}


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """A default API server (with the controller-manager) holding the drifted cluster."""
    with running(ControlPlaneOptions(scheduler=False)) as started, started.api.client() as api:
        install_crds(
            started.api, [yaml.safe_load((crds.CRDS / f).read_text()) for f in crds.FILES.values()]
        )
        selector = {"scheduler.alpha.kubernetes.io/node-selector": "env=shop"}
        create_namespace(api, "shop", annotations=selector)
        create_namespace(api, "ml")
        create_namespace(api, "clean")
        client.AppsV1Api(api).create_namespaced_deployment(
            "shop",
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web"},
                "spec": {
                    "replicas": 3,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": pod_manifest("x")["spec"],
                    },
                },
            },
        )
        create_pods(api, "shop", [pod_manifest("conflict", nodeSelector={"env": "other"})])
        resource = client.ResourceV1Api(api)
        resource.create_device_class(dra.device_class(extended=dra.GPU))
        resource.create_namespaced_resource_claim_template("ml", dra.claim_template("gpu-claim"))
        resource.create_namespaced_resource_claim(
            "ml", dra.resource_claim("shared-gpu", namespace="ml")
        )
        create_pods(
            api,
            "ml",
            [
                _gpu("device-plugin"),
                _claiming("trainer", resourceClaimTemplateName="gpu-claim"),
                _claiming("shared", resourceClaimName="shared-gpu"),
            ],
        )
        create_pods(api, "clean", [pod_manifest("ok")])
        core = client.CoreV1Api(api)
        wait_until(
            lambda: len(core.list_namespaced_pod("shop").items) == 4,
            timeout=60,
            what="the ReplicaSet's pods made",
        )
        yield started


def _audit(plane: ControlPlane, *args: str, kubeconfig: Path | None = None) -> Run:
    return placement_webhooks(
        plane.api, "audit", "--config", str(CONFIG), *args, kubeconfig=kubeconfig
    )


def _reports(plane: ControlPlane) -> dict[tuple[str, str], dict[str, Any]]:
    """Every Report and ClusterReport stored, by (namespace or "", name)."""
    found = {}
    for plural in ("reports", "clusterreports"):
        status, body = plane.api.get(f"{GROUP}/{plural}")
        assert status == 200, body
        for item in body["items"]:
            meta = item["metadata"]
            found[meta.get("namespace", ""), meta["name"]] = item
    return found


def _rows(report: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    return sorted(
        (r["result"], r["policy"], r["rule"], r["resources"][0]["kind"], r["resources"][0]["name"])
        for r in report["results"]
    )


def _create(plane: ControlPlane, report: dict[str, Any]) -> None:
    meta = report["metadata"]
    where = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
    plural = "reports" if report["kind"] == "Report" else "clusterreports"
    status, body = plane.api.request("POST", f"{GROUP}{where}/{plural}", report)
    assert status == 201, body


SHOP = [
    ("fail", PNS, "violation", "Pod", "conflict"),
    ("warn", PNS, "drift", "Deployment", "web"),
]
#: The two claimed pods drift only where the API server keeps a DeviceClass's
#: ``extendedResourceName`` (DRAExtendedResource on by default, 1.36 on): before, it drops
#: the field, no claim stands for the GPU, and the pods need no toleration.
ML = [
    ("warn", ERT, "drift", "Pod", "device-plugin"),
    *(
        [("warn", ERT, "drift", "Pod", "shared"), ("warn", ERT, "drift", "Pod", "trainer")]
        if RELEASE.gate_on(DRA_EXTENDED_RESOURCE)
        else []
    ),
]


def test_reports_pass_the_crds_and_server_side_apply_and_stale_ones_go(plane: ControlPlane) -> None:
    _create(plane, _report("Report", NAME, "clean", LABELS))  # what an earlier run left
    _create(plane, _report("ClusterReport", NAME, labels=LABELS))
    _create(plane, _report("Report", "someone-else", "clean"))  # not ours: never touched

    first = _audit(plane, "--write-reports", "--page-size", "2")
    assert first.code == 1, first.stderr  # the node-selector conflict is enforced
    stored = _reports(plane)
    assert sorted(stored) == [("clean", "someone-else"), ("ml", NAME), ("shop", NAME)]
    assert _rows(stored["shop", NAME]) == sorted(SHOP)
    assert _rows(stored["ml", NAME]) == sorted(ML), "claimed devices are resolved (issue 22)"
    assert stored["shop", NAME]["summary"] == {
        "pass": 0,
        "fail": 1,
        "warn": 1,
        "error": 0,
        "skip": 0,
    }
    web = next(r for r in stored["shop", NAME]["results"] if r["resources"][0]["name"] == "web")
    assert web["properties"] == {"pods": "3"}
    for key in (("shop", NAME), ("ml", NAME)):
        managers = {
            (m["manager"], m["operation"]) for m in stored[key]["metadata"]["managedFields"]
        }
        assert managers == {("placement-webhooks", "Apply")}
    assert "deleted 2 stale (" in first.stderr

    again = _audit(plane, "--write-reports")
    assert again.code == 1, again.stderr
    rewritten = _reports(plane)
    assert _rows(rewritten["shop", NAME]) == sorted(SHOP), "a second apply replaces the results"
    assert rewritten["shop", NAME]["metadata"]["uid"] == stored["shop", NAME]["metadata"]["uid"]
    assert "deleted" not in again.stderr


@pytest.mark.parametrize(
    ("release", "settings", "allowed"),
    [
        ("with-claims", {"deviceClaims": True}, True),
        ("without", {}, False),
    ],
    ids=[
        "rendered with deviceClaims, the chart's role lets the audit read what it needs",
        "rendered without, the same audit is refused the DeviceClasses, in one line",
    ],
)
def test_the_charts_audit_role_is_what_the_audit_needs(
    plane: ControlPlane, tmp_path: Path, release: str, settings: dict[str, Any], allowed: bool
) -> None:
    """The audit under the chart's own ServiceAccount, ClusterRole and binding, applied to
    the real RBAC authorizer: enough to scan and write reports, DRA reads included exactly
    when the rendered config resolves claims."""
    objects = render(
        {"audit": {"enabled": True}, "plugins": {ERT: settings}},
        name=release,
        namespace="placement",
    )
    mine = [
        o
        for o in objects
        if o["kind"] in ("ClusterRole", "ClusterRoleBinding")
        and o["metadata"]["labels"].get("app.kubernetes.io/component") == "audit"
    ]
    assert len(mine) == 2
    with plane.api.client() as api:
        with contextlib.suppress(client.ApiException):
            create_namespace(api, "placement")
        for obj in mine:
            status, body = apply(plane.api, obj, field_manager="helm")
            assert status in (200, 201), body
        (binding,) = [o for o in mine if o["kind"] == "ClusterRoleBinding"]
        (account,) = binding["subjects"]
        kubeconfig = service_account_kubeconfig(
            plane.api, api, "placement", account["name"], tmp_path / "audit.kubeconfig"
        )
    run = _audit(plane, "--write-reports", "-o", "json", kubeconfig=kubeconfig)
    if allowed:
        assert run.code == 1, run.stderr  # findings, as under the admin's identity
        assert "wrote" in run.stderr
    else:
        assert run.code == 2
        assert run.stderr.startswith(
            "placement-webhooks: list deviceclasses.resource.k8s.io: HTTP 403:"
        ), run.stderr


def test_pages_of_one_give_the_same_audit_as_one_big_page(plane: ControlPlane) -> None:
    small = _audit(plane, "--page-size", "1", "-o", "json")
    big = _audit(plane, "--page-size", "500", "-o", "json")
    assert small.code == big.code == 1, small.stderr
    assert small.json() == big.json()
    assert small.json()["summary"]["objects"] == {"Deployment": 1, "Pod": 8}


def test_a_namespace_run_rewrites_only_its_report_and_a_fixed_namespace_loses_its_own(
    plane: ControlPlane,
) -> None:
    _audit(plane, "--write-reports")
    before = _reports(plane)
    _create(plane, _report("Report", NAME, "clean", LABELS))
    only_shop = _audit(plane, "--write-reports", "-n", "shop")
    assert only_shop.code == 1, only_shop.stderr
    after = _reports(plane)
    assert ("clean", NAME) in after, "a namespace run proves nothing about other namespaces"
    assert (
        after["ml", NAME]["metadata"]["resourceVersion"]
        == (before["ml", NAME]["metadata"]["resourceVersion"])
    )

    with plane.api.client() as api:
        core = client.CoreV1Api(api)
        for pod in ("device-plugin", "trainer", "shared"):
            core.delete_namespaced_pod(pod, "ml", grace_period_seconds=0)
    fixed = _audit(plane, "--write-reports")
    assert fixed.code == 1, fixed.stderr
    assert sorted(_reports(plane)) == [("clean", "someone-else"), ("shop", NAME)]


def test_a_cluster_report_passes_its_crd_as_the_audit_writes_it(plane: ControlPlane) -> None:
    """No stored Node breaks a rule the API server lets through, so the cluster report is
    written from an audit with a Node result, through the audit's own writer."""
    found = Audit(dt.datetime.now(dt.UTC))
    node = Ref("v1", "Node", "", "worker-1", "uid-1")
    found.add(node, "taint-toleration-rules", "violation", "fail", "a taint the policy refuses")
    with connect(str(plane.api.kubeconfig)) as lister:
        done = publish(lister, build(found, OPENREPORTS), OPENREPORTS, ["nowhere"])
    assert done.written == [f"ClusterReport {NAME}"]
    report = _reports(plane)["", NAME]
    assert _rows(report) == [("fail", "taint-toleration-rules", "violation", "Node", "worker-1")]
    assert report["summary"]["fail"] == 1


@pytest.mark.parametrize(
    ("change", "code", "said"),
    [
        (lambda r: r["results"][0].update(result="meh"), 422, "Unsupported value"),
        (
            lambda r: r["results"][0].update(colour="red"),
            500,
            "failed to create typed patch object (shop/broken; openreports.io/v1alpha1, "
            "Kind=Report): .results[0].colour: field not declared in schema",
        ),
    ],
    ids=[
        "a result outside the CRD's enum is invalid (422)",
        "a field the CRD does not declare fails the typed patch (500, asked once)",
    ],
)
def test_the_real_crd_refuses_a_report_it_does_not_describe(
    plane: ControlPlane, change: Any, code: int, said: str
) -> None:
    """The other side of the reports passing: the server does validate them. An undeclared
    field is refused while the server builds the typed patch, with HTTP 500, which the
    audit's writer does not ask again (it used to, four times)."""
    found = Audit(dt.datetime.now(dt.UTC))
    found.add(Ref("v1", "Pod", "shop", "p"), PNS, "violation", "fail", "refused")
    (body,) = build(found, OPENREPORTS)
    change(body)
    body["metadata"]["name"] = "broken"
    with connect(str(plane.api.kubeconfig)) as lister, pytest.raises(ApiError) as refused:
        lister.apply(OPENREPORTS.namespaced, "broken", body, "placement-webhooks", "shop")
    assert refused.value.status == code
    assert said in str(refused.value)
    assert "attempts" not in str(refused.value)
