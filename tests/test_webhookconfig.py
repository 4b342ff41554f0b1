"""Webhook configurations: rules from the registry, safe defaults, CEL conditions, injection."""

from __future__ import annotations

import base64
import copy
import os
import shutil
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml

from tests.command import invoke_cli
from tests.fakeapi import TOKEN, refused_port, running, write_kubeconfig
from webhooks.certs import pki
from webhooks.core.config import load_config
from webhooks.install.webhookconfig import (
    FIELD_MANAGER,
    JUDGED_PODS,
    PLURALS,
    WebhookSettings,
    configurations,
    inactive_halves,
    judged_pods_condition,
    match_conditions,
    namespace_selector,
    plugin_table,
    rules,
    unchanged_update_expression,
    without_halves,
)
from webhooks.plugins import REGISTRY

ROOT = Path(__file__).resolve().parent.parent

TABLE: list[dict[str, Any]] = [
    {"name": "a", "mutate": {"pods": ["CREATE"]}},
    {"name": "b", "mutate": {"pods": ["UPDATE", "CREATE"], "apps/daemonsets": ["CREATE"]}},
    {"name": "c", "validate": {"nodes": ["CREATE", "UPDATE"], "pods": ["CREATE", "UPDATE"]}},
    {"name": "d", "validate": {"batch/jobs": ["UPDATE"], "apps/deployments": ["CREATE"]}},
]


def _rule(group: str, ops: list[str], resources: list[str]) -> dict[str, Any]:
    return {"apiGroups": [group], "apiVersions": ["v1"], "operations": ops, "resources": resources}


@pytest.mark.parametrize(
    ("phase", "names", "expected"),
    [
        ("mutate", ["a"], [_rule("", ["CREATE"], ["pods"])]),
        (
            "mutate",
            ["a", "b"],
            [_rule("apps", ["CREATE"], ["daemonsets"]), _rule("", ["CREATE", "UPDATE"], ["pods"])],
        ),
        ("validate", ["c"], [_rule("", ["CREATE", "UPDATE"], ["nodes", "pods"])]),
        (
            "validate",
            ["c", "d"],
            [
                _rule("apps", ["CREATE"], ["deployments"]),
                _rule("batch", ["UPDATE"], ["jobs"]),
                _rule("", ["CREATE", "UPDATE"], ["nodes", "pods"]),
            ],
        ),
        ("mutate", ["c", "d"], []),
        ("validate", [], []),
    ],
    ids=[
        "one plugin gives one rule",
        "a resource two plugins handle is listed once with the union of operations",
        "resources of a group with the same operations share a rule",
        "each API group gets its own rule",
        "plugins without a half for the phase add nothing",
        "no enabled plugin gives no rules",
    ],
)
def test_rules_cover_exactly_what_the_plugins_handle(
    phase: str, names: list[str], expected: list[dict[str, Any]]
) -> None:
    assert rules(TABLE, phase, names) == expected  # type: ignore[arg-type]


def test_an_api_group_without_a_known_version_is_an_error() -> None:
    table = [{"name": "x", "mutate": {"example.com/widgets": ["CREATE"]}}]
    with pytest.raises(ValueError, match=r"example\.com"):
        rules(table, "mutate", ["x"])


def test_the_table_comes_from_the_plugin_halves() -> None:
    table = plugin_table(REGISTRY)
    assert [row["name"] for row in table] == list(REGISTRY.names)
    for plugin, row in zip(REGISTRY, table, strict=True):
        for phase in ("mutate", "validate"):
            half = plugin.half(phase)  # type: ignore[arg-type]
            if half is None:
                assert phase not in row
                continue
            assert set(row[phase]) == {r if not g else f"{g}/{r}" for g, r in half.resources}
            assert all(set(ops) == set(half.operations) for ops in row[phase].values())


# --------------------------------------------------------------------------- settings


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"url": "http://hooks.example:8443"}, "https"),
        ({"url": "https://hooks.example/?x=1"}, "query"),
        ({"url": "https://user@hooks.example"}, "user info"),
        ({"timeout_seconds": 31}, "30 seconds"),
        ({"timeout_seconds": 0}, "30 seconds"),
        ({"port": 0}, "port"),
    ],
    ids=[
        "a plain-http URL is refused: the API server only calls HTTPS",
        "a URL with a query is refused, as the API server does",
        "a URL with user info is refused, as the API server does",
        "a timeout above 30 s is refused",
        "a timeout below 1 s is refused",
        "port 0 is refused",
    ],
)
def test_settings_the_api_server_would_reject_are_refused(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        WebhookSettings(**kwargs)


def test_a_url_replaces_the_service_reference() -> None:
    settings = WebhookSettings(url="https://hooks.example:8443/", ca_bundle="Q0E=")
    [mutating] = configurations(settings, TABLE, ["a"])
    config = mutating["webhooks"][0]["clientConfig"]
    assert config == {"url": "https://hooks.example:8443/mutate", "caBundle": "Q0E="}


def test_labels_are_set_on_both_configurations() -> None:
    settings = WebhookSettings(labels={"team": "platform"})
    objects = configurations(settings, TABLE, ["a", "c"])
    assert [o["kind"] for o in objects] == [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ]
    assert all(
        o["metadata"] == {"name": "placement-webhooks", "labels": {"team": "platform"}}
        for o in objects
    )


# --------------------------------------------------------------------------- CEL


def _request(
    resource: str = "pods",
    namespace: str = "default",
    groups: tuple[str, ...] = ("system:authenticated",),
    username: str = "alice",
) -> dict[str, Any]:
    group = {"deployments": "apps", "daemonsets": "apps"}.get(resource, "")
    return {
        "uid": "0b7e5b8c-1f0e-4c57-a7b8-3c3f7cf1b2a0",
        "kind": {"group": group, "version": "v1", "kind": resource[:-1].title()},
        "resource": {"group": group, "version": "v1", "resource": resource},
        "requestKind": {"group": group, "version": "v1", "kind": resource[:-1].title()},
        "requestResource": {"group": group, "version": "v1", "resource": resource},
        "name": "x",
        "namespace": namespace,
        "operation": "CREATE",
        "userInfo": {"username": username, "groups": list(groups)},
        "dryRun": False,
    }


def _object(
    annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "x"}
    if annotations is not None:
        meta["annotations"] = annotations
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": []}}


KUBELET = ("system:nodes", "system:authenticated")
MIRROR = {"kubernetes.io/config.mirror": "d41d8cd98f00b204e9800998ecf8427e"}
OWN = {"app.kubernetes.io/name": "placement-webhooks", "app.kubernetes.io/instance": "pw"}


@pytest.mark.parametrize(
    ("request_", "obj", "sent"),
    [
        (_request(), _object(), True),
        (_request(), _object(annotations={"team": "a"}, labels={"app": "web"}), True),
        (_request(), _object(annotations=MIRROR), False),
        (_request(groups=KUBELET, username="system:node:n1"), _object(annotations=MIRROR), False),
        (_request(resource="nodes", namespace="", groups=KUBELET), _object(), False),
        (_request(resource="nodes", namespace="", username="admin"), _object(), True),
        (_request(namespace="placement-webhooks"), _object(labels=OWN), False),
        (
            _request(resource="deployments", namespace="placement-webhooks"),
            _object(labels=OWN),
            False,
        ),
        (_request(namespace="shop"), _object(labels=OWN), True),
        (_request(namespace="placement-webhooks"), _object(labels={"app": "other"}), True),
        (_request(resource="daemonsets"), _object(annotations=MIRROR), True),
    ],
    ids=[
        "an ordinary pod is sent",
        "a pod with other annotations and labels is sent",
        "a mirror pod is skipped: the kubelet owns it and it cannot change",
        "a kubelet creating a mirror pod is skipped",
        "a kubelet updating its Node is skipped, so nodes register while the suite is down",
        "an administrator's Node change is sent",
        "the suite's own pod is skipped",
        "the suite's own Deployment is skipped",
        "a pod that only borrows the suite's label elsewhere is sent",
        "another pod in the suite's namespace passes the conditions (the selector excludes it)",
        "the mirror annotation matters only on pods",
    ],
)
def test_match_conditions_decide_what_the_api_server_sends(
    request_: dict[str, Any], obj: dict[str, Any], sent: bool
) -> None:
    env = celpy.Environment()
    activation = {"request": celpy.json_to_cel(request_), "object": celpy.json_to_cel(obj)}
    results = [
        bool(env.program(env.compile(c["expression"])).evaluate(activation))
        for c in match_conditions(WebhookSettings())
    ]
    assert all(results) is sent


def test_match_condition_names_are_unique_qualified_names() -> None:
    settings = WebhookSettings(skip_users=("u",), skip_groups=("g",))
    names = [c["name"] for c in match_conditions(settings, nodes=True)]
    assert len(names) == len(set(names))
    assert all(n.replace("-", "").isalnum() and n.islower() and len(n) <= 63 for n in names)


# --------------------------------------------------------------------------- UPDATEs, incidents

GROUPS = {
    "deployments": "apps",
    "replicasets": "apps",
    "statefulsets": "apps",
    "daemonsets": "apps",
    "jobs": "batch",
    "cronjobs": "batch",
}
POD_SPEC = {
    "containers": [{"name": "app", "image": "app:1", "resources": {"limits": {"cpu": "1"}}}],
    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
}
TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": POD_SPEC}


def _review(
    resource: str,
    operation: str,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None = None,
    username: str = "system:serviceaccount:kube-system:replicaset-controller",
    groups: tuple[str, ...] = ("system:serviceaccounts", "system:authenticated"),
) -> dict[str, Any]:
    """The CEL activation the API server builds for a request: request, object, oldObject."""
    group = GROUPS.get(resource, "")
    request = {
        "uid": "4b1a7b0e-8a43-4c1b-9b1a-2f7f3d2c1e0a",
        "kind": {"group": group, "version": "v1", "kind": resource[:-1].title()},
        "resource": {"group": group, "version": "v1", "resource": resource},
        "name": "x",
        "namespace": "" if resource == "nodes" else "shop",
        "operation": operation,
        "userInfo": {"username": username, "groups": list(groups)},
        "dryRun": False,
    }
    return {"request": request, "object": obj, "oldObject": old}


def _with(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    node = changed
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return changed


POD = {"metadata": {"name": "x", "labels": {"app": "web"}}, "spec": POD_SPEC}
DEPLOYMENT = {"metadata": {"name": "x"}, "spec": {"replicas": 2, "template": TEMPLATE}}
CRONJOB = {
    "metadata": {"name": "x"},
    "spec": {"schedule": "@hourly", "jobTemplate": {"spec": {"template": TEMPLATE}}},
}
NODE = {
    "metadata": {"name": "n1", "labels": {"zone": "a"}},
    "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}

UNCHANGED_CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("a pod CREATE is sent", _review("pods", "CREATE", POD), True),
    (
        "a pod UPDATE that only relabels is skipped",
        _review("pods", "UPDATE", _with(POD, ("metadata", "labels"), {"app": "api"}), POD),
        False,
    ),
    (
        "a pod UPDATE that only adds a finalizer is skipped",
        _review("pods", "UPDATE", _with(POD, ("metadata", "finalizers"), ["x/y"]), POD),
        False,
    ),
    (
        "a pod UPDATE that adds a toleration is sent",
        _review(
            "pods",
            "UPDATE",
            _with(POD, ("spec", "tolerations"), [*POD_SPEC["tolerations"], NOT_READY]),
            POD,
        ),
        True,
    ),
    (
        "a pod UPDATE that changes an image is sent (any spec change is)",
        _review(
            "pods",
            "UPDATE",
            _with(POD, ("spec", "containers"), [{"name": "app", "image": "app:2"}]),
            POD,
        ),
        True,
    ),
    (
        "a pod UPDATE without a spec on either side is skipped, not an error",
        _review("pods", "UPDATE", {"metadata": {"name": "x"}}, {"metadata": {"name": "x"}}),
        False,
    ),
    (
        "a Deployment scaled by the HPA or the deployment controller is skipped",
        _review("deployments", "UPDATE", _with(DEPLOYMENT, ("spec", "replicas"), 5), DEPLOYMENT),
        False,
    ),
    (
        "a Deployment whose template changes is sent",
        _review(
            "deployments",
            "UPDATE",
            _with(DEPLOYMENT, ("spec", "template", "spec", "nodeSelector"), {"zone": "a"}),
            DEPLOYMENT,
        ),
        True,
    ),
    (
        "a Deployment rolled by `kubectl rollout restart` is sent (its template changes)",
        _review(
            "deployments",
            "UPDATE",
            _with(DEPLOYMENT, ("spec", "template", "metadata", "annotations"), {"r": "1"}),
            DEPLOYMENT,
        ),
        True,
    ),
    (
        "a ReplicaSet whose replica count changes is skipped",
        _review("replicasets", "UPDATE", _with(DEPLOYMENT, ("spec", "replicas"), 0), DEPLOYMENT),
        False,
    ),
    (
        "a CronJob suspended is skipped",
        _review("cronjobs", "UPDATE", _with(CRONJOB, ("spec", "suspend"), True), CRONJOB),
        False,
    ),
    (
        "a CronJob whose job template changes is sent",
        _review(
            "cronjobs",
            "UPDATE",
            _with(CRONJOB, ("spec", "jobTemplate", "spec", "backoffLimit"), 1),
            CRONJOB,
        ),
        True,
    ),
    (
        "a PodTemplate whose template changes is sent",
        _review(
            "podtemplates",
            "UPDATE",
            {"metadata": {"name": "x"}, "template": _with(TEMPLATE, ("spec", "hostNetwork"), True)},
            {"metadata": {"name": "x"}, "template": TEMPLATE},
        ),
        True,
    ),
    (
        "a PodTemplate relabelled is skipped",
        _review(
            "podtemplates",
            "UPDATE",
            {"metadata": {"name": "x", "labels": {"a": "b"}}, "template": TEMPLATE},
            {"metadata": {"name": "x"}, "template": TEMPLATE},
        ),
        False,
    ),
    (
        "a Node relabelled is skipped",
        _review("nodes", "UPDATE", _with(NODE, ("metadata", "labels"), {"zone": "b"}), NODE),
        False,
    ),
    (
        "a Node cordoned (spec.unschedulable) is skipped: its taints did not change",
        _review("nodes", "UPDATE", _with(NODE, ("spec", "unschedulable"), True), NODE),
        False,
    ),
    (
        "a Node whose taints change is sent",
        _review("nodes", "UPDATE", _with(NODE, ("spec", "taints"), [NOT_READY]), NODE),
        True,
    ),
    (
        "a Node losing its last taint is sent",
        _review("nodes", "UPDATE", {"metadata": {"name": "n1"}, "spec": {}}, NODE),
        True,
    ),
    (
        "an UPDATE of a resource the suite does not know is sent",
        _review("leases", "UPDATE", {"metadata": {"name": "x"}}, {"metadata": {"name": "x"}}),
        True,
    ),
]


def _evaluate(expression: str, activation: dict[str, Any]) -> bool:
    env = celpy.Environment()
    program = env.program(env.compile(expression))
    cel = {key: celpy.json_to_cel(value) for key, value in activation.items()}
    result = program.evaluate(cel)
    assert isinstance(result, celpy.celtypes.BoolType), f"not a bool: {result!r}"
    return bool(result)


@pytest.mark.parametrize(
    ("activation", "sent"),
    [case[1:] for case in UNCHANGED_CASES],
    ids=[case[0] for case in UNCHANGED_CASES],
)
def test_updates_that_change_no_placement_field_are_not_sent(
    activation: dict[str, Any], sent: bool
) -> None:
    assert _evaluate(unchanged_update_expression(), activation) is sent


def test_every_condition_evaluates_without_error_on_every_sample() -> None:
    # An evaluation error counts as a failed call, which a Fail policy turns into a refusal.
    settings = WebhookSettings(skip_users=("u",), skip_groups=("g",))
    for condition in match_conditions(settings, nodes=True):
        for _, activation, _ in UNCHANGED_CASES:
            _evaluate(condition["expression"], activation)


NODE_CONTROLLER = "system:serviceaccount:kube-system:node-controller"
TAINTED = _with(NODE, ("spec", "taints"), [NOT_READY])

NODE_CASES = [
    (
        "the node lifecycle controller tainting a node that is not ready",
        _review("nodes", "UPDATE", TAINTED, NODE, username=NODE_CONTROLLER),
        False,
    ),
    (
        "the controller manager without service account credentials",
        _review("nodes", "UPDATE", TAINTED, NODE, username="system:kube-controller-manager"),
        False,
    ),
    (
        "a kubelet registering its node",
        _review("nodes", "CREATE", NODE, username="system:node:n1", groups=("system:nodes",)),
        False,
    ),
    ("an administrator tainting a node", _review("nodes", "UPDATE", TAINTED, NODE, "admin"), True),
    ("an administrator creating a node", _review("nodes", "CREATE", NODE, username="admin"), True),
]


@pytest.mark.parametrize(
    ("activation", "sent"),
    [case[1:] for case in NODE_CASES],
    ids=[case[0] for case in NODE_CASES],
)
def test_the_node_webhook_never_sees_the_node_controllers(
    activation: dict[str, Any], sent: bool
) -> None:
    conditions = match_conditions(WebhookSettings(), nodes=True)
    assert all(_evaluate(c["expression"], activation) for c in conditions) is sent


def test_only_the_node_webhook_carries_the_node_controller_condition() -> None:
    names = {c["name"] for c in match_conditions(WebhookSettings())}
    assert "not-from-a-node-controller" not in names
    assert "not-from-a-node-controller" in {
        c["name"] for c in match_conditions(WebhookSettings(), nodes=True)
    }


@pytest.mark.parametrize(
    ("users", "groups", "username", "member_of", "sent"),
    [
        ((), ("autoscalers",), "bob", ("autoscalers",), False),
        (("system:serviceaccount:kube-system:cluster-autoscaler",), (), "bob", (), True),
        (
            ("system:serviceaccount:kube-system:cluster-autoscaler",),
            (),
            "system:serviceaccount:kube-system:cluster-autoscaler",
            (),
            False,
        ),
        (("a",), ("b",), "c", ("d",), True),
    ],
    ids=[
        "a member of a skipped group is not sent",
        "another user is sent",
        "a skipped user is not sent",
        "with both lists, someone in neither is sent",
    ],
)
def test_skipped_users_and_groups(
    users: tuple[str, ...],
    groups: tuple[str, ...],
    username: str,
    member_of: tuple[str, ...],
    sent: bool,
) -> None:
    settings = WebhookSettings(skip_users=users, skip_groups=groups)
    [condition] = [
        c for c in match_conditions(settings) if c["name"] == "not-from-a-skipped-requester"
    ]
    activation = _review("pods", "CREATE", POD, username=username, groups=member_of)
    assert _evaluate(condition["expression"], activation) is sent


def test_without_skipped_users_there_is_no_such_condition() -> None:
    names = {c["name"] for c in match_conditions(WebhookSettings())}
    assert "not-from-a-skipped-requester" not in names


def test_the_unchanged_update_condition_can_be_turned_off() -> None:
    settings = WebhookSettings(skip_unchanged_updates=False)
    names = {c["name"] for c in match_conditions(settings)}
    assert "not-an-update-leaving-placement-unchanged" not in names


# --------------------------------------------------------------------------- Nodes, scoping


def _hooks(settings: WebhookSettings, table: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    names = [row["name"] for row in table]
    return {
        hook["name"]: hook
        for obj in configurations(settings, table, names)
        for hook in obj["webhooks"]
    }


def test_nodes_are_not_registered_by_default() -> None:
    hooks = _hooks(WebhookSettings(), TABLE)
    resources = {r for hook in hooks.values() for rule in hook["rules"] for r in rule["resources"]}
    assert "nodes" not in resources
    assert "pods" in resources


@pytest.mark.parametrize("per_plugin", [False, True], ids=["per phase", "per plugin"])
def test_opted_in_nodes_get_a_webhook_of_their_own(per_plugin: bool) -> None:
    settings = WebhookSettings(name="pw", nodes=True, per_plugin=per_plugin)
    hooks = _hooks(settings, TABLE)
    node_hook = hooks.pop("nodes.validate.pw.svc")
    assert node_hook["rules"] == [_rule("", ["CREATE", "UPDATE"], ["nodes"])]
    assert node_hook["failurePolicy"] == "Ignore"
    assert node_hook["clientConfig"]["service"]["path"] == "/validate"
    assert "not-from-a-node-controller" in {c["name"] for c in node_hook["matchConditions"]}
    for hook in hooks.values():
        assert all("nodes" not in rule["resources"] for rule in hook["rules"])
        assert "not-from-a-node-controller" not in {c["name"] for c in hook["matchConditions"]}
    assert list(_hooks(settings, TABLE))[-1] == "nodes.validate.pw.svc"


def test_the_node_webhook_takes_its_own_failure_policy() -> None:
    settings = WebhookSettings(name="pw", nodes=True, nodes_failure_policy="Fail")
    assert _hooks(settings, TABLE)["nodes.validate.pw.svc"]["failurePolicy"] == "Fail"
    assert _hooks(settings, TABLE)["validate.pw.svc"]["failurePolicy"] == "Fail"
    assert _hooks(settings, TABLE)["mutate.pw.svc"]["failurePolicy"] == "Ignore"


def test_a_namespace_selector_is_anded_with_the_exclusions() -> None:
    selector = {
        "matchLabels": {"team": "a"},
        "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}],
    }
    settings = WebhookSettings(namespace="pw", namespace_selector=selector)
    assert namespace_selector(settings) == {
        "matchLabels": {"team": "a"},
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["pw", "kube-system", "kube-node-lease"],
            },
            {"key": "env", "operator": "In", "values": ["prod"]},
        ],
    }


def test_an_object_selector_and_annotations_are_registered() -> None:
    selector = {"matchExpressions": [{"key": "k8s-app", "operator": "DoesNotExist"}]}
    settings = WebhookSettings(object_selector=selector, annotations={"team": "platform"})
    objects = configurations(settings, TABLE, ["a", "c"])
    assert all(o["metadata"]["annotations"] == {"team": "platform"} for o in objects)
    assert all(h["objectSelector"] == selector for o in objects for h in o["webhooks"])
    assert all("objectSelector" not in h for h in _hooks(WebhookSettings(), TABLE).values())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"namespace_selector": {"matchLabel": {"a": "b"}}}, "unknown key 'matchLabel'"),
        ({"object_selector": {"matchLabels": {"a": 1}}}, "string values"),
        (
            {"namespace_selector": {"matchExpressions": [{"key": "a", "operator": "in"}]}},
            "operator",
        ),
        (
            {"namespace_selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
            "In needs values",
        ),
        (
            {
                "object_selector": {
                    "matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]
                }
            },
            "Exists takes no values",
        ),
        ({"skip_users": ("it's",)}, "skipped user"),
    ],
    ids=[
        "a misspelt selector key is refused, not dropped",
        "a label value that is not a string is refused",
        "an operator in the wrong case is refused",
        "In without values is refused",
        "Exists with values is refused",
        "a skipped user with a quote is refused (it is written into CEL)",
    ],
)
def test_scoping_the_api_server_would_reject_is_refused(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        WebhookSettings(**kwargs)


# --------------------------------------------------------------------------- CLI rendering


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> pki.CertPaths:
    directory = tmp_path_factory.mktemp("deploy-ca")
    return pki.generate(directory, hosts=pki.service_hosts("pw", "placement"))


def _invoke(*args: str) -> Any:
    return invoke_cli(["webhook-config", *args])


def test_webhook_config_prints_applyable_yaml_with_the_ca_bundle(chain: pki.CertPaths) -> None:
    result = _invoke("--namespace=placement", "--service=pw", f"--ca-file={chain.ca}")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    docs = list(yaml.safe_load_all(result.stdout))
    assert result.stdout.startswith("---\n")
    bundle = base64.b64encode(chain.ca.read_bytes()).decode()
    for doc in docs:
        for hook in doc["webhooks"]:
            assert hook["clientConfig"]["caBundle"] == bundle
            assert hook["clientConfig"]["service"] == {
                "name": "pw",
                "namespace": "placement",
                "path": "/" + hook["name"].split(".")[0],
                "port": 443,
            }


def test_without_a_ca_file_the_bundle_is_left_out_and_that_is_said(chain: pki.CertPaths) -> None:
    result = _invoke()
    assert result.exit_code == 0
    assert "caBundle left out" in result.stderr
    for doc in yaml.safe_load_all(result.stdout):
        assert all("caBundle" not in h["clientConfig"] for h in doc["webhooks"])


def test_a_config_file_with_a_plugin_disabled_drops_its_rules(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "plugins:\n" + "".join(f"  {n}: {{enabled: false}}\n" for n in REGISTRY.names)
    )
    result = _invoke(f"--config={config}")
    assert result.exit_code == 0, result.output
    assert list(yaml.safe_load_all(result.stdout)) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ca-file=/nonexistent/ca.crt"], "No such file or directory"),
        (["--url=http://x.example"], "https"),
        (["--inject"], "--inject needs --ca-file"),
        (["--config=/nonexistent.yaml"], "config: /nonexistent.yaml: cannot read: No such file"),
        (
            ["--namespace-selector", "[" * 3000 + "]" * 3000],
            "--namespace-selector: a label selector is a mapping",
        ),
        (["--object-selector", "{a: ["], "--object-selector: invalid YAML: a value is missing"),
        (
            ["--namespace-selector", "matchLabels: {a: b, a: c}"],
            '--namespace-selector: key "a" already set in map',
        ),
    ],
    ids=[
        "a missing CA file is named",
        "a non-HTTPS URL is refused",
        "--inject without a CA is refused",
        "an unreadable config is named",
        "a selector 3,000 lists deep is read without recursion and refused",
        "a selector that is not YAML is named in the reader's words",
        "a selector writing a key twice is refused as the config file would be",
    ],
)
def test_unusable_input_exits_2(args: list[str], message: str) -> None:
    result = _invoke(*args)
    assert result.exit_code == 2
    assert message in result.stderr


# --------------------------------------------------------------------------- --native

PTR_ON = "plugins:\n  pod-toleration-restriction: {enabled: true}\n"
DEDICATED = "plugins:\n  dedicated-nodes: {enabled: true, namespaces: {gpu-team: gpu}}\n"
NATIVE_ROWS = {
    "the defaults keep runtime-class's refusal of a missing class alone, on /validate": (
        None,
        {"ValidatingWebhookConfiguration": [("validate.placement-webhooks.svc", "/validate")]},
    ),
    "pod-toleration-restriction's halves and the mutations after it share /mutate": (
        PTR_ON,
        {
            "MutatingWebhookConfiguration": [("mutate.placement-webhooks.svc", "/mutate")],
            "ValidatingWebhookConfiguration": [("validate.placement-webhooks.svc", "/validate")],
        },
    ),
    "dedicated-nodes' warnings keep its mutation on the one mutating webhook": (
        DEDICATED,
        {
            "MutatingWebhookConfiguration": [("mutate.placement-webhooks.svc", "/mutate")],
            "ValidatingWebhookConfiguration": [("validate.placement-webhooks.svc", "/validate")],
        },
    ),
}


def _native(tmp_path: Path, text: str | None, *extra: str) -> Any:
    args = ["--native", *extra]
    if text is not None:
        config = tmp_path / "config.yaml"
        config.write_text(text)
        args.append(f"--config={config}")
    return _invoke(*args)


@pytest.mark.parametrize(("text", "expected"), NATIVE_ROWS.values(), ids=NATIVE_ROWS.keys())
def test_native_registers_the_kept_halves_on_one_webhook_per_phase(
    tmp_path: Path, text: str | None, expected: dict[str, list[tuple[str, str]]]
) -> None:
    """One webhook per phase, whose server (``serve --native``) runs the kept halves as one
    chain: the API server cannot reinvoke one half apart from the others."""
    result = _native(tmp_path, text)
    assert result.exit_code == 0, result.output
    found = {
        doc["kind"]: [(h["name"], h["clientConfig"]["service"]["path"]) for h in doc["webhooks"]]
        for doc in yaml.safe_load_all(result.stdout)
    }
    assert found == expected


@pytest.mark.parametrize("text", [row[0] for row in NATIVE_ROWS.values()], ids=NATIVE_ROWS.keys())
def test_native_registers_exactly_what_serve_native_runs(tmp_path: Path, text: str | None) -> None:
    """The rules cover what the kept halves handle, and nothing a native policy does."""
    from webhooks.core.admission import Admission
    from webhooks.core.config import load_config
    from webhooks.export import webhook_halves

    config = load_config(yaml.safe_load(text) if text else None, REGISTRY)
    served = Admission(REGISTRY, config, kept=webhook_halves(config, REGISTRY))
    result = _native(tmp_path, text)
    registered = {doc["kind"]: doc["webhooks"] for doc in yaml.safe_load_all(result.stdout)}
    for phase, kind in (
        ("mutate", "MutatingWebhookConfiguration"),
        ("validate", "ValidatingWebhookConfiguration"),
    ):
        names = [p.name for p in served.plugins(phase)]
        want = rules(plugin_table(REGISTRY), phase, names, exclude=frozenset({"nodes"}))
        hooks = registered.get(kind, [])
        assert [h["rules"] for h in hooks] == ([want] if want else [])


def test_native_with_a_webhook_per_plugin_is_refused(tmp_path: Path) -> None:
    result = _native(tmp_path, PTR_ON, "--per-plugin")
    assert result.exit_code == 2
    assert "--per-plugin with --native" in result.stderr


def test_a_serving_certificate_given_as_ca_is_warned_about(chain: pki.CertPaths) -> None:
    result = _invoke(f"--ca-file={chain.cert}")
    assert result.exit_code == 0
    assert "holds no CA certificate" in result.stderr


# --------------------------------------------------------------------------- --inject


def _existing() -> dict[tuple[str, str], dict[str, Any]]:
    """The configurations ``webhook-config`` would register, as Helm created them: no caBundle."""
    settings = WebhookSettings(name="pw", namespace="placement", service="pw")
    objects = configurations(settings, plugin_table(REGISTRY), list(REGISTRY.names))
    return {(PLURALS[o["kind"]], "pw"): o for o in objects}


def test_inject_writes_only_the_ca_bundle_with_server_side_apply(
    chain: pki.CertPaths, tmp_path: Path
) -> None:
    objects = _existing()
    assert objects
    before = copy.deepcopy(objects)
    with running(*objects.values()) as api:
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
        args = ["--inject", "--name=pw", f"--ca-file={chain.ca}", f"--kubeconfig={kubeconfig}"]
        result = _invoke(*args)
        again = _invoke(*args)
        stored = copy.deepcopy(api.objects)
        requests = list(api.requests)

    assert result.exit_code == 0, result.output
    bundle = base64.b64encode(chain.ca.read_bytes()).decode()
    patches = [r for r in requests if r.method == "PATCH"]
    assert len(patches) == 2 * len(objects)
    for patch in patches:
        assert patch.headers["content-type"] == "application/apply-patch+yaml"
        assert patch.headers["authorization"] == f"Bearer {TOKEN}"
        assert patch.query["fieldManager"] == [FIELD_MANAGER]
        assert patch.query["force"] == ["true"]
        assert set(patch.body) == {"apiVersion", "kind", "metadata", "webhooks"}
        assert patch.body["metadata"] == {"name": "pw"}
        for hook in patch.body["webhooks"]:
            assert hook == {"name": hook["name"], "clientConfig": {"caBundle": bundle}}
    for key, obj in stored.items():
        original = before[key]
        assert [h["name"] for h in obj["webhooks"]] == [h["name"] for h in original["webhooks"]]
        for hook, old in zip(obj["webhooks"], original["webhooks"], strict=True):
            assert hook["clientConfig"]["caBundle"] == bundle
            unchanged = {
                k: v for k, v in hook.items() if k not in ("clientConfig", "objectSelector")
            }
            assert unchanged == {k: v for k, v in old.items() if k != "clientConfig"} | {
                "rules": [dict(r, scope="*") for r in old["rules"]]
            }
    assert "MutatingWebhookConfiguration pw: caBundle updated" in result.stdout
    assert again.exit_code == 0, again.output
    assert "caBundle unchanged" in again.stdout
    assert "updated" not in again.stdout


def test_inject_into_a_missing_configuration_exits_1_with_the_servers_message(
    chain: pki.CertPaths, tmp_path: Path
) -> None:
    with running() as api:
        result = _invoke(
            "--inject",
            "--name=pw",
            f"--ca-file={chain.ca}",
            f"--kubeconfig={api.kubeconfig(tmp_path / 'kubeconfig')}",
        )
    assert result.exit_code == 1
    assert (
        'mutatingwebhookconfigurations.admissionregistration.k8s.io "pw" not found' in result.stderr
    )
    assert "HTTP 404" in result.stderr


def test_inject_with_an_unreachable_api_server_exits_1(
    chain: pki.CertPaths, tmp_path: Path
) -> None:
    with refused_port() as port:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}")
        result = _invoke("--inject", f"--ca-file={chain.ca}", f"--kubeconfig={kubeconfig}")
    assert result.exit_code == 1
    assert "unreachable" in result.stderr


def test_inject_with_an_unusable_kubeconfig_exits_1(chain: pki.CertPaths, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n")
    result = _invoke("--inject", f"--ca-file={chain.ca}", f"--kubeconfig={kubeconfig}")
    assert result.exit_code == 1
    assert "no usable cluster credentials" in result.stderr


def test_inject_watch_repairs_a_reset_bundle_and_follows_a_rotated_ca(
    chain: pki.CertPaths, tmp_path: Path
) -> None:
    import signal
    import subprocess
    import sys
    import time

    ca_file = tmp_path / "ca.crt"
    shutil.copy(chain.ca, ca_file)
    rotated = pki.generate(tmp_path / "rotated", hosts=["pw.placement.svc"])
    objects = _existing()
    key = next(iter(objects))

    def bundles(api: Any) -> set[str | None]:
        with api.lock:
            hooks = [h for obj in api.objects.values() for h in obj["webhooks"]]
            return {h["clientConfig"].get("caBundle") for h in hooks}

    def wait_for(predicate: Any, seconds: float = 15) -> bool:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if predicate():
                return True
            time.sleep(0.05)
        return False

    with running(*objects.values()) as api:
        cmd = [
            sys.executable, "-m", "webhooks", "webhook-config", "--inject", "--name=pw",
            f"--ca-file={ca_file}", f"--kubeconfig={api.kubeconfig(tmp_path / 'kubeconfig')}",
            "--watch=0.2",
        ]  # fmt: skip
        process = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            text=True,
        )
        try:
            first = base64.b64encode(chain.ca.read_bytes()).decode()
            assert wait_for(lambda: bundles(api) == {first}), "first injection did not happen"
            patches = sum(r.method == "PATCH" for r in api.requests)
            assert wait_for(
                lambda: sum(r.method == "GET" for r in api.requests) >= 3 * len(objects)
            )
            assert sum(r.method == "PATCH" for r in api.requests) == patches, (
                "wrote without a change"
            )

            with api.lock:  # what a helm upgrade with a placeholder caBundle would do
                for hook in api.objects[key]["webhooks"]:
                    hook["clientConfig"].pop("caBundle", None)
            assert wait_for(lambda: bundles(api) == {first}), "a reset caBundle was not repaired"

            shutil.copy(rotated.ca, ca_file)
            second = base64.b64encode(rotated.ca.read_bytes()).decode()
            assert wait_for(lambda: bundles(api) == {second}), "a rotated CA was not injected"
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                out, err = process.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                out, err = process.communicate(timeout=5)
    assert process.returncode == 0, err
    # First injection, the repair, the rotation: every write is reported.
    assert out.count("caBundle updated") == 2 * len(objects) + 1


# --------------------------------------------------------------------------- judged pods


def _pod_spec(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": spec}


def _default_condition() -> str:
    table = without_halves(
        plugin_table(REGISTRY), inactive_halves(REGISTRY, load_config(None, REGISTRY))
    )
    enabled = [p.name for p in REGISTRY if p.enabled_by_default]
    condition = judged_pods_condition(table, enabled)
    assert condition is not None
    return condition


LT = {"key": "cores", "operator": "Lt", "value": "8", "effect": "NoSchedule"}
EXISTS = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("resource", "obj", "sent"),
    [
        pytest.param("pods", _pod_spec(containers=[]), False, id="a plain pod costs one call"),
        pytest.param(
            "pods",
            _pod_spec(containers=[], tolerations=[EXISTS]),
            False,
            id="a pod whose tolerations the API server has already checked is not sent",
        ),
        pytest.param(
            "pods",
            _pod_spec(containers=[], tolerations=[{"key": "k"}]),
            False,
            id="a toleration without an operator is the API server's to judge",
        ),
        pytest.param(
            "pods",
            _pod_spec(containers=[], tolerations=[EXISTS, LT]),
            True,
            id="a comparison operator is sent: the API server's gate may allow what policy forbids",
        ),
        pytest.param(
            "pods",
            _pod_spec(containers=[], runtimeClassName="gvisor"),
            True,
            id="a pod naming a RuntimeClass is sent (missing class, overhead)",
        ),
        pytest.param(
            "pods",
            _pod_spec(containers=[], overhead={"cpu": "1"}),
            True,
            id="a pod that set an overhead itself is sent",
        ),
        pytest.param(
            "deployments",
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}},
            True,
            id="every other resource is sent",
        ),
    ],
)
def test_the_default_validating_webhook_is_sent_only_pods_a_check_can_judge(
    resource: str, obj: dict[str, Any], sent: bool
) -> None:
    activation = {"request": _request(resource=resource), "object": obj}
    assert _evaluate(_default_condition(), activation) is sent


@pytest.mark.parametrize(
    ("enabled", "plugins", "has_condition"),
    [
        pytest.param(
            ["runtime-class", "taint-toleration-rules"],
            {},
            True,
            id="checks that each say which pods they can judge give a condition",
        ),
        pytest.param(
            ["runtime-class", "extended-resource-toleration"],
            {"extended-resource-toleration": {"enforce": {"guarded": [{"taintKey": "t"}]}}},
            False,
            id="an enforcing check that can judge any pod gives none",
        ),
        pytest.param(
            ["runtime-class", "extended-resource-toleration"],
            {},
            True,
            id="a check that is switched off counts for nothing",
        ),
        pytest.param(
            ["runtime-class", "pod-node-selector"],
            {},
            False,
            id="a check without a condition of its own gives none",
        ),
    ],
)
def test_the_condition_exists_only_when_every_served_check_bounds_the_pods_it_judges(
    enabled: list[str], plugins: dict[str, Any], has_condition: bool
) -> None:
    raw = {
        "plugins": {
            name: {"enabled": name in enabled, **plugins.get(name, {})} for name in REGISTRY.names
        }
    }
    config = load_config(raw, REGISTRY)
    table = without_halves(plugin_table(REGISTRY), inactive_halves(REGISTRY, config))
    closed = WebhookSettings(mutating_failure_policy="Fail")
    objects = configurations(closed, table, enabled)
    validating = [o for o in objects if o["kind"] == "ValidatingWebhookConfiguration"]
    names = [c["name"] for o in validating for h in o["webhooks"] for c in h["matchConditions"]]
    assert (JUDGED_PODS in names) is has_condition
    off = WebhookSettings(mutating_failure_policy="Fail", skip_unjudged_pods=False)
    assert JUDGED_PODS not in str(configurations(off, table, enabled))
    # Failing open, the validating call is every pod's guard against a failed mutating call.
    assert JUDGED_PODS not in str(configurations(WebhookSettings(), table, enabled))


GUARDED = {"guarded": [{"taintKey": "nvidia.com/gpu"}]}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        pytest.param("extended-resource-toleration", None, id="enforcement absent is off"),
        pytest.param("extended-resource-toleration", False, id="enforcement false is off"),
        pytest.param("extended-resource-toleration", GUARDED, id="a guarded list is on"),
        pytest.param("dedicated-nodes", None, id="dedicated enforcement absent is on"),
        pytest.param("dedicated-nodes", True, id="dedicated enforcement true is on"),
        pytest.param("dedicated-nodes", False, id="dedicated enforcement false is off"),
    ],
)
def test_the_chart_s_activity_key_agrees_with_the_plugin_s_activity(name: str, value: Any) -> None:
    check = REGISTRY.get(name).validate
    assert check is not None and check.active is not None
    raw: dict[str, Any] = {"enabled": True}
    if value is not None:
        raw[check.active_key] = value
    config = load_config({"plugins": {name: raw}}, REGISTRY)
    [row] = [r for r in plugin_table(REGISTRY) if r["name"] == name]
    chart = bool(value) if value is not None else row["validateActive"]["default"]
    assert check.active(config.plugins[name].settings) is chart


def test_every_switchable_check_names_its_key() -> None:
    switchable = [p for p in REGISTRY if p.validate is not None and p.validate.active]
    assert {p.name for p in switchable} == {"extended-resource-toleration", "dedicated-nodes"}
    assert all(p.validate is not None and p.validate.active_key for p in switchable)


def test_with_every_mutation_native_the_condition_needs_no_fail_closed_mutating_webhook() -> None:
    # As `webhook-config --native` registers the defaults: no mutating webhook at all, so no
    # mutating call can fail open and the validating call guards nothing a condition skips.
    config = load_config(None, REGISTRY)
    table = without_halves(plugin_table(REGISTRY), inactive_halves(REGISTRY, config))
    mutating = {(row["name"], "mutate") for row in table if "mutate" in row}
    enabled = [p.name for p in REGISTRY if config.plugins[p.name].enabled]
    objects = configurations(WebhookSettings(), without_halves(table, mutating), enabled)
    assert [o["kind"] for o in objects] == ["ValidatingWebhookConfiguration"]
    assert JUDGED_PODS in str(objects)
