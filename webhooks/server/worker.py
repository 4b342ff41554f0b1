"""gunicorn's threaded worker, made safe against clients that connect and then say nothing.

Why: the stock worker hands every new connection to a thread, waits up to five seconds for
its first bytes there, then reads the request headers in blocking mode right after the TLS
handshake. A client that opens connections and stays silent (or stops after its handshake)
therefore holds worker threads, and a few dozen such clients stall the webhook. This worker
gives a new connection a brief look for data, and otherwise parks it in the worker's poller
— where idle keep-alive connections already wait, at no thread cost — both before and after
the handshake. Connections that have data are served exactly as before.

It relies on the threaded worker's internals (``TConn.initialized``/``data_ready``, the
deferral marker), which is why the project pins gunicorn's major version.
"""

from __future__ import annotations

import selectors
import ssl
from typing import Any

from gunicorn.workers import gthread

#: How long a thread looks at a new connection for data before parking it in the poller.
FIRST_DATA_WAIT = 0.2


def _readable(sock: Any, timeout: float) -> bool:
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(sock, selectors.EVENT_READ)
            return bool(selector.select(timeout))
        except (OSError, ValueError):
            return True  # let the normal path find the error and close


class Worker(gthread.ThreadWorker):  # type: ignore[misc]
    """The threaded worker with silent connections parked instead of holding threads."""

    def handle(self, conn: Any) -> Any:
        """Park a new connection that has nothing to read; otherwise serve it as usual."""
        if not conn.initialized:
            if not conn.data_ready and not conn.wait_for_data(FIRST_DATA_WAIT):
                return gthread._DEFER
            try:
                conn.sock.setblocking(True)
                conn.init()  # the TLS handshake, bounded by the socket's I/O timeout
            except Exception:  # a failed handshake: the client is gone or hostile
                self.log.debug("handshake failed", exc_info=True)
                return False
            if not _readable(conn.sock, FIRST_DATA_WAIT):
                conn.data_ready = False
                return gthread._DEFER
        return super().handle(conn)
