"""The pieces the strict JSON schemas of custom resources share (:mod:`.certmanager`,
:mod:`.monitoring`): a string map, an object's metadata, and the top level of a namespaced
custom resource.

Why one module: every schema here is closed (``additionalProperties: false``) so that a
misspelt field fails as it would at the API server, and the closing must be the same in
each.
"""

from __future__ import annotations

from typing import Any

STRING_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}


def metadata(*maps: str) -> dict[str, Any]:
    """A namespaced object's metadata: ``name`` and ``namespace``, plus the string maps named
    in ``maps`` (``labels``, ``annotations``) and nothing else."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "namespace"],
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "namespace": {"type": "string", "minLength": 1},
            **dict.fromkeys(maps, STRING_MAP),
        },
    }


def resource(
    api_version: str, kind: str, meta: dict[str, Any], spec: dict[str, Any]
) -> dict[str, Any]:
    """A custom resource of ``kind`` in ``api_version``: ``meta`` and ``spec`` under a closed
    top level that requires all four fields."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": api_version},
            "kind": {"const": kind},
            "metadata": meta,
            "spec": spec,
        },
    }
