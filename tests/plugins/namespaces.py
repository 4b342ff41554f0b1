"""Cluster views for plugin tests: Namespaces with a group label or annotations, and a
cluster that cannot be reached."""

from __future__ import annotations

from typing import Any

from webhooks.core.plugin import LookupFailure

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


class Unreachable:
    """A cluster whose every lookup fails, as an API server that does not answer in time."""

    def runtime_class(self, name: str) -> None:
        """Always fails."""
        raise LookupFailure("timed out")

    def namespace(self, name: str) -> None:
        """Always fails."""
        raise LookupFailure("timed out")
