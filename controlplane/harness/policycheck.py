"""Read back every stored pod and count those admitted without the policy they were owed.

Why from storage: a create that the client saw succeed says nothing about what admission
did to it; with a mutating webhook that fails open, a pod stored without its toleration is
a success to the client. The pods themselves are the only proof. What a pod is owed:

* in a namespace whose group label names a group when the pod was created: the group's
  toleration (``dedicated=<group>:NoSchedule``) and ``dedicated In [<group>]`` in every
  required nodeSelectorTerm (dedicated-nodes);
* when a container requests ``nvidia.com/gpu``: the toleration ``nvidia.com/gpu Exists
  NoSchedule`` (extended-resource-toleration).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from controlplane.harness.components import ApiServer

GPU = "nvidia.com/gpu"
DEDICATED_KEY = "dedicated"
GROUP_LABEL = "placement-webhooks.io/dedicated"


def stored_pods(server: ApiServer, namespace: str, page: int = 500) -> Iterator[dict[str, Any]]:
    """Every pod of ``namespace`` as stored, page by page."""
    token = ""
    while True:
        path = f"/api/v1/namespaces/{namespace}/pods?limit={page}"
        if token:
            path += f"&continue={token}"
        status, body = server.get(path)
        if status != 200:
            raise RuntimeError(f"listing pods in {namespace}: HTTP {status}")
        yield from body["items"]
        token = body["metadata"].get("continue") or ""
        if not token:
            return


def _tolerates(pod: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    tolerations = pod["spec"].get("tolerations") or []
    return any(all(t.get(k) == v for k, v in wanted.items()) for t in tolerations)


def _pinned(pod: Mapping[str, Any], group: str) -> bool:
    required = (
        ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms") or []
    pin = {"key": DEDICATED_KEY, "operator": "In", "values": [group]}
    return bool(required) and all(pin in (term.get("matchExpressions") or []) for term in required)


def requests_gpu(pod: Mapping[str, Any]) -> bool:
    """Whether a container asks for a GPU (requests or limits)."""
    for container in pod["spec"].get("containers") or []:
        resources = container.get("resources") or {}
        if GPU in (resources.get("limits") or {}) or GPU in (resources.get("requests") or {}):
            return True
    return False


def missing(pod: Mapping[str, Any], group: str) -> list[str]:
    """What of its policy ``pod`` lacks (``group``: its namespace's group, "" for none)."""
    lacks = []
    if group:
        toleration = {"key": DEDICATED_KEY, "operator": "Equal", "value": group}
        if not _tolerates(pod, {**toleration, "effect": "NoSchedule"}):
            lacks.append(f"toleration dedicated={group}")
        if not _pinned(pod, group):
            lacks.append(f"affinity dedicated In [{group}]")
    if requests_gpu(pod) and not _tolerates(
        pod, {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
    ):
        lacks.append("toleration nvidia.com/gpu")
    return lacks


def unpoliced(
    server: ApiServer, groups: Mapping[str, str]
) -> tuple[int, int, list[tuple[str, list[str]]]]:
    """Read every pod of ``groups``' namespaces (namespace -> group owed, "" for none);
    returns (pods read, pods missing part of their policy, up to 5 examples)."""
    read = bad = 0
    examples: list[tuple[str, list[str]]] = []
    for namespace, group in groups.items():
        for pod in stored_pods(server, namespace):
            read += 1
            lacks = missing(pod, group)
            if lacks:
                bad += 1
                if len(examples) < 5:
                    examples.append((f"{namespace}/{pod['metadata']['name']}", lacks))
    return read, bad, examples
