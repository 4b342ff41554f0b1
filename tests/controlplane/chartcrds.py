"""CustomResourceDefinitions for the kinds the chart renders that a bare API server lacks:
Prometheus Operator's ServiceMonitor and PrometheusRule, cert-manager's Certificate and
Issuer.

Where the schemas come from: no package in the lock ships these CRDs (kubernetes-validate
has the built-in kinds only), and nothing downloaded may be committed, so each CRD is made
from the strict JSON schema the chart's offline tests already hold
(:mod:`tests.charts.monitoring`, :mod:`tests.charts.certmanager`), written in our own words
from the projects' API references and covering the fields the chart sets, with their
types, enums, patterns and bounds. Turned into a structural OpenAPI schema here:
``const`` becomes a one-value ``enum``, every node gets its ``type``, ``metadata`` is left
to the API server, and ``additionalProperties: false`` is dropped, since a structural
schema may not say it and ``fieldValidation=Strict`` refuses an undeclared field anyway.
What this proves is therefore that the chart's objects fit the server's machinery
(structural validation, pruning, strict fields) under our reading of those APIs, not under
the projects' own CRD files.
"""

from __future__ import annotations

from typing import Any

from tests.charts.certmanager import SCHEMAS as CERT_MANAGER
from tests.charts.monitoring import PROMETHEUS_RULE, SERVICE_MONITOR

_TYPES = {str: "string", bool: "boolean", int: "integer"}


def structural(schema: Any) -> Any:
    """A JSON schema as a CRD's structural OpenAPI v3 schema (module docstring)."""
    if isinstance(schema, list):
        return [structural(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "const":
            out["enum"] = [value]
        elif key == "additionalProperties" and value is False:
            continue
        elif key == "properties":
            out[key] = {name: structural(sub) for name, sub in value.items()}
        else:
            out[key] = structural(value)
    if "type" not in out:
        values = out.get("enum") or []
        out["type"] = _TYPES[type(values[0])] if values else "object"
    return out


def _top(schema: dict[str, Any]) -> dict[str, Any]:
    body = structural(schema)
    body["properties"].pop("metadata", None)
    body["required"] = [r for r in body.get("required", []) if r == "spec"]
    return body


def crd(group: str, kind: str, plural: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A namespaced CRD serving ``group``/v1 ``kind`` with ``schema`` (a JSON schema)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.lower(),
                "listKind": f"{kind}List",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": _top(schema)},
                }
            ],
        },
    }


CRDS = [
    crd("monitoring.coreos.com", "ServiceMonitor", "servicemonitors", SERVICE_MONITOR),
    crd("monitoring.coreos.com", "PrometheusRule", "prometheusrules", PROMETHEUS_RULE),
    crd("cert-manager.io", "Certificate", "certificates", CERT_MANAGER["Certificate"]),
    crd("cert-manager.io", "Issuer", "issuers", CERT_MANAGER["Issuer"]),
]
