"""The API server's object shapes: the ``Status`` of every error, the objects tests build
clusters from, and what the API server adds to an object it creates.

Why apart from the server: a test or a benchmark builds its cluster from these before any
server runs, and every error the fake answers is a ``Status`` built in one place.
"""

from __future__ import annotations

from typing import Any


def runtime_class(name: str, handler: str = "runc", **extra: Any) -> dict[str, Any]:
    """A RuntimeClass as the API server returns it (without server-set metadata)."""
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": handler,
        **extra,
    }


def namespace(name: str, **annotations: str) -> dict[str, Any]:
    """A Namespace as the API server returns it."""
    meta: dict[str, Any] = {"name": name, "labels": {"kubernetes.io/metadata.name": name}}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": meta,
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    """A ``Status`` object, the body of every API error."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def fill_created(obj: dict[str, Any]) -> None:
    """Fill in what the API server adds to a webhook configuration it creates.

    That is its defaults (each webhook's ``objectSelector``, each rule's ``scope``) and the
    metadata of an object Helm created (``managedFields`` included), so a client that reads
    them and writes them back is caught.
    """
    if "webhooks" not in obj:
        return
    meta = obj["metadata"]
    meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
    meta.setdefault("generation", 1)
    meta.setdefault(
        "managedFields",
        [
            {
                "manager": "helm",
                "operation": "Update",
                "apiVersion": obj["apiVersion"],
                "time": meta["creationTimestamp"],
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:webhooks": {}},
            }
        ],
    )
    for hook in obj["webhooks"]:
        hook.setdefault("objectSelector", {})
        for rule in hook.get("rules", []):
            rule.setdefault("scope", "*")
