"""DaemonSet cases: templates whose pods the real DaemonSet controller builds, and the same
pods as our ``daemonset-tolerations`` webhook receives them.

The controller gives every pod it builds the default tolerations (AddOrUpdateTolerationInPodSpec
per default, spec §4) on a private copy of the template, and pins it to its node with a
required node affinity on ``metadata.name``. :func:`pod_for` builds what reaches a webhook
for such a pod when no controller wrote the defaults (a template's pod as any client would
create it), so what our webhook makes of it can be compared with the controller's pod.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from controlplane.harness.objects import daemonset_manifest
from tests.controlplane.differential.corpus import IMAGE, TOLERATIONS, _t, namespace_object

NETWORK_UNAVAILABLE = _t("node.kubernetes.io/network-unavailable", "Exists", effect="NoSchedule")
#: Template tolerations that meet the defaults' identities in every way §1b distinguishes.
DAEMON_TOLERATIONS: tuple[dict[str, Any], ...] = (
    *TOLERATIONS,
    _t("node.kubernetes.io/not-ready", "Exists", effect="NoExecute", seconds=30),
    _t("node.kubernetes.io/unreachable", "Exists", effect="NoExecute"),
    _t("node.kubernetes.io/disk-pressure", "Exists", effect="NoSchedule"),
    _t("node.kubernetes.io/disk-pressure", "Exists", effect="NoExecute"),
    _t("node.kubernetes.io/pid-pressure", "Equal", "", "NoSchedule"),
    _t("node.kubernetes.io/unschedulable", "Exists"),
    NETWORK_UNAVAILABLE,
)


@dataclass(frozen=True, slots=True)
class DaemonCase:
    """A DaemonSet in its namespace; ``runtime_class`` names one of the corpus's, or none."""

    id: str
    namespace: dict[str, Any]
    daemonset: dict[str, Any]


def daemon_cases(seed: int, count: int) -> Iterator[DaemonCase]:
    """``count`` DaemonSets from ``seed``: user tolerations (none to several, duplicates),
    host network or not, an extended resource, a RuntimeClass, a namespace default."""
    rng = random.Random(seed)
    namespaces = [
        namespace_object("ds-plain", {}),
        namespace_object(
            "ds-defaults",
            {
                "scheduler.alpha.kubernetes.io/defaultTolerations": (
                    '[{"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}]'
                )
            },
        ),
    ]
    for index in range(count):
        container: dict[str, Any] = {"name": "agent", "image": IMAGE}
        if rng.random() < 0.3:
            container["resources"] = {"limits": {"example.com/gpu": "1"}}
        elif rng.random() < 0.3:
            container["resources"] = {"requests": {"cpu": "10m"}}
        spec: dict[str, Any] = {"containers": [container]}
        if rng.random() < 0.75:
            picks = [rng.choice(DAEMON_TOLERATIONS) for _ in range(rng.randint(1, 4))]
            spec["tolerations"] = copy.deepcopy(picks)
        if rng.random() < 0.4:
            spec["hostNetwork"] = True
        if rng.random() < 0.25:
            spec["runtimeClassName"] = rng.choice(("plain", "tolerating", "wildcard", "forever"))
        yield DaemonCase(
            id=f"ds{index}",
            namespace=copy.deepcopy(rng.choice(namespaces)),
            daemonset=daemonset_manifest(f"ds{index}", spec),
        )


def pod_for(
    case: DaemonCase,
    template: Mapping[str, Any],
    controller_pod: Mapping[str, Any],
    owner_uid: str,
    name: str,
) -> dict[str, Any]:
    """The pod ``template`` makes for the node ``controller_pod`` is pinned to, owned by the
    DaemonSet ``owner_uid``, as a client sends it (no default tolerations written in).

    The node affinity is the controller's own (copied from its pod): it is what pins a
    DaemonSet pod, and admission must leave it as it is.
    """
    spec = copy.deepcopy(dict(template["spec"]))
    spec["affinity"] = copy.deepcopy(controller_pod["spec"]["affinity"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": dict(template["metadata"]["labels"]),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": case.daemonset["metadata"]["name"],
                    "uid": owner_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }
