"""The chart's audit CronJob: off by default, and when on, least privilege and the right args."""

from __future__ import annotations

import functools
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest

from tests.charts.render import CHART, NAMESPACE, of_kind, one, render
from webhooks.cli.audit import audit as audit_command
from webhooks.cluster.listing import KINDS

AUDIT = {"audit": {"enabled": True}}
AUDIT_KINDS = ["ClusterRole", "ClusterRoleBinding", "CronJob", "ServiceAccount"]


@functools.cache
def _rendered(key: str) -> tuple[dict[str, Any], ...]:
    values: dict[str, Any] = {
        "off": {},
        "on": AUDIT,
        "wgpolicyk8s": {"audit": {"enabled": True, "reportApi": "wgpolicyk8s"}},
        "tuned": {
            "fullnameOverride": "pw",
            "imagePullSecrets": [{"name": "regcred"}],
            "audit": {
                "enabled": True,
                "schedule": "*/15 * * * *",
                "maxResults": 100,
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "tolerations": [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}],
            },
        },
    }[key]
    return tuple(render(values))


def rendered(key: str) -> list[dict[str, Any]]:
    return list(_rendered(key))


def audit_objects(key: str) -> list[dict[str, Any]]:
    return [
        o
        for o in rendered(key)
        if o["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "audit"
    ]


def cronjob(key: str = "on") -> dict[str, Any]:
    return one(rendered(key), "CronJob")


def pod_spec(key: str = "on") -> dict[str, Any]:
    spec: dict[str, Any] = cronjob(key)["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return spec


def test_nothing_renders_while_the_audit_is_off() -> None:
    assert of_kind(rendered("off"), "CronJob") == []
    assert audit_objects("off") == []


def test_turned_on_it_adds_exactly_a_cronjob_and_its_own_account_and_role() -> None:
    before = sorted(o["kind"] for o in rendered("off"))
    after = sorted(o["kind"] for o in rendered("on"))
    assert after == sorted(before + AUDIT_KINDS)
    assert sorted(o["kind"] for o in audit_objects("on")) == AUDIT_KINDS


@pytest.mark.parametrize("key", ["on", "wgpolicyk8s", "tuned"])
def test_the_audit_objects_pass_strict_schema_validation(key: str) -> None:
    for obj in audit_objects(key):
        kubernetes_validate.validate(obj, "1.30.0", strict=True)


def test_helm_lint_strict_finds_nothing_with_the_audit_on() -> None:
    report = helm.lint(str(CHART), AUDIT, strict=True, kube_version="v1.30.0")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_the_cronjob_runs_hourly_and_never_twice_at_once() -> None:
    spec = cronjob()["spec"]
    assert spec["schedule"] == "0 * * * *"
    assert spec["concurrencyPolicy"] == "Forbid"
    assert cronjob("tuned")["spec"]["schedule"] == "*/15 * * * *"
    assert pod_spec()["restartPolicy"] == "Never"


def test_the_cronjob_writes_reports_under_the_servers_config() -> None:
    (container,) = pod_spec()["containers"]
    assert container["args"] == [
        "audit",
        "--config",
        "/etc/placement-webhooks/config.yaml",
        "--write-reports",
        "--report-api",
        "openreports",
        "--max-results",
        "500",
        "--exit-zero",
        "--exclude-namespace",
        NAMESPACE,
        "--exclude-namespace",
        "kube-system",
        "--exclude-namespace",
        "kube-node-lease",
    ]
    configmap = one(rendered("on"), "ConfigMap")["metadata"]["name"]
    assert pod_spec()["volumes"] == [{"name": "config", "configMap": {"name": configmap}}]
    assert container["volumeMounts"][0]["mountPath"] == "/etc/placement-webhooks/config.yaml"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["resources"]["limits"] == {"memory": "256Mi"}


@pytest.mark.parametrize("key", ["on", "wgpolicyk8s", "tuned"])
def test_the_cronjobs_arguments_are_ones_the_command_takes(key: str) -> None:
    (container,) = pod_spec(key)["containers"]
    command, *args = container["args"]
    assert command == "audit"
    context = audit_command.make_context("audit", list(args))
    assert context.params["write_reports"] is True
    assert context.params["exit_zero"] is True


def test_the_audit_leaves_out_the_namespaces_the_webhooks_leave_out() -> None:
    objects = render({**AUDIT, "webhooks": {"excludeNamespaces": ["kube-system", "infra"]}})
    (container,) = one(objects, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"][
        "containers"
    ]
    args = container["args"]
    excluded = [args[i + 1] for i, arg in enumerate(args) if arg == "--exclude-namespace"]
    (webhook,) = one(objects, "ValidatingWebhookConfiguration")["webhooks"]
    (expression,) = webhook["namespaceSelector"]["matchExpressions"]
    assert (
        sorted(excluded)
        == sorted(expression["values"])
        == sorted([NAMESPACE, "kube-system", "infra"])
    )


def test_the_scheduling_values_reach_the_pod() -> None:
    spec = pod_spec("tuned")
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert spec["tolerations"][0]["key"] == "infra"
    assert spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert cronjob("tuned")["metadata"]["name"] == "pw-audit"
    args = pod_spec("tuned")["containers"][0]["args"]
    assert args[args.index("--max-results") + 1] == "100"


def granted(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


@pytest.mark.parametrize(
    ("key", "group", "reports"),
    [
        ("on", "openreports.io", ("reports", "clusterreports")),
        ("wgpolicyk8s", "wgpolicyk8s.io", ("policyreports", "clusterpolicyreports")),
    ],
    ids=["OpenReports", "wgpolicyk8s"],
)
def test_the_role_reads_what_the_audit_scans_and_writes_only_reports(
    key: str, group: str, reports: tuple[str, ...]
) -> None:
    (role,) = [o for o in audit_objects(key) if o["kind"] == "ClusterRole"]
    scanned = {
        (kind.group, kind.plural, verb) for kind in KINDS.values() for verb in ("get", "list")
    }
    written = {
        (group, plural, verb)
        for plural in reports
        for verb in ("get", "list", "create", "patch", "delete")
    }
    assert granted(role) == scanned | written


@pytest.mark.parametrize(
    ("settings", "reads"),
    [
        ({"deviceClaims": True}, True),
        ({"enforce": {"guarded": [{"taintKey": "nvidia.com/gpu"}]}}, True),
        ({"deviceClaims": True, "enabled": False}, False),
        ({}, False),
    ],
    ids=[
        "deviceClaims: the audit reads classes, claims and templates as the webhooks do",
        "enforce judges claimed pods, so it reads them too",
        "a disabled plugin reads nothing",
        "the defaults read no DRA objects",
    ],
)
def test_the_role_reads_dra_objects_only_when_a_setting_resolves_claims(
    settings: dict[str, Any], reads: bool
) -> None:
    values = {**AUDIT, "plugins": {"extended-resource-toleration": settings}}
    objects = render(values)
    (role,) = [
        o
        for o in objects
        if o["kind"] == "ClusterRole"
        and o["metadata"]["labels"].get("app.kubernetes.io/component") == "audit"
    ]
    dra = {(g, r, v) for g, r, v in granted(role) if g == "resource.k8s.io"}
    expected = {
        ("resource.k8s.io", plural, verb)
        for plural in ("deviceclasses", "resourceclaims", "resourceclaimtemplates")
        for verb in ("get", "list")
    }
    assert dra == (expected if reads else set())


def test_the_role_is_bound_to_the_cronjobs_own_account_only() -> None:
    objects = audit_objects("on")
    (account,) = [o for o in objects if o["kind"] == "ServiceAccount"]
    (binding,) = [o for o in objects if o["kind"] == "ClusterRoleBinding"]
    (role,) = [o for o in objects if o["kind"] == "ClusterRole"]
    name = account["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert pod_spec()["serviceAccountName"] == name
    server = one(rendered("on"), "Deployment")["spec"]["template"]["spec"]["serviceAccountName"]
    assert server != name


@pytest.mark.parametrize(
    "values",
    [
        {"audit": {"enabled": True, "reportApi": "policyreport"}},
        {"audit": {"enabled": True, "schedule": ""}},
        {"audit": {"enabled": True, "maxResults": 0}},
        {"audit": {"enabled": True, "crds": True}},
    ],
    ids=[
        "an unknown report API",
        "an empty schedule",
        "no results per report",
        "an unknown key (the chart installs no CRDs)",
    ],
)
def test_bad_audit_values_are_refused(values: dict[str, Any]) -> None:
    with pytest.raises(Exception, match="audit"):
        render(values)
