"""Strict JSON schemas for the cert-manager objects the chart renders.

kubernetes-validate ships schemas for built-in kinds only; these cover exactly the
cert-manager v1 fields the chart uses (names and enums from cert-manager's API reference),
with ``additionalProperties: false`` so a misspelt field fails as it would at the API server.
"""

from __future__ import annotations

from typing import Any

from tests.charts.strict import metadata, resource

_METADATA = metadata("labels", "annotations")
_DURATION = {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(h|m|s|ms))+$"}
_ISSUER_REF = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "kind": {"type": "string"},
        "group": {"type": "string"},
    },
}


def _top(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return resource("cert-manager.io/v1", kind, _METADATA, spec)


SCHEMAS: dict[str, dict[str, Any]] = {
    "Issuer": _top(
        "Issuer",
        {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "maxProperties": 1,
            "properties": {
                "selfSigned": {"type": "object", "additionalProperties": False},
                "ca": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["secretName"],
                    "properties": {"secretName": {"type": "string", "minLength": 1}},
                },
            },
        },
    ),
    "Certificate": _top(
        "Certificate",
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["secretName", "issuerRef"],
            "properties": {
                "secretName": {"type": "string", "minLength": 1},
                "commonName": {"type": "string", "maxLength": 64},
                "dnsNames": {"type": "array", "items": {"type": "string"}},
                "isCA": {"type": "boolean"},
                "duration": _DURATION,
                "renewBefore": _DURATION,
                "privateKey": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "algorithm": {"enum": ["RSA", "ECDSA", "Ed25519"]},
                        "size": {"type": "integer"},
                        "rotationPolicy": {"enum": ["Never", "Always"]},
                    },
                },
                "usages": {
                    "type": "array",
                    "items": {
                        "enum": [
                            "signing",
                            "digital signature",
                            "content commitment",
                            "key encipherment",
                            "key agreement",
                            "data encipherment",
                            "cert sign",
                            "crl sign",
                            "encipher only",
                            "decipher only",
                            "any",
                            "server auth",
                            "client auth",
                        ]
                    },
                },
                "issuerRef": _ISSUER_REF,
            },
        },
    ),
}
