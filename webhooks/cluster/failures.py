"""One-line reasons for requests to the API server that failed, shared by every API client.

Why one module: the watch caches, the audit's paged lists and its report writes must name a
failure the same way (``HTTP 403: pods is forbidden: ...``, ``cannot connect: ...``), and an
operator reading a CronJob's log or a readiness message should not have to learn two.
The ``kubernetes`` and ``urllib3`` exception types are imported inside :func:`describe`, so
importing this module loads neither.
"""

from __future__ import annotations

from typing import Any

import orjson


def status_message(body: Any) -> str:
    """The ``message`` of a ``Status`` body, else the body itself, on one line (cut at 300).

    Why the Status message: it is what kubectl prints, and the whole body would bury it.
    """
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    text = str(body or "")
    try:
        status = orjson.loads(text)
    except orjson.JSONDecodeError:
        status = None
    if isinstance(status, dict) and isinstance(status.get("message"), str):
        text = status["message"]
    return " ".join(text.split())[:300]


def describe(exc: BaseException, timeout: float) -> str:
    """A one-line reason for a failed request: status and message, or what broke.

    Why the transport cases are told apart: "cannot connect" (wrong address, server down),
    "no answer within" (a black hole) and "connection lost" (a server that went away mid
    answer) each send an operator to a different place.
    """
    from kubernetes.client.exceptions import ApiException
    from urllib3 import exceptions as u3

    if isinstance(exc, ApiException):
        message = status_message(exc.body)
        return f"HTTP {exc.status}" + (f": {message}" if message else "")
    if isinstance(exc, u3.MaxRetryError) and exc.reason is not None:
        exc = exc.reason
    if isinstance(exc, u3.NewConnectionError):  # before TimeoutError: urllib3 subclasses it
        return "cannot connect: " + str(exc).rsplit(": ", 1)[-1]
    if isinstance(exc, u3.TimeoutError | TimeoutError):
        return f"no answer within {timeout:g}s"
    if isinstance(exc, u3.ProtocolError):
        return "connection lost"
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an ``ApiException`` carries, else ``None`` (transport failures).

    Why duck-typed: callers must classify an error without importing the client first.
    """
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None
