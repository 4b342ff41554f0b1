"""export as a library: which objects a config gives, and what the report says about it.

What the objects *do* is the API server's to say (tests/controlplane/test_native_*); these
tests pin the shape and the verdicts, which need no Go.
"""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.core.config import load_config
from webhooks.export import EXACT, EXCEPT, NOT_EXPORTED, export
from webhooks.export.assemble import PASS_MARKER, VALIDATION_ACTIONS
from webhooks.plugins import REGISTRY

ALL_EXPRESSIBLE: dict[str, Any] = {
    "plugins": {
        "pod-node-selector": {"enabled": True, "clusterDefaultNodeSelector": "tier=general"},
        "default-toleration-seconds": {"namespaceOverrides": True},
        "dedicated-nodes": {"enabled": True},
        "anti-affinity-topology": {"enabled": True},
    }
}


def _export(document: Any, *only: str, hybrid: bool = False) -> Any:
    return export(load_config(document, REGISTRY), REGISTRY, only, hybrid=hybrid)


def _lines(document: Any) -> dict[str, str]:
    result = _export(document)
    return {line.subject: line.verdict for line in result.lines}


def _named(objects: Any, kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


@pytest.mark.parametrize(
    ("document", "subject", "verdict"),
    [
        pytest.param(
            None,
            "plugins.default-toleration-seconds",
            EXACT,
            id="DefaultTolerationSeconds is exact",
        ),
        pytest.param(
            None,
            "plugins.extended-resource-toleration",
            EXACT,
            id="ExtendedResourceToleration is exact",
        ),
        pytest.param(
            None, "plugins.daemonset-tolerations", EXACT, id="the DaemonSet defaults are exact"
        ),
        pytest.param(
            None, "plugins.taint-toleration-rules", EXACT, id="the toleration rules are exact"
        ),
        pytest.param(
            None,
            "plugins.runtime-class",
            EXCEPT,
            id="RuntimeClass cannot refuse a class that does not exist",
        ),
        pytest.param(
            {"plugins": {"pod-node-selector": {"enabled": True}}},
            "plugins.pod-node-selector",
            EXACT,
            id="PodNodeSelector is exact",
        ),
        pytest.param(
            {"plugins": {"anti-affinity-topology": {"enabled": True}}},
            "plugins.anti-affinity-topology",
            EXACT,
            id="LimitPodHardAntiAffinityTopology is exact",
        ),
        pytest.param(
            {"plugins": {"pod-toleration-restriction": {"enabled": True}}},
            "plugins.pod-toleration-restriction",
            NOT_EXPORTED,
            id="PodTolerationRestriction's JSON annotations are not exported",
        ),
        pytest.param(
            {"plugins": {"dedicated-nodes": {"enabled": True}}},
            "plugins.dedicated-nodes",
            EXCEPT,
            id="dedicated-nodes cannot warn natively",
        ),
        pytest.param(
            {
                "plugins": {
                    "extended-resource-toleration": {
                        "enforce": {"guarded": [{"taintKey": "nvidia.com/gpu"}]}
                    }
                }
            },
            "plugins.extended-resource-toleration.enforce",
            EXCEPT,
            id="enforce does not judge pods with claims",
        ),
        pytest.param(
            {"plugins": {"extended-resource-toleration": {"deviceClaims": True}}},
            "plugins.extended-resource-toleration.deviceClaims",
            NOT_EXPORTED,
            id="deviceClaims needs lookups a policy cannot make",
        ),
        pytest.param(
            {"plugins": {"default-toleration-seconds": {"mutation": "monitor"}}},
            "plugins.default-toleration-seconds.mutation",
            NOT_EXPORTED,
            id="monitor records what a policy cannot record",
        ),
        pytest.param(
            {
                "exceptions": [
                    {
                        "name": "trial",
                        "plugins": ["default-toleration-seconds"],
                        "namespaces": ["a"],
                        "expires": "2030-01-01T00:00:00Z",
                    }
                ]
            },
            "plugins.default-toleration-seconds",
            EXCEPT,
            id="an exception that expires never expires natively",
        ),
        pytest.param(
            {"exceptions": [{"name": "ops", "plugins": ["*"], "namespaces": ["ops"]}]},
            "exceptions[0] (ops)",
            EXACT,
            id="an exception without expiry is exact",
        ),
    ],
)
def test_the_report_gives_each_plugin_and_setting_its_verdict(
    document: Any, subject: str, verdict: str
) -> None:
    assert _lines(document)[subject] == verdict


def test_every_line_is_one_of_the_three_verdicts_and_says_why_when_not_exact() -> None:
    result = _export({"plugins": {name: {"enabled": True} for name in REGISTRY.names}})
    for line in result.lines:
        assert line.verdict in (EXACT, EXCEPT, NOT_EXPORTED)
        assert (line.verdict == EXACT) == (line.why == "") or line.why.startswith("see ")
        assert line.render().startswith(f"{line.subject}: {line.verdict}")


def test_the_report_covers_every_enabled_plugin_and_only_those() -> None:
    plugins = {line.subject.split(".")[1] for line in _export(None).lines}
    defaults = load_config(None, REGISTRY)
    assert plugins == {p.name for p in REGISTRY if defaults.plugins[p.name].enabled}


def test_exact_is_true_only_when_every_line_is_exact() -> None:
    assert not _export(None).exact  # runtime-class
    assert _export(None, "default-toleration-seconds", "daemonset-tolerations").exact


def test_the_same_config_gives_the_same_objects() -> None:
    assert _export(ALL_EXPRESSIBLE).objects == _export(ALL_EXPRESSIBLE).objects


def test_every_object_is_admissionregistration_v1_and_each_policy_has_its_binding() -> None:
    objects = _export(ALL_EXPRESSIBLE).objects
    assert {o["apiVersion"] for o in objects} == {"admissionregistration.k8s.io/v1"}
    for kind in ("MutatingAdmissionPolicy", "ValidatingAdmissionPolicy"):
        policies = _named(objects, kind)
        bindings = _named(objects, f"{kind}Binding")
        assert set(policies) == set(bindings)
        assert all(b["spec"]["policyName"] == name for name, b in bindings.items())


def test_every_pod_mutation_sits_in_one_policy_in_chain_order() -> None:
    """The API server runs separate policies in no fixed order; mutations in one, in the
    chain's order: the DaemonSet defaults first (the controller writes them before
    admission), then ORDER."""
    policies = _named(_export(ALL_EXPRESSIBLE).objects, "MutatingAdmissionPolicy")
    with_class = policies["placement-webhooks-runtime-class"]["spec"]["mutations"]
    expressions = [m["jsonPatch"]["expression"] for m in with_class]
    firsts = [
        next(i for i, e in enumerate(expressions) if marker in e)
        for marker in (
            "dsPodMissing",
            "pnsImposed",
            "dtsMissing",
            "ertWanted",
            "rcMerged",
            "dnWanted",
        )
    ]
    assert firsts == sorted(firsts)


def test_pods_naming_a_runtime_class_get_the_policy_whose_params_are_runtime_classes() -> None:
    objects = _export(None).objects
    policies = _named(objects, "MutatingAdmissionPolicy")
    binding = _named(objects, "MutatingAdmissionPolicyBinding")["placement-webhooks-runtime-class"]
    assert policies["placement-webhooks-runtime-class"]["spec"]["paramKind"] == {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
    }
    assert binding["spec"]["paramRef"] == {"selector": {}, "parameterNotFoundAction": "Allow"}
    conditions = {c["name"] for c in policies["placement-webhooks"]["spec"]["matchConditions"]}
    assert "not-a-runtime-class-pod" in conditions


def test_a_change_by_one_of_our_plugins_runs_the_mutations_again_behind_a_marker() -> None:
    document = {"plugins": {"dedicated-nodes": {"enabled": True}}}
    spec = _named(_export(document).objects, "MutatingAdmissionPolicy")["placement-webhooks"]
    last = spec["spec"]["mutations"][-1]["jsonPatch"]["expression"]
    assert PASS_MARKER in last and "'remove'" in last
    assert spec["spec"]["reinvocationPolicy"] == "Never"


def test_the_daemonset_defaults_ask_for_no_second_pass() -> None:
    """As in the chain: they stand for the controller's writes, which nothing reinvokes; with
    no other plugin of ours mutating, the built-in defaults need one pass only."""
    spec = _named(_export(None).objects, "MutatingAdmissionPolicy")["placement-webhooks"]["spec"]
    expressions = [m["jsonPatch"]["expression"] for m in spec["mutations"]]
    assert "dsPodMissing" in expressions[0]
    assert not any(PASS_MARKER in e for e in expressions)


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        pytest.param("enforce", ["Deny"], id="enforce denies"),
        pytest.param("warn", ["Warn", "Audit"], id="warn tells the user and the audit log"),
        pytest.param("audit", ["Audit"], id="audit tells only the audit log"),
    ],
)
def test_a_plugin_s_action_becomes_its_binding_s_validation_actions(
    action: str, expected: list[str]
) -> None:
    document = {"plugins": {"anti-affinity-topology": {"enabled": True, "action": action}}}
    bindings = _named(_export(document).objects, "ValidatingAdmissionPolicyBinding")
    assert (
        bindings["placement-webhooks-anti-affinity-topology"]["spec"]["validationActions"]
        == expected
    )
    assert VALIDATION_ACTIONS[action] == expected  # type: ignore[index]


def test_action_overrides_give_one_policy_per_action_each_judging_only_its_namespaces() -> None:
    document = {
        "plugins": {
            "anti-affinity-topology": {
                "enabled": True,
                "action": "warn",
                "actionOverrides": [
                    {"namespaceSelector": {"matchLabels": {"env": "prod"}}, "action": "enforce"}
                ],
            }
        }
    }
    objects = _export(document).objects
    bindings = _named(objects, "ValidatingAdmissionPolicyBinding")
    assert bindings["placement-webhooks-anti-affinity-topology-warn"]["spec"][
        "validationActions"
    ] == [
        "Warn",
        "Audit",
    ]
    assert bindings["placement-webhooks-anti-affinity-topology-enforce"]["spec"][
        "validationActions"
    ] == ["Deny"]
    policy = _named(objects, "ValidatingAdmissionPolicy")[
        "placement-webhooks-anti-affinity-topology-enforce"
    ]
    action = policy["spec"]["variables"][0]
    assert action["name"] == "action" and "'env' in" in action["expression"]
    assert policy["spec"]["validations"][0]["expression"].startswith(
        "variables.action != 'enforce' ||"
    )


def test_an_exception_becomes_a_match_condition_of_the_plugins_it_covers() -> None:
    document = {
        "plugins": {"anti-affinity-topology": {"enabled": True}},
        "exceptions": [
            {
                "name": "ops",
                "plugins": ["anti-affinity-topology"],
                "namespaces": ["ops"],
                "serviceAccounts": ["ops:deployer"],
                "groups": ["admins"],
            }
        ],
    }
    policy = _named(_export(document).objects, "ValidatingAdmissionPolicy")[
        "placement-webhooks-anti-affinity-topology"
    ]
    condition = next(c for c in policy["spec"]["matchConditions"] if c["name"] == "not-excepted")
    assert "request.namespace in ['ops']" in condition["expression"]
    assert "['ops:deployer']" in condition["expression"]
    assert "g in ['admins']" in condition["expression"]


def test_the_policies_are_scoped_as_the_webhooks_are() -> None:
    policy = _named(_export(None).objects, "MutatingAdmissionPolicy")["placement-webhooks"]
    constraints = policy["spec"]["matchConstraints"]
    assert constraints["namespaceSelector"]["matchExpressions"][0]["values"] == [
        "placement-webhooks",
        "kube-system",
        "kube-node-lease",
    ]
    conditions = {c["name"] for c in policy["spec"]["matchConditions"]}
    assert {"not-a-mirror-pod", "not-from-a-kubelet", "not-the-suite-itself"} <= conditions


def test_not_exported_plugins_leave_no_objects_behind() -> None:
    document = {
        "plugins": {
            "pod-toleration-restriction": {"enabled": True},
            "default-toleration-seconds": {"enabled": False},
            "extended-resource-toleration": {"enabled": False},
            "runtime-class": {"enabled": False},
            "daemonset-tolerations": {"enabled": False},
            "taint-toleration-rules": {"enabled": False},
        }
    }
    assert _export(document).objects == ()


@pytest.mark.parametrize(
    ("document", "native"),
    [
        pytest.param(
            None,
            {
                ("default-toleration-seconds", "mutate"),
                ("extended-resource-toleration", "mutate"),
                ("runtime-class", "mutate"),
                ("daemonset-tolerations", "mutate"),
                ("taint-toleration-rules", "validate"),
            },
            id="the defaults: everything but runtime-class's validating half",
        ),
        pytest.param(
            {"plugins": {"pod-toleration-restriction": {"enabled": True}}},
            {
                ("daemonset-tolerations", "mutate"),
                ("default-toleration-seconds", "mutate"),
                ("taint-toleration-rules", "validate"),
            },
            id="no mutation after one that stays with the webhook goes native;"
            " the DaemonSet defaults come first",
        ),
        pytest.param(
            {"plugins": {"dedicated-nodes": {"enabled": True}}},
            {
                ("default-toleration-seconds", "mutate"),
                ("extended-resource-toleration", "mutate"),
                ("runtime-class", "mutate"),
                ("daemonset-tolerations", "mutate"),
                ("dedicated-nodes", "validate"),
                ("taint-toleration-rules", "validate"),
            },
            id="a validating half goes native whatever the mutations do",
        ),
    ],
)
def test_a_hybrid_installation_runs_natively_the_exact_halves_in_chain_order(
    document: Any, native: set[tuple[str, str]]
) -> None:
    assert _export(document).native == native


def test_hybrid_export_holds_only_what_runs_natively() -> None:
    """RuntimeClass's mutating half refuses a conflicting nodeSelector: that refusal goes
    native with it; its validating half (a class that does not exist) stays behind."""
    names = {
        o["metadata"]["name"]
        for o in _export(None, hybrid=True).objects
        if o["kind"] == "ValidatingAdmissionPolicy"
    }
    assert names == {
        "placement-webhooks-taint-toleration-rules",
        "placement-webhooks-runtime-class-scheduling",
    }


def _variables(document: Any, policy: str) -> dict[str, str]:
    found = _named(_export(document).objects, "ValidatingAdmissionPolicy")
    return {v["name"]: v["expression"] for v in found[policy]["spec"]["variables"]}


GUARDED_GPU = {
    "guarded": [
        {
            "taintKey": "nvidia.com/gpu",
            "earnedBy": {"resources": ["example.com/gpu"], "resourcePrefixes": ["nvidia.com/"]},
        },
        {"taintKey": "example.com/fpga"},
    ]
}


@pytest.mark.parametrize(
    ("guarded", "literals", "absent"),
    [
        pytest.param(
            GUARDED_GPU,
            [
                "{'nvidia.com/gpu': 'nvidia.com/gpu, example.com/gpu, any nvidia.com/* resource',"
                " 'example.com/fpga': 'example.com/fpga'}",
                "{'nvidia.com/gpu': ['nvidia.com/gpu'], 'example.com/gpu': ['nvidia.com/gpu'],"
                " 'example.com/fpga': ['example.com/fpga']}",
                "[['nvidia.com/', 'nvidia.com/gpu']].filter(e, n.startsWith(e[0]))",
            ],
            [],
            id="the guarded keys, earning names and prefixes become the policy's literals",
        ),
        pytest.param(
            {"guarded": [{"taintKey": "example.com/fpga"}]},
            ["{'example.com/fpga': ['example.com/fpga']}"],
            ["startsWith(e[0])"],
            id="a guard without prefixes tries no prefix",
        ),
    ],
)
def test_enforce_exports_only_the_guarded_keys_and_their_earners(
    guarded: dict[str, Any], literals: list[str], absent: list[str]
) -> None:
    document = {"plugins": {"extended-resource-toleration": {"enforce": guarded}}}
    text = "\n".join(
        _variables(document, "placement-webhooks-extended-resource-toleration").values()
    )
    assert all(literal in text for literal in literals)
    assert not any(part in text for part in absent)
    assert "kubernetes.io/" not in text.replace("'kubernetes.io/config.mirror'", "")
