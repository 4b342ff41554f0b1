"""WSGI for the worker: the environ of a request that has fully arrived, the app's answer as bytes.

Why our own and not gunicorn's ``Request``/``Response``: by the time a thread is taken, the
poller already holds the whole request in memory, so the environ is a dict built from a
parsed head and a ``BytesIO`` body, and the answer is collected into one buffer that the
thread hands to the socket without blocking. gunicorn's objects read and write a blocking
socket, which is exactly what the worker avoids (measured: docs/performance.md).
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Callable, Iterable
from email.utils import formatdate
from types import TracebackType
from typing import Any
from urllib.parse import unquote_to_bytes

from webhooks.server.framing import Head

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
ExcInfo = tuple[type[BaseException], BaseException, TracebackType]

#: Headers the server owns: an app's values would break the connection's framing.
_HOP_BY_HOP = frozenset({"connection", "content-length", "keep-alive", "transfer-encoding"})


class HttpDate:
    """The ``Date`` header value, rendered once a second.

    Why: every response must carry it, and formatting a date per response is a measurable
    share of a 4 KB review; one (second, text) tuple is swapped atomically between threads.
    """

    def __init__(self) -> None:
        self._cached: tuple[int, str] = (0, "")

    def now(self) -> str:
        """The current date in IMF-fixdate form."""
        second = int(time.time())
        cached = self._cached
        if cached[0] != second:
            cached = self._cached = (second, formatdate(second, usegmt=True))
        return cached[1]


class Responder:
    """Builds environs for one listening address and runs the app on them.

    One per listener: the server name, port and scheme are the same for every request it
    accepts, so they are put in a template once instead of per request.
    """

    def __init__(self, app: WSGIApp, server: tuple[str, int], scheme: str, date: HttpDate) -> None:
        self.app = app
        self.date = date
        self._template: dict[str, Any] = {
            "SCRIPT_NAME": "",
            "SERVER_NAME": server[0],
            "SERVER_PORT": str(server[1]),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": scheme,
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
            "wsgi.input_terminated": True,
        }

    def environ(
        self,
        head: Head,
        body: bytes,
        remote: tuple[str, int] | None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The PEP 3333 environ of a request whose body has arrived whole."""
        path = head.path
        if "%" in path:
            path = unquote_to_bytes(path).decode("latin-1")
        env = dict(self._template)
        env["REQUEST_METHOD"] = head.method
        env["PATH_INFO"] = path
        env["QUERY_STRING"] = head.query
        env["SERVER_PROTOCOL"] = head.version
        env["REMOTE_ADDR"] = remote[0] if remote else ""
        env["REMOTE_PORT"] = str(remote[1]) if remote else ""
        env["wsgi.input"] = io.BytesIO(body)
        for name, value in head.headers:
            if "_" in name:
                continue  # dropped, as gunicorn does: X_Forwarded would pose as X-Forwarded
            key = name.upper().replace("-", "_")
            if key == "CONTENT_TYPE":
                env[key] = value
                continue
            if key == "CONTENT_LENGTH":
                env[key] = value
                continue
            key = "HTTP_" + key
            env[key] = f"{env[key]},{value}" if key in env else value
        if extra:
            env.update(extra)
        return env

    def respond(self, env: dict[str, Any], keep_alive: bool) -> tuple[bytes, bool]:
        """Run the app; the whole response (head and body) and whether to close afterwards.

        The app's own ``Connection: close`` is honoured; its framing headers are replaced by
        the server's, computed from the body it actually returned.
        """
        state: list[Any] = []

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: ExcInfo | None = None
        ) -> Callable[[bytes], None]:
            if state and exc_info is None:
                raise AssertionError("start_response called twice without exc_info")
            state[:] = [status, headers]
            return written.append

        written: list[bytes] = []
        result = self.app(env, start_response)
        try:
            chunks = written + [chunk for chunk in result if chunk]
        finally:
            close_result = getattr(result, "close", None)
            if close_result is not None:
                close_result()
        status, headers = state
        lines = [f"HTTP/1.1 {status}\r\n"]
        for name, value in headers:
            lower = name.lower()
            if lower in _HOP_BY_HOP:
                if lower == "connection" and "close" in value.lower():
                    keep_alive = False
                continue
            lines.append(f"{name}: {value}\r\n")
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        lines.append(f"Date: {self.date.now()}\r\n")
        lines.append(f"Content-Length: {len(body)}\r\n")
        lines.append("\r\n" if keep_alive else "Connection: close\r\n\r\n")
        head = "".join(lines).encode("latin-1")
        if env["REQUEST_METHOD"] == "HEAD":
            return head, not keep_alive
        return head + body, not keep_alive
