"""Builders for ``resource.k8s.io/v1`` objects as the API writes them: DeviceClasses,
ResourceClaims and their templates, ResourceSlices and DeviceTaintRules.

Why one module: plugin, cluster, dry-run and explain tests must describe a GPU the same
way, with the API's own field names.
"""

from __future__ import annotations

from typing import Any

from tests.reviews import taint

API = "resource.k8s.io/v1"
GPU_CLASS = "gpu.example.com"
GPU_DRIVER = "gpu.example.com"
GPU = "example.com/gpu"


def device_class(
    name: str = GPU_CLASS,
    *,
    extended: str | None = None,
    selectors: list[str] | None = None,
    created: str | None = None,
) -> dict[str, Any]:
    """A DeviceClass, serving extended resource ``extended`` when given."""
    spec: dict[str, Any] = {}
    if selectors:
        spec["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if extended is not None:
        spec["extendedResourceName"] = extended
    meta: dict[str, Any] = {"name": name}
    if created is not None:
        meta["creationTimestamp"] = created
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": meta, "spec": spec}


def exactly(
    name: str = "gpu",
    device_class_name: str = GPU_CLASS,
    *,
    count: int | None = None,
    mode: str | None = None,
    selectors: list[str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A device request asking for exactly ``count`` devices of a class."""
    body: dict[str, Any] = {"deviceClassName": device_class_name}
    if count is not None:
        body["count"] = count
    if mode is not None:
        body["allocationMode"] = mode
    if selectors:
        body["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if tolerations is not None:
        body["tolerations"] = tolerations
    return {"name": name, "exactly": body}


def first_available(name: str, *alternatives: tuple[str, str]) -> dict[str, Any]:
    """A request with ``firstAvailable`` alternatives, each (name, device class)."""
    return {
        "name": name,
        "firstAvailable": [{"name": n, "deviceClassName": c} for n, c in alternatives],
    }


def claim_spec(*requests: dict[str, Any], constraints: list[Any] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests or (exactly(),))}
    if constraints:
        devices["constraints"] = constraints
    return {"devices": devices}


def claim_template(
    name: str = "gpu-claim",
    *requests: dict[str, Any],
    namespace: str | None = None,
    constraints: list[Any] | None = None,
) -> dict[str, Any]:
    """A ResourceClaimTemplate (no namespace unless given, as a manifest often has)."""
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": meta,
        "spec": {"spec": claim_spec(*requests, constraints=constraints)},
    }


def resource_claim(
    name: str = "shared-gpu",
    *requests: dict[str, Any],
    namespace: str | None = "default",
    allocation: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A ResourceClaim, allocated to the given device results when ``allocation`` is set."""
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    claim: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": claim_spec(*requests),
    }
    if allocation is not None:
        claim["status"] = {"allocation": {"devices": {"results": allocation}}}
    return claim


def pod_claims(*entries: tuple[str, str, str]) -> list[dict[str, Any]]:
    """``spec.resourceClaims`` entries: (name, "claim" or "template", object name)."""
    field = {"claim": "resourceClaimName", "template": "resourceClaimTemplateName"}
    return [{"name": n, field[how]: target} for n, how, target in entries]


def device(
    name: str,
    *,
    attributes: dict[str, Any] | None = None,
    capacity: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A device of a ResourceSlice; attributes as the API writes them ({"int": 1})."""
    body: dict[str, Any] = {"name": name, **extra}
    if attributes:
        body["attributes"] = attributes
    if capacity:
        body["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if taints:
        body["taints"] = taints
    return body


def resource_slice(
    name: str,
    *devices: dict[str, Any],
    node: str | None = None,
    driver: str = GPU_DRIVER,
    pool: str | None = None,
    all_nodes: bool = False,
    node_selector: dict[str, Any] | None = None,
    per_device: bool = False,
    generation: int = 1,
    slices: int = 1,
) -> dict[str, Any]:
    """A ResourceSlice of ``driver`` with ``devices``, reaching ``node``, every node, the
    nodes ``node_selector`` selects, or (``per_device``) as each device says."""
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {
            "name": pool or node or name,
            "generation": generation,
            "resourceSliceCount": slices,
        },
        "devices": list(devices),
    }
    if node is not None:
        spec["nodeName"] = node
    if all_nodes:
        spec["allNodes"] = True
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if per_device:
        spec["perDeviceNodeSelection"] = True
    return {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def device_taint_rule(
    name: str, key: str, effect: str, *, value: str = "", **selector: str
) -> dict[str, Any]:
    """A DeviceTaintRule adding one taint to the devices ``selector`` (driver, pool,
    device) picks."""
    return {
        "apiVersion": API,
        "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": {"deviceSelector": dict(selector), "taint": taint(key, effect, value)},
    }


def node_selector(**labels: str) -> dict[str, Any]:
    """A v1 NodeSelector with one term requiring every label."""
    return {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": k, "operator": "In", "values": [v]} for k, v in labels.items()
                ]
            }
        ]
    }
