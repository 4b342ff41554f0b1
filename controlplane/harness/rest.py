"""A small REST client for one API server that keeps what the Python client drops.

Why not the ``kubernetes`` client: the ``Warning`` response headers are the only place a
client sees admission warnings, and the generated client discards them; the status of a
refused request is wanted as the JSON the server sent, not as an exception.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from controlplane.harness import ApiServer


@dataclass(frozen=True, slots=True)
class Answer:
    """What the API server answered: status code, JSON body, and admission warnings."""

    status: int
    body: Any
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def allowed(self) -> bool:
        """A 2xx answer."""
        return 200 <= self.status < 300

    @property
    def message(self) -> str:
        """The Status message of a refusal ("" for an allowed request)."""
        if self.allowed or not isinstance(self.body, dict):
            return ""
        return str(self.body.get("message", ""))


def _warning_text(header: str) -> str:
    # RFC 7234 warn-value: 299 - "text"; the API server escapes quotes and backslashes.
    head, _, rest = header.partition(' "')
    if not head.startswith("299") or not rest.endswith('"'):
        return header
    return rest[:-1].replace('\\"', '"').replace("\\\\", "\\")


class Rest:
    """Requests to ``server`` as its admin, with one TLS context reused."""

    def __init__(self, server: ApiServer) -> None:
        self.server = server
        self._context = ssl.create_default_context(cafile=str(server.credentials.serving.ca))
        self._token = server.credentials.tokens["admin"]

    def call(self, method: str, path: str, body: Any = None) -> Answer:
        """Send one request; a refusal is an :class:`Answer`, never an exception."""
        headers = {"Authorization": f"Bearer {self._token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.server.url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30, context=self._context) as response:
                status, raw, found = response.status, response.read(), response.headers
        except urllib.error.HTTPError as exc:
            status, raw, found = exc.code, exc.read(), exc.headers
        warnings = tuple(_warning_text(h) for h in found.get_all("Warning") or [])
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode(errors="replace")
        return Answer(status, decoded, warnings)

    def create(self, path: str, body: Any) -> Answer:
        """POST ``body`` to the collection at ``path``."""
        return self.call("POST", path, body)

    def apply_all(self, objects: list[dict[str, Any]]) -> None:
        """Create every object (exported policies, RuntimeClasses), failing on any refusal."""
        for obj in objects:
            answer = self.create(collection(obj), obj)
            if not answer.allowed:
                raise AssertionError(f"{obj['kind']} {obj['metadata']['name']}: {answer.message}")


_PLURALS = {
    "MutatingAdmissionPolicy": "mutatingadmissionpolicies",
    "MutatingAdmissionPolicyBinding": "mutatingadmissionpolicybindings",
    "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
    "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
    "RuntimeClass": "runtimeclasses",
    "Namespace": "namespaces",
    "Pod": "pods",
    "DaemonSet": "daemonsets",
    "Deployment": "deployments",
    "Job": "jobs",
    "ServiceAccount": "serviceaccounts",
    "DeviceClass": "deviceclasses",
    "ResourceClaimTemplate": "resourceclaimtemplates",
}


def collection(obj: dict[str, Any]) -> str:
    """The REST path of the collection ``obj`` is created in."""
    group_version = obj["apiVersion"]
    base = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    namespace = obj.get("metadata", {}).get("namespace")
    plural = _PLURALS[obj["kind"]]
    return f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"
