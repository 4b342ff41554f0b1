"""A small fake Kubernetes API server on 127.0.0.1 that speaks the API's real JSON shapes.

It serves RuntimeClasses (``node.k8s.io/v1``) and Namespaces (``v1``): paginated lists with
``metadata.resourceVersion``, chunked newline-delimited watch streams from a resourceVersion
(with BOOKMARK events and a 410 ``ERROR`` event for a compacted version), GETs, and ``Status``
objects for errors. Faults are switches: lists or GETs answering 500, every request stalling
(accepted, never answered), bodies stalling after the headers, watches going silent or
failing with an ``ERROR`` event; :meth:`FakeApiServer.stop` drops every open
connection and :meth:`FakeApiServer.start` brings the server back on the same port.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

#: URL prefix → (plural, group, apiVersion, kind) for the two collections served.
COLLECTIONS = {
    "/apis/node.k8s.io/v1/runtimeclasses": (
        "runtimeclasses",
        "node.k8s.io",
        "node.k8s.io/v1",
        "RuntimeClass",
    ),
    "/api/v1/namespaces": ("namespaces", "", "v1", "Namespace"),
}
KINDS = {kind: plural for plural, _, _, kind in COLLECTIONS.values()}


def runtime_class(name: str, handler: str = "runc", **extra: Any) -> dict[str, Any]:
    """A RuntimeClass as the API server returns it (without server-set metadata)."""
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": handler,
        **extra,
    }


def namespace(name: str, **annotations: str) -> dict[str, Any]:
    """A Namespace as the API server returns it."""
    meta: dict[str, Any] = {"name": name, "labels": {"kubernetes.io/metadata.name": name}}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": meta,
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    """A ``Status`` object, the body of every API error."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], fake: FakeApiServer) -> None:
        self.fake = fake
        self.connections: set[socket.socket] = set()
        self.conn_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.conn_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.conn_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self.conn_lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read :attr:`FakeApiServer.requests` instead."""

    def do_GET(self) -> None:
        fake = self.server.fake
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        kind, plural, name = fake.route(url.path)
        if kind == "list" and query.get("watch") in ("1", "true"):
            kind = "watch"
        fake.record(kind, plural, name, query, self.headers.get("Authorization", ""))
        if fake.stall.is_set():
            fake.released.wait()  # accepted, never answered, until the server stops
            self.close_connection = True
            return
        if plural is None:
            self._json(
                404, status(404, "NotFound", "the server could not find the requested resource")
            )
        elif kind == "get":
            code, body = fake.get(plural, name or "")
            self._json(code, body)
        elif kind == "watch":
            self._watch(plural, query)
        else:
            code, body = fake.list(plural, query)
            self._json(code, body)

    def _json(self, code: int, body: dict[str, Any]) -> None:
        fake = self.server.fake
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if fake.stall_bodies:
            self.wfile.write(data[:10])
            self.wfile.flush()
            fake.released.wait()  # headers and a few bytes, then nothing until the stop
            self.close_connection = True
            return
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _watch(self, plural: str, query: dict[str, str]) -> None:
        fake = self.server.fake
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        timeout = float(query.get("timeoutSeconds", "1800"))
        bookmarks = query.get("allowWatchBookmarks") == "true"
        try:
            for event in fake.events(plural, query.get("resourceVersion", ""), timeout, bookmarks):
                self._chunk(json.dumps(event).encode() + b"\n")
            if fake.running:
                self.wfile.write(b"0\r\n\r\n")  # the clean end of a watch at its timeout
                self.wfile.flush()
        except OSError:
            self.close_connection = True


class FakeApiServer:
    """The fake API server; thread-safe; start with :meth:`start`, always :meth:`stop`."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.rv = 1
        self.objects: dict[str, dict[str, dict[str, Any]]] = {p: {} for p in KINDS.values()}
        self.history: dict[str, list[tuple[int, dict[str, Any]]]] = {p: [] for p in KINDS.values()}
        self.compacted: dict[str, int] = dict.fromkeys(KINDS.values(), 0)
        self.requests: list[tuple[str, str | None, str | None, dict[str, str], str]] = []
        self.fail_lists: set[str] = set()
        self.fail_gets: set[str] = set()
        self.stall = threading.Event()
        self.released = threading.Event()
        self.silent_watches = False
        self.watch_error: dict[str, Any] | None = None
        self.stall_bodies = False
        self.port = 0
        self.running = False
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeApiServer:
        """Listen (again on the same port after a stop) and serve in a daemon thread."""
        self.released.clear()
        self._server = _Server(("127.0.0.1", self.port), self)
        self.port = self._server.server_address[1]
        self.running = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and drop every open connection, watches and stalled ones included."""
        if self._server is None:
            return
        self.running = False
        self.released.set()
        with self.cond:
            self.cond.notify_all()
        self._server.shutdown()
        self._server.drop_connections()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self._server = None

    def kubeconfig(self, path: Path, token: str = "fake-token") -> Path:
        """Write a kubeconfig pointing at this server with a bearer token; returns ``path``."""
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
                    "users": [{"name": "tester", "user": {"token": token}}],
                    "contexts": [
                        {"name": "fake", "context": {"cluster": "fake", "user": "tester"}}
                    ],
                    "current-context": "fake",
                }
            ),
            encoding="utf-8",
        )
        return path

    # -- changing the cluster --------------------------------------------------------------

    def put(self, obj: dict[str, Any], *, announce: bool = True) -> dict[str, Any]:
        """Create or replace ``obj``; ``announce=False`` keeps it out of watch streams.

        Unannounced objects model an object the cache has not heard of yet, which a live GET
        must still find.
        """
        plural = KINDS[obj["kind"]]
        name = obj["metadata"]["name"]
        with self.cond:
            self.rv += 1
            stored = json.loads(json.dumps(obj))
            stored["metadata"]["resourceVersion"] = str(self.rv)
            stored["metadata"].setdefault("uid", f"uid-{plural}-{name}")
            kind = "MODIFIED" if name in self.objects[plural] else "ADDED"
            self.objects[plural][name] = stored
            if announce:
                self.history[plural].append((self.rv, {"type": kind, "object": stored}))
            self.cond.notify_all()
        return stored

    def delete(self, plural: str, name: str) -> None:
        """Delete an object and announce it to watchers."""
        with self.cond:
            obj = self.objects[plural].pop(name)
            self.rv += 1
            gone = json.loads(json.dumps(obj))
            gone["metadata"]["resourceVersion"] = str(self.rv)
            self.history[plural].append((self.rv, {"type": "DELETED", "object": gone}))
            self.cond.notify_all()

    def bookmark(self, plural: str) -> str:
        """Send a BOOKMARK at a new resourceVersion to watchers that allow them."""
        _, _, api_version, kind = next(c for c in COLLECTIONS.values() if c[0] == plural)
        with self.cond:
            self.rv += 1
            obj = {
                "kind": kind,
                "apiVersion": api_version,
                "metadata": {"resourceVersion": str(self.rv)},
            }
            self.history[plural].append((self.rv, {"type": "BOOKMARK", "object": obj}))
            self.cond.notify_all()
            return str(self.rv)

    def compact(self, plural: str) -> None:
        """Forget history: watches from an older resourceVersion now get 410 Gone."""
        with self.cond:
            self.rv += 1
            self.compacted[plural] = self.rv
            self.history[plural] = []
            self.cond.notify_all()

    # -- serving ---------------------------------------------------------------------------

    def route(self, path: str) -> tuple[str, str | None, str | None]:
        """(list|watch|get, plural, name) for a request path; plural None when unknown."""
        for prefix, (plural, *_rest) in COLLECTIONS.items():
            if path == prefix:
                return "list", plural, None
            if path.startswith(prefix + "/") and "/" not in path[len(prefix) + 1 :]:
                return "get", plural, path[len(prefix) + 1 :]
        return "get", None, None

    def record(
        self, kind: str, plural: str | None, name: str | None, query: dict[str, str], auth: str
    ) -> None:
        with self.cond:
            self.requests.append((kind, plural, name, query, auth))

    def count(self, kind: str, plural: str) -> int:
        """How many ``kind`` (list, watch, get) requests ``plural`` received."""
        with self.cond:
            return sum(1 for k, p, *_ in self.requests if k == kind and p == plural)

    def get(self, plural: str, name: str) -> tuple[int, dict[str, Any]]:
        group = next(c[1] for c in COLLECTIONS.values() if c[0] == plural)
        resource = f"{plural}.{group}" if group else plural
        if name in self.fail_gets:
            return 500, status(
                500,
                "InternalError",
                "Internal error occurred: etcdserver: request timed out",
                causes=[{"message": "etcdserver: request timed out"}],
            )
        with self.cond:
            obj = self.objects[plural].get(name)
        if obj is None:
            return 404, status(
                404,
                "NotFound",
                f'{resource} "{name}" not found',
                name=name,
                group=group,
                kind=plural,
            )
        return 200, obj

    def list(self, plural: str, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
        _, _, api_version, kind = next(c for c in COLLECTIONS.values() if c[0] == plural)
        if plural in self.fail_lists:
            return 500, status(500, "InternalError", "Internal error occurred: list unavailable")
        with self.cond:
            items = [self.objects[plural][n] for n in sorted(self.objects[plural])]
            rv = self.rv
        start = int(query.get("continue") or 0)
        limit = int(query.get("limit") or 0) or len(items) or 1
        page = items[start : start + limit]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if start + limit < len(items):
            meta["continue"] = str(start + limit)
            meta["remainingItemCount"] = len(items) - start - limit
        # List items carry no kind or apiVersion, exactly as the API server sends them.
        bare = [{k: v for k, v in item.items() if k not in ("kind", "apiVersion")} for item in page]
        return 200, {
            "kind": f"{kind}List",
            "apiVersion": api_version,
            "metadata": meta,
            "items": bare,
        }

    def events(
        self, plural: str, since: str, timeout: float, bookmarks: bool
    ) -> Iterator[dict[str, Any]]:
        """Watch events after ``since`` until ``timeout`` passes or the server stops."""
        deadline = time.monotonic() + timeout
        after = int(since or 0)
        if self.watch_error is not None:
            yield {"type": "ERROR", "object": self.watch_error}
            return
        with self.cond:
            if after < self.compacted[plural]:
                message = f"too old resource version: {after} ({self.compacted[plural]})"
                yield {"type": "ERROR", "object": status(410, "Expired", message)}
                return
        while self.running:
            with self.cond:
                ready = [
                    event
                    for rv, event in self.history[plural]
                    if rv > after and (bookmarks or event["type"] != "BOOKMARK")
                ]
                if not ready or self.silent_watches:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 and not self.silent_watches:
                        return
                    self.cond.wait(min(max(remaining, 0.05), 0.2))
                    continue
            for event in ready:
                after = int(event["object"]["metadata"]["resourceVersion"])
                yield event
