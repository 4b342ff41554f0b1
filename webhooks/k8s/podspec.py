"""Where the pod spec lives inside each workload kind, and reading container resources.

Why one table: validators that check "every pod template" and the offline expansion of
workloads into Pods must agree on the paths, and the CLI maps those paths back to YAML lines.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from webhooks.k8s.mapping import MAPPING

PodSpecPath = tuple[str, ...]

#: kind → path of its pod spec (the Pod's own ``spec`` for a Pod).
POD_SPEC_PATHS: Mapping[str, PodSpecPath] = {
    "Pod": ("spec",),
    "PodTemplate": ("template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def pod_spec_path(kind: str) -> PodSpecPath | None:
    """The path of the pod spec inside an object of ``kind``, or ``None`` for other kinds."""
    return POD_SPEC_PATHS.get(kind)


def get_path(obj: Mapping[str, Any], path: PodSpecPath) -> dict[str, Any] | None:
    """Follow ``path`` through nested mappings; ``None`` when any step is missing or not a dict."""
    node: Any = obj
    for part in path:
        if not isinstance(node, MAPPING):
            return None
        node = node.get(part)
    return node if isinstance(node, dict) else None


def dotted(path: PodSpecPath, *rest: str | int) -> str:
    """Render a field path the way Kubernetes error messages do: ``spec.tolerations[2].key``."""
    out = ".".join(path)
    for part in rest:
        out = f"{out}[{part}]" if isinstance(part, int) else (f"{out}.{part}" if out else part)
    return out


def containers(spec: Mapping[str, Any], *, init: bool = True) -> Iterator[Mapping[str, Any]]:
    """The pod spec's containers, then its init containers (sidecars included) when ``init``.

    Ephemeral containers are never included: they may not carry resources.
    """
    keys = ("containers", "initContainers") if init else ("containers",)
    for key in keys:
        items = spec.get(key)
        if isinstance(items, list):
            for item in items:
                if isinstance(item, MAPPING):
                    yield item


def resource_names(spec: Mapping[str, Any], *, include_limits: bool = True) -> set[str]:
    """Names of resources requested by containers and init containers.

    With ``include_limits`` a name that appears only under ``limits`` counts too. Why: the
    API server copies limits into missing requests before admission (spec §0), so the union
    is what admission sees, and manifests checked offline have not been through that.
    """
    # A tight loop on purpose: this runs for every pod on the request path.
    names: set[Any] = set()
    for key in ("containers", "initContainers"):
        items = spec.get(key)
        if not isinstance(items, list):
            continue
        for item in items:
            resources = item.get("resources") if isinstance(item, dict) else None
            if not resources or not isinstance(resources, dict):
                continue
            requests = resources.get("requests")
            if requests and isinstance(requests, dict):
                names.update(requests)
            if include_limits:
                limits = resources.get("limits")
                if limits and isinstance(limits, dict):
                    names.update(limits)
    return {n for n in names if isinstance(n, str)}


MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def is_mirror_pod(pod: Mapping[str, Any]) -> bool:
    """Whether ``pod`` is the kubelet's API mirror of a static pod.

    Why policy skips it: the static pod already runs on its node whatever admission says, so
    refusing or re-pinning the mirror only hides a running pod from the API.
    """
    metadata = pod.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, MAPPING) else None
    return isinstance(annotations, MAPPING) and MIRROR_POD_ANNOTATION in annotations
