"""``fail-closed-scope``: no fail-closed webhook covers Nodes, node Leases or the own namespace."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.install.doctor.building import charted, edited
from webhooks.install.doctor import fail_closed_scope
from webhooks.install.doctor.findings import Status
from webhooks.install.webhookconfig import KINDS


def _other(rule: dict[str, Any], policy: str | None = "Fail", **hook: Any) -> dict[str, Any]:
    webhook: dict[str, Any] = {"name": "guard.example.com", "rules": [rule], **hook}
    if policy is not None:
        webhook["failurePolicy"] = policy
    return {"kind": KINDS["validate"], "metadata": {"name": "guard"}, "webhooks": [webhook]}


def _rule(groups: list[str], resources: list[str], ops: list[str] | None = None) -> dict[str, Any]:
    return {
        "apiGroups": groups,
        "apiVersions": ["*"],
        "operations": ops or ["CREATE", "UPDATE"],
        "resources": resources,
        "scope": "*",
    }


def test_the_chart_defaults_are_ok() -> None:
    [finding] = fail_closed_scope.check(charted(None))
    assert finding.status is Status.OK
    assert "none of the 1 fail-closed webhook(s)" in finding.reason


def test_a_fail_open_node_webhook_is_ok() -> None:
    [finding] = fail_closed_scope.check(charted({"webhooks": {"nodes": {"enabled": True}}}))
    assert finding.status is Status.OK


def test_our_fail_closed_node_webhook_fails() -> None:
    values = {"webhooks": {"nodes": {"enabled": True, "failurePolicy": "Fail"}}}
    [finding] = fail_closed_scope.check(charted(values))
    assert finding.status is Status.FAIL
    assert "nodes.validate.placement-webhooks.svc" in finding.reason
    assert "covers Nodes" in finding.reason
    assert "webhooks.nodes.failurePolicy=Ignore" in finding.fix


def test_our_webhook_that_no_longer_excludes_its_namespace_fails() -> None:
    def include(configuration: dict[str, Any]) -> None:
        configuration["webhooks"][0]["namespaceSelector"] = {}

    installation = edited(charted(None), KINDS["validate"], include)
    [finding] = fail_closed_scope.check(installation)
    assert finding.status is Status.FAIL
    assert "Pods in namespace placement" in finding.reason
    assert "NotIn" in finding.fix


@pytest.mark.parametrize(
    ("other", "words"),
    [
        pytest.param(_other(_rule([""], ["nodes"])), "covers Nodes", id="nodes"),
        pytest.param(_other(_rule([""], ["nodes/status"])), "covers Nodes",
                     id="the nodes' status subresource"),
        pytest.param(_other(_rule(["*"], ["*/*"])), "covers Nodes", id="every resource"),
        pytest.param(_other(_rule([""], ["nodes"]), policy=None), "covers Nodes",
                     id="an unset failurePolicy is the API's default Fail"),
        pytest.param(_other(_rule(["coordination.k8s.io"], ["leases"])),
                     "covers Leases in kube-node-lease", id="leases"),
        pytest.param(_other(_rule([""], ["pods"], ["*"])), "Pods in namespace placement",
                     id="pods in every namespace"),
    ],
)  # fmt: skip
def test_another_configuration_covering_one_warns(other: dict[str, Any], words: str) -> None:
    findings = fail_closed_scope.check(replace(charted(None), others=(other,)))
    assert {f.status for f in findings} == {Status.WARN}
    assert any(words in f.reason for f in findings), [f.line() for f in findings]
    assert all("ValidatingWebhookConfiguration guard" in f.reason for f in findings)
    assert all("not this installation's" in f.fix for f in findings)


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(_other(_rule([""], ["nodes"]), policy="Ignore"), id="a fail-open one"),
        pytest.param(_other(_rule(["apps"], ["deployments"])), id="one covering other resources"),
        pytest.param(_other(_rule([""], ["nodes"], ["DELETE"])), id="one covering only deletes"),
        pytest.param(
            _other(
                _rule(["coordination.k8s.io", ""], ["leases", "pods"]),
                namespaceSelector={
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "NotIn",
                            "values": ["kube-node-lease", "placement"],
                        }
                    ]
                },
            ),
            id="one whose namespaceSelector leaves both namespaces out",
        ),
        pytest.param(
            _other(
                _rule([""], ["pods"]),
                namespaceSelector={"matchLabels": {"team": "a"}},
            ),
            id="one selecting namespaces by a label the server's lacks",
        ),
    ],
)
def test_others_that_cannot_deadlock_are_ok(other: dict[str, Any]) -> None:
    findings = fail_closed_scope.check(replace(charted(None), others=(other,)))
    assert [f.status for f in findings] == [Status.OK], [f.line() for f in findings]


def test_the_namespace_labels_read_decide() -> None:
    other = _other(_rule([""], ["pods"]), namespaceSelector={"matchLabels": {"team": "a"}})
    installation = replace(
        charted(None),
        others=(other,),
        namespace_labels={"kubernetes.io/metadata.name": "placement", "team": "a"},
    )
    [finding] = fail_closed_scope.check(installation)
    assert finding.status is Status.WARN
