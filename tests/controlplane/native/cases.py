"""A small generated corpus for the native comparison, and the RuntimeClasses it names.

Cases are drawn, with a fixed seed, from building blocks chosen for the rules the exported
policies reimplement: wildcard, not-ready and unreachable tolerations in every spelling the
loose and the superset tests treat differently, extended resources in requests, limits and
init containers (upper case, ``kubernetes.io/`` names), RuntimeClasses with and without
overhead and scheduling (and one that does not exist), namespace node selectors (valid,
empty, unparsable, conflicting), failover-time annotations, required anti-affinity, pods a
DaemonSet controls, and UPDATEs that add tolerations or only relabel.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from controlplane.harness.objects import daemonset_manifest
from tests.controlplane.native.observe import Case

IMAGE = "registry.k8s.io/pause:3.10"
NODE_SELECTOR = "scheduler.alpha.kubernetes.io/node-selector"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"

RUNTIME_CLASSES: list[dict[str, Any]] = [
    {"metadata": {"name": "rc-plain"}},
    {
        "metadata": {"name": "rc-overhead"},
        "overhead": {"podFixed": {"cpu": "100m", "memory": "20Mi"}},
    },
    {
        "metadata": {"name": "rc-sandbox"},
        "scheduling": {
            "nodeSelector": {"sandbox": "gvisor"},
            "tolerations": [
                {"key": "sandbox", "operator": "Equal", "value": "gvisor", "effect": "NoSchedule"}
            ],
        },
    },
    {
        "metadata": {"name": "rc-all"},
        "overhead": {"podFixed": {"cpu": "0.25"}},
        "scheduling": {
            "nodeSelector": {"sandbox": "kata", "kubernetes.io/arch": "amd64"},
            "tolerations": [{"key": NOT_READY, "operator": "Exists", "effect": "NoExecute"}],
        },
    },
    {"metadata": {"name": "rc-wildcard"}, "scheduling": {"tolerations": [{"operator": "Exists"}]}},
    {"metadata": {"name": "rc-collapse"}, "scheduling": {}},
]
RUNTIME_CLASS_NAMES = [rc["metadata"]["name"] for rc in RUNTIME_CLASSES] + ["rc-missing"]


def runtime_class_objects() -> list[dict[str, Any]]:
    """The RuntimeClasses as objects to create (``handler: runc`` each)."""
    return [
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": "runc", **rc}
        for rc in RUNTIME_CLASSES
    ]


TOLERATIONS: list[dict[str, Any]] = [
    {"operator": "Exists"},
    {"operator": "Exists", "effect": "NoExecute"},
    {"operator": "Exists", "effect": "NoSchedule"},
    {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
    {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute"},
    {"key": NOT_READY, "operator": "Equal", "value": "true", "effect": "NoExecute"},
    {"key": UNREACHABLE, "operator": "Exists"},
    {"key": UNREACHABLE, "operator": "Exists", "effect": "NoSchedule"},
    {"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "example.com/gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5},
    {"key": "example.com/gpu", "operator": "Equal", "value": "a", "effect": "NoSchedule"},
    {"key": "sandbox", "operator": "Equal", "value": "gvisor", "effect": "NoSchedule"},
    {"key": "sandbox", "operator": "Exists"},
    {"key": "team", "value": "a", "effect": "NoSchedule"},
    {"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Equal", "effect": "NoSchedule"},
    {"key": "z", "operator": "Exists", "effect": "PreferNoSchedule"},
    {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Exists"},
]

RESOURCES: list[dict[str, Any]] = [
    {},
    {"requests": {"cpu": "100m"}},
    {"limits": {"example.com/gpu": "1"}},
    {"requests": {"example.com/gpu": "0"}, "limits": {"example.com/gpu": "0"}},
    {"limits": {"example.com/Zeta": "1", "example.com/alpha": "2"}},
    {"limits": {"vendor.kubernetes.io/x": "1", "hugepages-2Mi": "2Mi", "memory": "2Mi"}},
]

NAMESPACES: list[dict[str, Any]] = [
    {},
    {"labels": {"env": "prod"}},
    {"annotations": {NODE_SELECTOR: "env=prod"}},
    {"annotations": {NODE_SELECTOR: "env=prod, kubernetes.io/arch = arm64"}},
    {"annotations": {NODE_SELECTOR: ""}},
    {"annotations": {NODE_SELECTOR: "env=prod,env=dev"}},
    {"annotations": {NODE_SELECTOR: "not a selector"}},
    {"annotations": {NODE_SELECTOR: "Bad_Key/x=1"}},
    {"annotations": {"placement-webhooks.io/not-ready-seconds": "30"}},
    {
        "annotations": {
            "placement-webhooks.io/not-ready-seconds": "0",
            "placement-webhooks.io/unreachable-seconds": "x1",
        }
    },
]

DEDICATED = "placement-webhooks.io/dedicated"
#: Namespaces the configs name (a whitelist, a static group, an exception): shared by the
#: cases that pick them, created once per API server.
FIXED_NAMESPACES: dict[str, dict[str, Any]] = {
    "wl": {"labels": {"team": "wl"}},
    "gpu-team": {},
    "exempt": {"labels": {DEDICATED: "gpu"}},
}
NAMESPACES += [
    {"labels": {DEDICATED: "gpu"}},
    {"labels": {DEDICATED: "batch"}, "annotations": {NODE_SELECTOR: "dedicated=batch"}},
    {"labels": {DEDICATED: ""}},
]

NODE_TERMS: list[list[dict[str, Any]]] = [
    [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}],
    [{"matchExpressions": [{"key": "dedicated", "operator": "In", "values": ["gpu"]}]}],
    [{"matchExpressions": [{"key": "dedicated", "operator": "NotIn", "values": ["gpu"]}]}],
    [
        {"matchExpressions": [{"key": "dedicated", "operator": "DoesNotExist"}]},
        {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
    ],
    [
        {"matchExpressions": [{"key": "dedicated", "operator": "In", "values": ["batch"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
    ],
    [{"matchExpressions": [{"key": "dedicated", "operator": "Gt", "values": ["5"]}]}],
]

NODE_SELECTORS: list[dict[str, str] | None] = [
    None,
    None,
    {"env": "prod"},
    {"env": "dev"},
    {"sandbox": "kata"},
    {"disk": "ssd"},
    {"dedicated": "batch"},
    {"tier": "general", "env": "prod"},
]


def _pod(rng: random.Random, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": IMAGE, "resources": rng.choice(RESOURCES)}]
    }
    if rng.random() < 0.3:
        spec["initContainers"] = [
            {"name": "init", "image": IMAGE, "resources": rng.choice(RESOURCES)}
        ]
    if rng.random() < 0.75:
        spec["tolerations"] = rng.sample(TOLERATIONS, rng.randint(0, 4))
    selector = rng.choice(NODE_SELECTORS)
    if selector is not None:
        spec["nodeSelector"] = dict(selector)
    if rng.random() < 0.4:
        spec["runtimeClassName"] = rng.choice(RUNTIME_CLASS_NAMES)
    if rng.random() < 0.1:
        spec["overhead"] = rng.choice([{"cpu": "100m", "memory": "20Mi"}, {"cpu": "250m"}])
    if rng.random() < 0.15:
        key = rng.choice(["kubernetes.io/hostname", "topology.kubernetes.io/zone"])
        term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": key}
        spec["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    if rng.random() < 0.2:
        node = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": rng.choice(NODE_TERMS)
            }
        }
        spec.setdefault("affinity", {})["nodeAffinity"] = node
    if rng.random() < 0.1:
        spec["hostNetwork"] = True
    metadata: dict[str, Any] = {"name": name, "labels": {"app": "web"}}
    if rng.random() < 0.15:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": "agent",
                "uid": "2c7cf5a8-7b0b-4c4e-9d2c-7f5f8d2b1a10",
                "controller": True,
            }
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _daemonset(rng: random.Random, name: str) -> dict[str, Any]:
    pod = _pod(rng, name)
    pod["spec"].pop("runtimeClassName", None)
    pod["spec"].pop("overhead", None)
    return daemonset_manifest(name, pod["spec"])


def generated(count: int, seed: int = 24) -> Iterator[Case]:
    """``count`` cases drawn with ``seed``: mostly Pod CREATEs, some UPDATEs and DaemonSets."""
    rng = random.Random(seed)
    for index in range(count):
        name = f"c{index}"
        if rng.random() < 0.15:
            fixed = rng.choice(sorted(FIXED_NAMESPACES))
            namespace = {"name": fixed, **FIXED_NAMESPACES[fixed]}
        else:
            namespace = rng.choice(NAMESPACES)
        roll = rng.random()
        if roll < 0.1:
            yield Case(f"{name}: DaemonSet", namespace, _daemonset(rng, name))
            continue
        pod = _pod(rng, name)
        if roll < 0.25:
            change: dict[str, Any] = {"labels": {"touched": "yes"}}
            if rng.random() < 0.5:
                change["tolerations"] = rng.sample(TOLERATIONS, 1)
            yield Case(f"{name}: Pod UPDATE", namespace, pod, change)
        else:
            yield Case(f"{name}: Pod CREATE", namespace, pod)
