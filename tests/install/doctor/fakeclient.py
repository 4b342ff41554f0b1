"""A stand-in for the ``kubernetes`` API client of the doctor's cluster-side checks.

Why not the fake API server: the checks read discovery documents, ``/metrics`` and
dry-run creates the fake does not serve, and every one goes through one call
(:mod:`webhooks.install.doctor.rest`), so answering that call per (method, path) is all a
table of cases needs, with no socket.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from webhooks.core.config import load_config
from webhooks.install.doctor.installation import Installation
from webhooks.k8s.releases import judge
from webhooks.plugins import REGISTRY

#: An answer: (status, body); a body that is a str is sent as text.
Answer = tuple[int, Any]
Route = Answer | Callable[[Any], Answer] | Exception


@dataclass
class _Response:
    status: int
    data: bytes

    def read(self) -> bytes:
        return self.data


def status(code: int, message: str) -> Answer:
    """An error answer as the API server words it."""
    return code, {"kind": "Status", "status": "Failure", "message": message, "code": code}


@dataclass
class FakeClient:
    """Answers ``call_api`` from ``routes``; what was asked is in ``asked``."""

    routes: dict[tuple[str, str], Route] = field(default_factory=dict)
    asked: list[tuple[str, str, Any]] = field(default_factory=list)

    def param_serialize(self, method: str, resource_path: str, **kwargs: Any) -> tuple[Any, ...]:
        """As the client's: what ``call_api`` is then given (the path is the URL here)."""
        return method, resource_path, kwargs.get("header_params"), kwargs.get("body"), None

    def call_api(self, method: str, url: str, **kwargs: Any) -> _Response:
        body = kwargs.get("body")
        self.asked.append((method, url, body))
        route = self.routes.get((method, url), status(404, f"{url} not found"))
        if isinstance(route, Exception):
            raise route
        code, answer = route(body) if callable(route) else route
        data = answer.encode() if isinstance(answer, str) else json.dumps(answer).encode()
        return _Response(code, data)


def installation(
    client: FakeClient,
    config: Mapping[str, Any] | None = None,
    *,
    configurations: tuple[dict[str, Any], ...] = (),
    version: str = "v1.37.2",
    known: bool = True,
) -> Installation:
    """An installation named ``placement-webhooks`` in namespace ``placement-webhooks``."""
    return Installation(
        api=client,
        name="placement-webhooks",
        namespace="placement-webhooks",
        release=judge(version),
        configurations=configurations,
        config=load_config(config, REGISTRY) if known else None,
        config_note="" if known else "no ConfigMap placement-webhooks",
    )
