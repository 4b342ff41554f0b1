"""Strict JSON schemas for the Prometheus Operator objects the chart renders.

kubernetes-validate ships schemas for built-in kinds only; these cover exactly the
monitoring.coreos.com/v1 ServiceMonitor and PrometheusRule fields the chart uses (names from
the operator's API reference), with ``additionalProperties: false`` so a misspelt field fails
here as it would at the API server.
"""

from __future__ import annotations

from typing import Any

from tests.charts.strict import STRING_MAP, metadata, resource

_METADATA = metadata("labels")
_DURATION = {
    "type": "string",
    "pattern": (
        r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?"
        r"(([0-9]+)s)?(([0-9]+)ms)?)$"
    ),
}

SERVICE_MONITOR: dict[str, Any] = resource(
    "monitoring.coreos.com/v1",
    "ServiceMonitor",
    _METADATA,
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["selector", "endpoints"],
        "properties": {
            "namespaceSelector": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "any": {"type": "boolean"},
                    "matchNames": {"type": "array", "items": {"type": "string"}},
                },
            },
            "selector": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"matchLabels": STRING_MAP},
            },
            "endpoints": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "port": {"type": "string", "minLength": 1},
                        "path": {"type": "string"},
                        "scheme": {"enum": ["http", "https", "HTTP", "HTTPS"]},
                        "interval": _DURATION,
                        "scrapeTimeout": _DURATION,
                    },
                },
            },
        },
    },
)

_RULE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["expr"],
    "properties": {
        "alert": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
        "record": {"type": "string"},
        "expr": {"type": "string", "minLength": 1},
        "for": _DURATION,
        "labels": STRING_MAP,
        "annotations": STRING_MAP,
    },
}

PROMETHEUS_RULE: dict[str, Any] = resource(
    "monitoring.coreos.com/v1",
    "PrometheusRule",
    _METADATA,
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["groups"],
        "properties": {
            "groups": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name", "rules"],
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
                        "interval": _DURATION,
                        "rules": {"type": "array", "items": _RULE},
                    },
                },
            }
        },
    },
)
