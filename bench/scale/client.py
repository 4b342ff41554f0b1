"""Pod creates the way a busy client sends them: keep-alive HTTPS, one connection per thread.

Why not the ``kubernetes`` client: its model objects cost more CPU per request than the
admission under test on this 2-core machine, and that CPU would be taken from the API
server and the webhooks alike, flattening every difference. ``http.client`` with a
persistent connection per thread sends the same bytes kubectl would, and the time a create
takes is read around the request and its whole response.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from controlplane.harness.components import ApiServer


@dataclass(frozen=True, slots=True)
class Created:
    """One create: its status, seconds from sending to the last response byte, and the
    error message of a refusal."""

    status: int
    seconds: float
    message: str = ""


class Creator:
    """Creates objects on one API server as admin, one keep-alive connection per thread."""

    def __init__(self, server: ApiServer, timeout: float = 60.0) -> None:
        parts = urlsplit(server.url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 443
        self._context = ssl.create_default_context(cafile=str(server.credentials.serving.ca))
        self._headers = {
            "Authorization": f"Bearer {server.credentials.tokens['admin']}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        self._timeout = timeout
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(
                self._host, self._port, context=self._context, timeout=self._timeout
            )
            self._local.conn = conn
        return conn

    def post(self, path: str, body: dict[str, Any]) -> Created:
        """POST ``body`` to ``path``; a dropped connection is reopened once and counted as
        the error it was when the second try fails too."""
        data = json.dumps(body).encode()
        for attempt in (1, 2):
            conn = self._connection()
            began = time.perf_counter()
            try:
                conn.request("POST", path, data, self._headers)
                response = conn.getresponse()
                raw = response.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    return Created(0, time.perf_counter() - began, f"{type(exc).__name__}: {exc}")
                continue
            seconds = time.perf_counter() - began
            message = ""
            if response.status >= 300:
                try:
                    message = str(json.loads(raw).get("message", ""))
                except ValueError:
                    message = raw[:200].decode(errors="replace")
            return Created(response.status, seconds, message)
        raise AssertionError("unreachable")
