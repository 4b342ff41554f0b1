"""The few raw requests the cluster-side checks make: a GET, a dry-run create, ``/metrics``.

Why raw paths rather than the typed ``kubernetes`` APIs: the checks read discovery
documents, the API server's metrics text and objects of several groups as plain dicts, and
one function of (method, path) is what a unit test's stand-in for the client answers
without an API server. Every request is bounded by the installation's timeout, and every
failure comes out as :class:`Refused` with the API server's own message, so a check turns
it into a finding instead of an exception.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from webhooks.install.doctor.installation import Installation


class Refused(Exception):
    """A request that did not succeed: ``status`` is the HTTP code (0: no answer at all)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _message(exc: Any) -> str:
    text = _status_message(getattr(exc, "body", None))
    return text or " ".join(str(getattr(exc, "reason", None) or exc).split())


def _call(
    installation: Installation,
    method: str,
    path: str,
    query: Sequence[tuple[str, str]] = (),
    body: Mapping[str, Any] | None = None,
    accept: str = "application/json",
) -> bytes:
    api = installation.api
    try:
        verb, url, headers, sent, form = api.param_serialize(
            method,
            path,
            query_params=list(query),
            header_params={"Accept": accept, "Content-Type": "application/json"},
            body=dict(body) if body is not None else None,
            auth_settings=["BearerToken"],
        )
        response = api.call_api(
            verb,
            url,
            header_params=headers,
            body=sent,
            post_params=form,
            _request_timeout=installation.timeout,
        )
        data = response.read()
    except Exception as exc:  # the client's, urllib3's and socket errors alike
        status = getattr(exc, "status", 0)
        raise Refused(status if isinstance(status, int) else 0, _message(exc)) from None
    status = int(getattr(response, "status", 0) or 0)
    if not 200 <= status < 300:
        raise Refused(status, _status_message(data) or f"{method} {path}: HTTP {status}")
    return bytes(data or b"")


def _status_message(data: Any) -> str:
    """The ``message`` of an error's ``Status`` body (``""`` when it has none)."""
    try:
        status = json.loads(data) if data else {}
    except (TypeError, ValueError):
        return ""
    message = status.get("message") if isinstance(status, dict) else None
    return " ".join(str(message).split()) if message else ""


def get(
    installation: Installation, path: str, query: Sequence[tuple[str, str]] = ()
) -> dict[str, Any]:
    """``GET path`` as a dict; :class:`Refused` for an error (404 included) or a non-object."""
    data = _call(installation, "GET", path, query)
    try:
        found = json.loads(data or b"{}")
    except ValueError:
        raise Refused(0, f"GET {path}: the answer is not JSON") from None
    if not isinstance(found, dict):
        raise Refused(0, f"GET {path}: the answer is not an object")
    return found


def dry_run_create(installation: Installation, path: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """``POST path?dryRun=All`` of ``obj``: what admission made of it, stored nowhere.

    :class:`Refused` when admission (or validation) refused it, with the API server's words.
    """
    data = _call(installation, "POST", path, (("dryRun", "All"),), obj)
    try:
        found = json.loads(data or b"{}")
    except ValueError:
        raise Refused(0, f"POST {path}: the answer is not JSON") from None
    return found if isinstance(found, dict) else {}


def metrics(installation: Installation) -> str:
    """The API server's ``/metrics`` text; :class:`Refused` when it may not be read."""
    data = _call(installation, "GET", "/metrics", accept="text/plain")
    return data.decode("utf-8", errors="replace")
