"""Rendered objects into an API server by server-side apply, as ``kubectl apply --server-side``.

Why server-side apply: the API server then defaults, validates (CEL included) and stores each
object exactly as it would a GitOps tool's, and a re-apply of the same render is a no-op.
Used where a test needs the chart's objects without Helm's release machinery (the deadlock
proof applies the Deployment only after the webhooks are down).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

FIELD_MANAGER = "placement-webhooks-e2e"


def apply_objects(
    api_client: Any,
    objects: Iterable[dict[str, Any]],
    *,
    field_manager: str = FIELD_MANAGER,
    dry_run: bool = False,
) -> list[dict[str, Any]]:
    """Apply each object (in order) and return what the API server stored."""
    from kubernetes.dynamic import DynamicClient

    dynamic = DynamicClient(api_client)
    stored = []
    for obj in objects:
        resource = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        meta = obj["metadata"]
        kwargs: dict[str, Any] = {
            "body": obj,
            "name": meta["name"],
            "field_manager": field_manager,
            "force_conflicts": True,
        }
        if resource.namespaced:
            kwargs["namespace"] = meta.get("namespace") or "default"
        if dry_run:
            kwargs["dry_run"] = "All"
        result = resource.server_side_apply(**kwargs)
        stored.append(result.to_dict())
    return stored


def delete_objects(api_client: Any, objects: Iterable[dict[str, Any]]) -> None:
    """Delete each object, ignoring those already gone."""
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import NotFoundError

    dynamic = DynamicClient(api_client)
    for obj in objects:
        resource = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        kwargs: dict[str, Any] = {"name": obj["metadata"]["name"]}
        if resource.namespaced:
            kwargs["namespace"] = obj["metadata"].get("namespace") or "default"
        try:
            resource.delete(**kwargs)
        except NotFoundError:
            continue
