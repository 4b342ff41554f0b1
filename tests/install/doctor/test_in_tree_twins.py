"""``in-tree-twins``: what the API server does to a dry-run pod our webhooks never see."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from tests.install.doctor.fakeclient import FakeClient, installation, status
from webhooks.install.doctor import twins
from webhooks.install.doctor.findings import Status
from webhooks.install.webhookconfig import WebhookSettings, configurations, plugin_table
from webhooks.k8s.namespaces import NODE_SELECTOR_ANNOTATION
from webhooks.plugins import REGISTRY

NAMESPACES = "/api/v1/namespaces"


def _namespace(name: str, **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"kubernetes.io/metadata.name": name}}
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "status": {"phase": "Active"}}


def _live_configurations(names: list[str], **settings: Any) -> tuple[dict[str, Any], ...]:
    table = plugin_table(REGISTRY)
    return tuple(configurations(WebhookSettings(**settings), table, names))


def in_tree(on: set[str], seconds: int = 300, selector: dict[str, str] | None = None) -> Any:
    """The API server's answer to a dry-run pod create with the in-tree plugins ``on``."""

    def answer(pod: Any) -> tuple[int, Any]:
        pod = copy.deepcopy(pod)
        spec = pod["spec"]
        if "RuntimeClass" in on and spec.get("runtimeClassName"):
            name = spec["runtimeClassName"]
            return status(
                403, f'pods "x" is forbidden: pod rejected: RuntimeClass "{name}" not found'
            )
        tolerations = spec.setdefault("tolerations", [])
        if "PodNodeSelector" in on and selector:
            spec["nodeSelector"] = dict(selector)
        if "DefaultTolerationSeconds" in on:
            for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
                tolerations.append(
                    {
                        "key": key,
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": seconds,
                    }
                )
        requests = spec["containers"][0].get("resources", {}).get("requests", {})
        if "PodTolerationRestriction" in on and requests:
            tolerations.append(
                {
                    "key": "node.kubernetes.io/memory-pressure",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                }
            )
        if "ExtendedResourceToleration" in on:
            for name in spec["containers"][0].get("resources", {}).get("limits", {}):
                tolerations.append({"key": name, "operator": "Exists", "effect": "NoSchedule"})
        anti = spec.get("affinity", {}).get("podAntiAffinity")
        if "LimitPodHardAntiAffinityTopology" in on and anti:
            return status(
                403,
                "pods is forbidden: affinity.PodAntiAffinity.RequiredDuringScheduling has "
                "TopologyKey topology.kubernetes.io/zone but only key kubernetes.io/hostname "
                "is allowed",
            )
        return 201, pod

    return answer


def _client(answer: Any, *namespaces: dict[str, Any]) -> FakeClient:
    found = namespaces or (_namespace("placement-webhooks"), _namespace("kube-system"))
    routes: dict[tuple[str, str], Any] = {("GET", NAMESPACES): (200, {"items": list(found)})}
    for ns in found:
        routes[("POST", f"{NAMESPACES}/{ns['metadata']['name']}/pods")] = answer
    return FakeClient(routes)


ALL_TWINS = {
    "plugins": {
        "pod-node-selector": {"enabled": True},
        "pod-toleration-restriction": {"enabled": True},
        "anti-affinity-topology": {"enabled": True},
    }
}


@pytest.mark.parametrize(
    ("on", "config", "expected"),
    [
        pytest.param(
            set(),
            None,
            {
                "default-toleration-seconds": Status.OK,
                "extended-resource-toleration": Status.OK,
                "runtime-class": Status.OK,
            },
            id="with every in-tree twin off, the defaults are all ok",
        ),
        pytest.param(
            {"DefaultTolerationSeconds", "RuntimeClass"},
            None,
            {
                "default-toleration-seconds": Status.OK,
                "extended-resource-toleration": Status.OK,
                "runtime-class": Status.OK,
            },
            id="the two twins on by default in kube-apiserver are harmless with the same seconds",
        ),
        pytest.param(
            {"DefaultTolerationSeconds"},
            {"plugins": {"default-toleration-seconds": {"notReadySeconds": 60}}},
            {
                "default-toleration-seconds": Status.FAIL,
                "extended-resource-toleration": Status.OK,
                "runtime-class": Status.OK,
            },
            id="DefaultTolerationSeconds on with other seconds than ours fails: ours never apply",
        ),
        pytest.param(
            {"ExtendedResourceToleration", "DefaultTolerationSeconds", "RuntimeClass"},
            None,
            {
                "default-toleration-seconds": Status.OK,
                "extended-resource-toleration": Status.FAIL,
                "runtime-class": Status.OK,
            },
            id="a managed cluster's in-tree ExtendedResourceToleration fails beside ours",
        ),
        pytest.param(
            {"PodTolerationRestriction", "LimitPodHardAntiAffinityTopology"},
            ALL_TWINS,
            {
                "pod-node-selector": Status.WARN,
                "default-toleration-seconds": Status.OK,
                "pod-toleration-restriction": Status.FAIL,
                "extended-resource-toleration": Status.OK,
                "runtime-class": Status.OK,
                "anti-affinity-topology": Status.FAIL,
            },
            id="opt-in twins on fail; PodNodeSelector with no annotated namespace warns",
        ),
    ],
)
def test_each_enabled_twin_gets_a_finding(
    on: set[str], config: dict[str, Any] | None, expected: dict[str, Status]
) -> None:
    found = twins.check(installation(_client(in_tree(on)), config))
    by_plugin = {f.reason.split(":", 1)[0]: f for f in found}
    assert {name: f.status for name, f in by_plugin.items()} == expected
    for finding in found:
        assert finding.check == "in-tree-twins"
        assert (finding.status == Status.OK) == (finding.fix == "")


def test_a_failing_twin_names_the_in_tree_plugin_and_both_fixes() -> None:
    found = twins.check(installation(_client(in_tree({"ExtendedResourceToleration"}))))
    [failing] = [f for f in found if f.status == Status.FAIL]
    assert "ExtendedResourceToleration" in failing.reason
    assert "--enable-admission-plugins" in failing.fix
    assert "plugins.extended-resource-toleration.enabled: false" in failing.fix


def test_different_seconds_give_the_flags_that_would_match_ours() -> None:
    config = {"plugins": {"default-toleration-seconds": {"notReadySeconds": 60}}}
    found = twins.check(installation(_client(in_tree({"DefaultTolerationSeconds"})), config))
    [failing] = [f for f in found if f.status == Status.FAIL]
    assert "300 s / 300 s" in failing.reason
    assert "--default-not-ready-toleration-seconds=60" in failing.fix


@pytest.mark.parametrize(
    ("on", "expected"),
    [
        pytest.param(
            {"PodNodeSelector"}, Status.FAIL, id="an annotated namespace shows PodNodeSelector on"
        ),
        pytest.param(
            set(), Status.OK, id="an annotated namespace whose selector did not arrive shows it off"
        ),
    ],
)
def test_pod_node_selector_is_judged_in_a_namespace_with_its_annotation(
    on: set[str], expected: Status
) -> None:
    client = _client(
        in_tree(on, selector={"pool": "system"}),
        _namespace("placement-webhooks"),
        _namespace("kube-system", **{NODE_SELECTOR_ANNOTATION: "pool=system"}),
    )
    found = twins.check(installation(client, {"plugins": {"pod-node-selector": {"enabled": True}}}))
    [selector] = [f for f in found if f.reason.startswith("pod-node-selector:")]
    assert selector.status == expected
    # One mutation pod (for every mutating twin) where the annotation is, and the
    # RuntimeClass pod in the suite's own namespace.
    posted = [path for method, path, _ in client.asked if method == "POST"]
    assert posted == [
        "/api/v1/namespaces/kube-system/pods",
        "/api/v1/namespaces/placement-webhooks/pods",
    ]


def test_the_dry_run_goes_where_no_webhook_of_ours_is_sent() -> None:
    client = _client(in_tree(set()), _namespace("team-a"), _namespace("placement-webhooks"))
    live = _live_configurations(["default-toleration-seconds", "runtime-class"])
    twins.check(installation(client, configurations=live))
    posted = {path for method, path, _ in client.asked if method == "POST"}
    assert posted == {"/api/v1/namespaces/placement-webhooks/pods"}


def test_with_every_namespace_sent_to_our_webhooks_nothing_is_judged() -> None:
    client = _client(in_tree(set()), _namespace("team-a"))
    live = _live_configurations(["default-toleration-seconds", "runtime-class"])
    [finding] = twins.check(installation(client, configurations=live))
    assert finding.status == Status.WARN
    assert "every namespace is sent to our webhooks" in finding.reason
    assert not [asked for asked in client.asked if asked[0] == "POST"]


def test_a_pod_refused_for_another_reason_is_a_warning_with_the_api_server_s_words() -> None:
    client = _client(lambda pod: status(403, "error looking up service account x/default"))
    found = twins.check(installation(client))
    assert {f.status for f in found} == {Status.WARN}
    assert all("error looking up service account" in f.reason for f in found)


def test_an_unknown_configuration_is_a_warning_saying_why() -> None:
    [finding] = twins.check(installation(FakeClient(), known=False))
    assert finding.status == Status.WARN
    assert "no ConfigMap placement-webhooks" in finding.reason


def test_only_dry_runs_are_sent() -> None:
    client = _client(in_tree({"RuntimeClass"}))
    twins.check(installation(client, ALL_TWINS))
    writes = [asked for asked in client.asked if asked[0] != "GET"]
    assert writes and all(method == "POST" for method, _, _ in writes)


@pytest.mark.parametrize(
    ("object_selector", "posted"),
    [
        pytest.param(
            {"matchLabels": {"team": "a"}},
            {"/api/v1/namespaces/team-a/pods"},
            id="an objectSelector the doctor's pod does not match leaves every namespace usable",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]},
            set(),
            id="an objectSelector the doctor's pod matches leaves no namespace",
        ),
    ],
)
def test_a_webhook_s_object_selector_counts_as_much_as_its_namespace_selector(
    object_selector: dict[str, Any], posted: set[str]
) -> None:
    client = _client(in_tree(set()), _namespace("team-a"))
    live = _live_configurations(
        ["default-toleration-seconds", "runtime-class"], object_selector=object_selector
    )
    twins.check(installation(client, configurations=live))
    assert {path for method, path, _ in client.asked if method == "POST"} == posted


@pytest.mark.parametrize(
    ("refusal", "expected"),
    [
        pytest.param(
            "pod tolerations (possibly merged with namespace default tolerations) conflict "
            "with its namespace whitelist",
            {"pod-toleration-restriction": Status.FAIL, "pod-node-selector": Status.WARN},
            id="a toleration whitelist refusing the pod shows PodTolerationRestriction on",
        ),
        pytest.param(
            "pod node label selector labels conflict with its namespace whitelist",
            {"pod-toleration-restriction": Status.WARN, "pod-node-selector": Status.FAIL},
            id="a node selector whitelist refusing the pod shows PodNodeSelector on",
        ),
    ],
)
def test_a_refusal_in_tree_words_it_names_its_twin_and_only_it(
    refusal: str, expected: dict[str, Status]
) -> None:
    client = _client(lambda pod: status(403, f'pods "x" is forbidden: {refusal}'))
    found = twins.check(installation(client, ALL_TWINS))
    by_plugin = {f.reason.split(":", 1)[0]: f.status for f in found}
    assert {name: by_plugin[name] for name in expected} == expected


def test_the_cluster_side_checks_run_last_in_their_order() -> None:
    from webhooks.install.doctor import run

    ids = [name for name, _ in run.CHECKS]
    assert ids[-3:] == ["in-tree-twins", "apis", "availability"]


def test_a_namespace_another_mutating_webhook_sees_is_used_last() -> None:
    """What another webhook adds to the pod could be taken for an in-tree plugin's doing."""
    client = _client(in_tree(set()), _namespace("placement-webhooks"), _namespace("quiet"))
    other = {
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "someone-else"},
        "webhooks": [
            {
                "name": "mutate.someone-else",
                "rules": [{"resources": ["pods"]}],
                "namespaceSelector": {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "In",
                            "values": ["placement-webhooks"],
                        }
                    ]
                },
            }
        ],
    }
    gathered = replace(installation(client), others=(other,))
    twins.check(gathered)
    posted = {path for method, path, _ in client.asked if method == "POST"}
    assert posted == {"/api/v1/namespaces/quiet/pods"}
