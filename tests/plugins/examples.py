"""One object per plugin that makes it act (a patch or a violation), for the contract tests.

Every registered plugin must appear in EXAMPLES; ``test_every_plugin_has_a_contract_example``
fails otherwise, so a new plugin cannot skip the contract. A plugin whose halves handle more
than one resource lists an object for each further resource in MORE_EXAMPLES, and the
contract tests then run on every one of them.
"""

from __future__ import annotations

from typing import Any

from tests.reviews import container, daemonset, owned_by, pod, tol
from webhooks.cluster.files import StaticCluster
from webhooks.core.plugin import ClusterView, NoCluster

#: A Namespace dedicated to group gpu-team by the default label.
ML_NAMESPACE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "ml", "labels": {"placement-webhooks.io/dedicated": "gpu-team"}},
}

#: A RuntimeClass with scheduling but no overhead: its pods get a nodeSelector (the
#: mutating half acts), and a pod that sets an overhead itself is refused (so does the
#: validating half).
SANDBOX = {
    "apiVersion": "node.k8s.io/v1",
    "kind": "RuntimeClass",
    "metadata": {"name": "sandbox"},
    "handler": "runsc",
    "scheduling": {"nodeSelector": {"sandbox.example.com/runtime": "gvisor"}},
}

#: A tenant Namespace with PodNodeSelector's and PodTolerationRestriction's annotations.
TEAM_NAMESPACE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {
        "name": "team",
        "annotations": {
            "scheduler.alpha.kubernetes.io/node-selector": "pool=team",
            "scheduler.alpha.kubernetes.io/defaultTolerations": (
                '[{"key": "pool", "operator": "Equal", "value": "team", "effect": "NoSchedule"}]'
            ),
            "scheduler.alpha.kubernetes.io/tolerationsWhitelist": (
                '[{"key": "pool", "operator": "Exists"}]'
            ),
        },
    },
}

#: plugin name → (object that makes the plugin act, the cluster it needs)
EXAMPLES: dict[str, tuple[dict[str, Any], ClusterView]] = {
    "dedicated-nodes": (
        # Mutation pins it to gpu-team; validation denies its toleration of another group.
        pod(namespace="ml", tolerations=[tol("dedicated", "Equal", "web-team", "NoSchedule")]),
        StaticCluster([ML_NAMESPACE]),
    ),
    "default-toleration-seconds": (pod(), NoCluster()),
    "pod-node-selector": (
        # Mutation adds the namespace's pool=team, then both halves refuse disk=ssd, which
        # the namespace's whitelist (SETTINGS) does not allow.
        pod(namespace="team", nodeSelector={"disk": "ssd"}),
        StaticCluster([TEAM_NAMESPACE]),
    ),
    "pod-toleration-restriction": (
        # Mutation adds the namespace default, then both halves refuse the GPU toleration.
        pod(namespace="team", tolerations=[tol("nvidia.com/gpu", "Exists", effect="NoSchedule")]),
        StaticCluster([TEAM_NAMESPACE]),
    ),
    "extended-resource-toleration": (
        # Mutation tolerates the GPU it requests; enforcement denies the FPGA it does not.
        pod(
            containers=[container(requests={"nvidia.com/gpu": "1"})],
            tolerations=[tol("example.com/fpga", "Exists", effect="NoSchedule")],
        ),
        NoCluster(),
    ),
    "daemonset-tolerations": (daemonset(hostNetwork=True), NoCluster()),
    "anti-affinity-topology": (
        pod(
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": "web"}},
                            "topologyKey": "topology.kubernetes.io/zone",
                        }
                    ]
                }
            }
        ),
        NoCluster(),
    ),
    "taint-toleration-rules": (pod(tolerations=[tol("bad^key", "Exists")]), NoCluster()),
    "runtime-class": (
        pod(runtimeClassName="sandbox", overhead={"cpu": "250m"}),
        StaticCluster([SANDBOX]),
    ),
}

#: Settings a plugin needs for its example to make every half act (others use defaults).
SETTINGS: dict[str, dict[str, Any]] = {
    "extended-resource-toleration": {"enforce": {"guarded": [{"taintKey": "example.com/fpga"}]}},
    "pod-node-selector": {"nodeSelectorWhitelist": {"team": "pool=team"}},
}

#: plugin name → objects of its other resources (same cluster as its EXAMPLES entry)
MORE_EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "daemonset-tolerations": [owned_by(pod(name="agent-x7k2p"))],
}


def example_objects(name: str) -> list[dict[str, Any]]:
    """Every contract example object of plugin ``name``, the EXAMPLES one first."""
    return [EXAMPLES[name][0], *MORE_EXAMPLES.get(name, [])]


#: The plugins whose example makes them look cluster objects up (Namespaces, RuntimeClasses)
#: in every phase; the lookup contract holds each of them to a 500 when a lookup fails, and
#: every other plugin to an outcome that does not depend on the cluster answering.
LOOKS_UP: frozenset[str] = frozenset(
    {"dedicated-nodes", "pod-node-selector", "pod-toleration-restriction", "runtime-class"}
)


#: plugin name → settings it refuses: (case, the plugin's settings, how the message goes on
#: after ``plugins.<name>.``); every plugin also refuses an unknown key (the contract adds it).
BAD_SETTINGS: dict[str, list[tuple[str, dict[str, Any], str]]] = {
    "dedicated-nodes": [
        ("an unknown effect", {"effect": "NoAdmit"}, "effect: must be one of"),
        ("a taint key that is not a qualified name", {"key": "bad key"}, 'key: "bad key" is not'),
        ("a label key with two slashes", {"namespaceLabel": "a/b/c"}, 'namespaceLabel: "a/b/c"'),
        ("an empty group", {"namespaces": {"ml": ""}}, 'namespaces: group "" of namespace "ml"'),
        ("a group that is not a label value", {"namespaces": {"ml": "a b"}}, "namespaces: group"),
        ("an unknown key", {"group": "x"}, "group: unknown key"),
    ],
    "pod-node-selector": [
        (
            "a cluster default selector without =",
            {"clusterDefaultNodeSelector": "pool"},
            "clusterDefaultNodeSelector: invalid selector: [pool]",
        ),
        (
            "a whitelist selector with a bad key",
            {"nodeSelectorWhitelist": {"ml": "bad key=a"}},
            'nodeSelectorWhitelist: namespace "ml": invalid label key',
        ),
        ("an unknown key", {"whitelist": {}}, "whitelist: unknown key"),
    ],
    "pod-toleration-restriction": [
        (
            "a default toleration with an unknown field",
            {"defaultTolerations": [{"keys": "a"}]},
            "defaultTolerations: [0]: unknown field 'keys'",
        ),
        (
            "a default toleration with Exists and a value",
            {"defaultTolerations": [{"key": "a", "operator": "Exists", "value": "b"}]},
            'defaultTolerations: [0].operator: Invalid value: "b": value must be empty',
        ),
        (
            "a whitelist toleration with seconds but not NoExecute",
            {"tolerationsWhitelist": [{"key": "a", "operator": "Exists", "tolerationSeconds": 5}]},
            "tolerationsWhitelist: [0].effect: Invalid value: \"\": effect must be 'NoExecute'",
        ),
        (
            "a whitelist toleration with an empty key and Equal",
            {"tolerationsWhitelist": [{"operator": "Equal", "value": "x"}]},
            'tolerationsWhitelist: [0].operator: Invalid value: "Equal": operator must be Exists',
        ),
        (
            "a default toleration with a bad effect",
            {"defaultTolerations": [{"key": "a", "operator": "Exists", "effect": "Never"}]},
            'defaultTolerations: [0].effect: Unsupported value: "Never"',
        ),
        (
            "a default toleration that is not a mapping",
            {"defaultTolerations": ["a"]},
            "defaultTolerations[0]: must be a mapping",
        ),
        ("memoryPressureToleration that is not a boolean", {"memoryPressureToleration": "yes"}, ""),
    ],
}
