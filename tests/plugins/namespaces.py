"""Namespace objects for plugin tests: a group label and namespace annotations."""

from __future__ import annotations

from typing import Any

#: The label that names a Namespace's dedicated group by default.
GROUP_LABEL = "placement-webhooks.io/dedicated"


def namespace(
    name: str, group: str | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """A v1 Namespace, dedicated to ``group`` when given, with ``annotations`` when given."""
    metadata: dict[str, Any] = {"name": name}
    if group is not None:
        metadata["labels"] = {GROUP_LABEL: group}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}
