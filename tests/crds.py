"""The report CRDs' schemas as JSON Schema, for the fake API server and the report tests.

Why strict: a real API server asked with ``fieldValidation=Strict`` (as ``audit`` asks)
refuses fields the schema does not have, and without it silently prunes them; so every
object schema that lists properties is closed here (``additionalProperties: false``) and a
report field with a typo fails the test instead of vanishing in a cluster.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema
import yaml

CRDS = Path(__file__).resolve().parent / "fixtures" / "crds"
#: Where the project's shared copies live, next to a checkout (absent in a fresh clone).
SHARED = Path(__file__).resolve().parents[2] / "shared" / "crds"
FILES = {
    "Report": "openreports.io_reports.yaml",
    "ClusterReport": "openreports.io_clusterreports.yaml",
}


def strict(schema: Any) -> Any:
    """A copy of ``schema`` where every object with ``properties`` admits no other key."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: strict(value) for key, value in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema:
        out["additionalProperties"] = False
    return out


@functools.cache
def crd(kind: str) -> dict[str, Any]:
    """The CRD of ``kind`` (Report, ClusterReport) from ``tests/fixtures/crds``."""
    data = yaml.safe_load((CRDS / FILES[kind]).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@functools.cache
def schema(kind: str) -> dict[str, Any]:
    """``spec.versions[0].schema.openAPIV3Schema`` of ``kind``'s CRD, made strict."""
    raw = crd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return strict(raw)  # type: ignore[no-any-return]


def errors(kind: str, obj: Any) -> list[str]:
    """What is wrong with ``obj`` as a ``kind``, one line per problem (empty when valid)."""
    validator = jsonschema.Draft7Validator(schema(kind))
    return [
        f"{'.'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
        for e in sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))
    ]


def undeclared(kind: str, obj: Any) -> list[str]:
    """The fields of ``obj`` its ``kind``'s schema does not declare, as the API server names
    them in a server-side apply (``.results[0].colour``), in document order.

    Why apart from :func:`errors`: a real API server refuses these before any validation,
    while building the typed patch, with HTTP 500 rather than 422.
    """
    validator = jsonschema.Draft7Validator(schema(kind))
    found = []
    for error in validator.iter_errors(obj):
        if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
            continue
        declared = error.schema.get("properties") or {}
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        found.extend(f"{path}.{key}" for key in error.instance if key not in declared)
    return found
