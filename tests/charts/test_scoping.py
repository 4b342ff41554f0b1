"""What the chart registers and for whom: Nodes off the fail-closed path, match conditions,
namespace and object selectors, labels and annotations on the webhook configurations."""

from __future__ import annotations

import json
from typing import Any

import helm_python as helm
import pytest
import yaml

from tests.charts.render import CHART, NAMESPACE, RELEASE, render
from webhooks.install.webhookconfig import WebhookSettings, match_conditions

MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"


def hooks(objects: list[dict[str, Any]]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Webhook name → (kind, webhook), for every webhook the render registers."""
    return {
        hook["name"]: (obj["kind"], hook)
        for obj in objects
        if obj["kind"] in (MUTATING, VALIDATING)
        for hook in obj["webhooks"]
    }


def resources(hook: dict[str, Any]) -> set[str]:
    return {resource for rule in hook["rules"] for resource in rule["resources"]}


# --------------------------------------------------------------------------- Nodes


@pytest.mark.parametrize(
    "values",
    [{}, {"webhooks": {"perPlugin": True}}],
    ids=["one webhook per phase", "one webhook per plugin"],
)
def test_a_default_render_has_no_fail_closed_rule_on_nodes(values: dict[str, Any]) -> None:
    for kind, hook in hooks(render(values)).values():
        if hook["failurePolicy"] == "Fail":
            assert "nodes" not in resources(hook), (kind, hook["name"])
    assert all("nodes" not in resources(hook) for _, hook in hooks(render(values)).values())


def test_opted_in_nodes_get_their_own_fail_open_webhook_without_the_node_controllers() -> None:
    found = hooks(render({"webhooks": {"nodes": {"enabled": True}}}))
    kind, node_hook = found.pop(f"nodes.validate.{RELEASE}.svc")
    assert kind == VALIDATING
    assert resources(node_hook) == {"nodes"}
    assert node_hook["failurePolicy"] == "Ignore"
    names = [c["name"] for c in node_hook["matchConditions"]]
    assert "not-from-a-node-controller" in names
    for _, hook in found.values():
        assert "nodes" not in resources(hook)
        assert "not-from-a-node-controller" not in [c["name"] for c in hook["matchConditions"]]


def test_the_fixed_conditions_file_is_what_the_python_writes() -> None:
    data = yaml.safe_load((CHART / "files" / "match-conditions.yaml").read_text("utf-8"))
    python = {c["name"]: c for c in match_conditions(WebhookSettings(), nodes=True)}
    expected = {
        "mirrorPod": python["not-a-mirror-pod"],
        "kubelet": python["not-from-a-kubelet"],
        "unchangedUpdate": python["not-an-update-leaving-placement-unchanged"],
        "nodeControllers": python["not-from-a-node-controller"],
    }
    assert data == expected, (
        "charts/placement-webhooks/files/match-conditions.yaml is out of date; the Python "
        "writes:\n" + yaml.safe_dump(expected, sort_keys=False, width=100000)
    )


def test_by_default_unchanged_updates_are_skipped_and_no_requester_is() -> None:
    base = [
        "not-a-mirror-pod",
        "not-from-a-kubelet",
        "not-the-suite-itself",
        "not-an-update-leaving-placement-unchanged",
    ]
    for _, hook in hooks(render()).values():
        assert [c["name"] for c in hook["matchConditions"]] == base


FAIL_CLOSED = {"webhooks": {"mutating": {"failurePolicy": "Fail"}}}


@pytest.mark.parametrize(
    ("values", "sent"),
    [
        pytest.param(
            {}, True, id="with mutation failing open every pod is sent: validation is its guard"
        ),
        pytest.param(
            FAIL_CLOSED,
            False,
            id="with mutation failing closed a pod no validating check can judge is not sent",
        ),
        pytest.param(
            {
                **FAIL_CLOSED,
                "webhooks": {
                    **FAIL_CLOSED["webhooks"],
                    "matchConditions": {"skipUnjudgedPods": False},
                },
            },
            True,
            id="skipUnjudgedPods false sends every pod",
        ),
        pytest.param(
            {
                **FAIL_CLOSED,
                "plugins": {
                    "extended-resource-toleration": {
                        "enforce": {"guarded": [{"taintKey": "nvidia.com/gpu", "earnedBy": {}}]}
                    }
                },
            },
            True,
            id="an enforcing check that may judge any pod sends every pod",
        ),
    ],
)
def test_the_validating_webhook_leaves_out_pods_no_enabled_check_can_judge(
    values: dict[str, Any], sent: bool
) -> None:
    [hook] = [
        hook for kind, hook in hooks(render(values, upgrade=True)).values() if kind == VALIDATING
    ]
    names = [c["name"] for c in hook["matchConditions"]]
    assert ("a-pod-a-validating-check-can-judge" not in names) is sent


# --------------------------------------------------------------------------- selectors


SELECTOR = {
    "matchLabels": {"placement-webhooks.io/enabled": "true"},
    "matchExpressions": [{"key": "tier", "operator": "Exists"}],
}
OBJECT_SELECTOR = {"matchExpressions": [{"key": "k8s-app", "operator": "NotIn", "values": ["cni"]}]}


def test_the_namespace_selector_is_anded_with_the_built_in_exclusions() -> None:
    for _, hook in hooks(render({"webhooks": {"namespaceSelector": SELECTOR}})).values():
        assert hook["namespaceSelector"] == {
            "matchLabels": SELECTOR["matchLabels"],
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": [NAMESPACE, "kube-system", "kube-node-lease"],
                },
                *SELECTOR["matchExpressions"],
            ],
        }


def test_the_object_selector_reaches_every_webhook_and_only_when_set() -> None:
    with_selector = hooks(
        render({"webhooks": {"objectSelector": OBJECT_SELECTOR, "nodes": {"enabled": True}}})
    )
    assert all(hook["objectSelector"] == OBJECT_SELECTOR for _, hook in with_selector.values())
    assert all("objectSelector" not in hook for _, hook in hooks(render()).values())


def test_labels_and_annotations_reach_both_configurations() -> None:
    values = {"webhooks": {"labels": {"team": "platform"}, "annotations": {"owner": "sre"}}}
    configs = [o for o in render(values) if o["kind"] in (MUTATING, VALIDATING)]
    assert len(configs) == 2
    for config in configs:
        assert config["metadata"]["labels"]["team"] == "platform"
        assert config["metadata"]["labels"]["app.kubernetes.io/instance"] == RELEASE
        assert config["metadata"]["annotations"] == {
            "owner": "sre",
            "argocd.argoproj.io/sync-wave": "1",
        }


def test_skipped_requesters_become_one_condition() -> None:
    values = {"webhooks": {"matchConditions": {"skipUsers": ["ca"], "skipGroups": ["g"]}}}
    for _, hook in hooks(render(values)).values():
        [condition] = [
            c for c in hook["matchConditions"] if c["name"] == "not-from-a-skipped-requester"
        ]
        assert condition["expression"] == (
            "!(request.userInfo.username in ['ca']) && "
            "!request.userInfo.groups.exists(g, g in ['g'])"
        )


BAD_SCOPES = [
    ({"webhooks": {"namespaceSelector": {"matchLabel": {"a": "b"}}}}, "matchLabel"),
    (
        {"webhooks": {"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}},
        "values",
    ),
    (
        {"webhooks": {"objectSelector": {"matchExpressions": [{"key": "a", "operator": "Has"}]}}},
        "operator",
    ),
    ({"webhooks": {"annotations": {"a": 1}}}, "annotations"),
    ({"webhooks": {"nodes": {"failurePolicy": "ignore"}}}, "failurePolicy"),
    ({"webhooks": {"matchConditions": {"skipUsers": ["it's"]}}}, "skipUsers"),
]


@pytest.mark.parametrize(
    ("values", "named"),
    BAD_SCOPES,
    ids=[
        "a misspelt selector key is refused, not dropped",
        "In without values is refused",
        "an unknown operator is refused",
        "an annotation value that is not a string is refused",
        "a Node failure policy in the wrong case is refused",
        "a skipped user that would break the CEL string is refused",
    ],
)
def test_scoping_values_the_api_server_would_reject_are_refused(
    values: dict[str, Any], named: str
) -> None:
    with pytest.raises(helm.HelmError) as caught:
        render(values)
    assert named in str(caught.value)


# --------------------------------------------------------------------------- docs and schema

DOCUMENTED = [
    "webhooks.namespaceSelector",
    "webhooks.objectSelector",
    "webhooks.labels",
    "webhooks.annotations",
    "webhooks.nodes.enabled",
    "webhooks.nodes.failurePolicy",
    "webhooks.matchConditions.skipUnchangedUpdates",
    "webhooks.matchConditions.skipUsers",
    "install.failOpenUntilReady",
    "install.timeoutSeconds",
    "priorityClassName",
    "priorityClassQuota",
    "podSecurityContext",
    "hostNetwork",
    "extraArgs",
    "extraEnv",
    "image.digest",
    "image.registry",
    "global.imageRegistry",
    "metrics.prometheusRule.enabled",
    "metrics.dashboard.enabled",
    "tls.managed.checkSeconds",
]


@pytest.mark.parametrize("key", DOCUMENTED)
def test_each_value_is_in_the_defaults_the_schema_and_the_docs(key: str) -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text("utf-8"))
    schema = json.loads((CHART / "values.schema.json").read_text("utf-8"))
    docs = (CHART.parents[1] / "docs" / "operations.md").read_text("utf-8")
    node: Any = values
    spec: Any = schema
    for part in key.split("."):
        assert part in node, f"{key} has no default in values.yaml"
        node = node[part]
        properties = spec.get("properties") or {}
        assert part in properties, f"{key} is not in values.schema.json"
        spec = properties[part]
        if "$ref" in spec:
            spec = schema["definitions"][spec["$ref"].rsplit("/", 1)[-1]]
    assert f"`{key}" in docs or f"`{key.rsplit('.', 1)[-1]}`" in docs, f"{key} is not documented"
