"""HTTP for the fake: each request recorded, authenticated, routed and answered from the
verbs; watches as chunked, newline-delimited JSON.

Why apart from the verbs: the wire (HTTP/1.1 keep-alive, chunked framing, no Nagle, every
open connection dropped when the server stops) is the same for every verb, and the faults
that live on the wire (stalled requests, stalled bodies, dropped connections) act here.
Errors are ``Status`` objects: 401 for any token but
:data:`~bench.fakeapi.kubeconfig.TOKEN`, 404 for a resource not served (or made
:attr:`~bench.fakeapi.verbs.Verbs.unserved`, as by an older API server), 415 and 422 for a
PATCH that is not an apply.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

import yaml

from bench.fakeapi.kubeconfig import TOKEN
from bench.fakeapi.objects import status
from bench.fakeapi.resources import REPORTS, route

if TYPE_CHECKING:
    from bench.fakeapi.server import FakeApiServer


class Request(NamedTuple):
    """One request the fake received; ``auth`` (the Authorization header) comes last.

    ``namespace`` is the namespace in the path (``None`` for cluster-wide requests).
    """

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    kind: str
    plural: str | None
    name: str | None
    namespace: str | None
    auth: str


class HttpServer(ThreadingHTTPServer):
    """Serves ``fake`` on an already bound socket and keeps its open connections to drop them.

    Why the socket comes bound: the fake holds its port between a stop and a start
    (:mod:`bench.fakeapi.ports`), so listening on that socket is what starts the server.
    """

    daemon_threads = True
    block_on_close = False

    def __init__(self, sock: socket.socket, fake: FakeApiServer) -> None:
        self.fake = fake
        self.connections: set[socket.socket] = set()
        self.conn_lock = threading.Lock()
        super().__init__(sock.getsockname(), _Handler, bind_and_activate=False)
        self.socket.close()
        self.socket = sock  # already bound: listening on it is what makes the server start
        self.server_address = sock.getsockname()
        self.server_activate()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.conn_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.conn_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        """Shut every open connection down, watches and stalled requests included."""
        with self.conn_lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HttpServer

    def setup(self) -> None:
        """No Nagle: headers and body go out as separate writes, and waiting for the
        client's delayed ACK in between would add 40 ms to every answer."""
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read :attr:`FakeApiServer.requests` instead."""

    def _accept(self, body: Any) -> tuple[str, str, str | None, dict[str, str], str | None] | None:
        """Record the request; ``None`` when it has been answered (stalled, refused, faulted)."""
        fake = self.server.fake
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        flat = {k: v[-1] for k, v in query.items()}
        kind, plural, name, namespace = route(url.path, fake.device_taint_rule_version)
        if self.command in ("PATCH", "DELETE"):
            kind = self.command.lower()
        elif self.command == "POST":
            kind = "create"
        elif self.command == "PUT":
            kind = "replace"
        elif kind == "list" and flat.get("watch") in ("1", "true"):
            kind = "watch"
        auth = self.headers.get("Authorization", "")
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = Request(
            self.command, url.path, query, headers, body, kind, plural, name, namespace, auth
        )
        fake.record(request)
        if fake.stall.is_set():
            fake.released.wait()  # accepted, never answered, until the server stops
            self.close_connection = True
            return None
        if auth != f"Bearer {TOKEN}":
            self._json(401, status(401, "Unauthorized", "Unauthorized"))
            return None
        if plural is None or plural in fake.unserved:
            message = "the server could not find the requested resource"
            self._json(404, status(404, "NotFound", message))
            return None
        fault = fake.fault(request) if fake.fault is not None else None
        if fault == "drop":
            self.close_connection = True  # no answer at all: the client sees the connection end
            return None
        if isinstance(fault, int):
            self._json(fault, fake.fault_status(fault, flat.get("continue", "")))
            return None
        return kind, plural, name, flat, namespace

    def do_GET(self) -> None:
        fake = self.server.fake
        if urlsplit(self.path).path in ("/version", "/version/") and not fake.stall.is_set():
            if fake.version is None:
                self._json(404, status(404, "NotFound", "the server could not find it"))
            else:
                self._json(200, {"major": "1", "gitVersion": fake.version})
            return
        accepted = self._accept(None)
        if accepted is None:
            return
        kind, plural, name, query, namespace = accepted
        if kind == "get":
            self._json(*fake.get(plural, name or "", namespace))
        elif kind == "watch":
            self._watch(plural, query)
        else:
            self._json(*fake.list(plural, query, namespace))

    def do_PATCH(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        body = yaml.safe_load(raw) if raw else None
        accepted = self._accept(body)
        if accepted is None:
            return
        _, plural, name, query, namespace = accepted
        if self.headers.get("Content-Type") != "application/apply-patch+yaml":
            self._json(415, status(415, "UnsupportedMediaType", "unsupported patch type"))
        elif not query.get("fieldManager"):
            message = "fieldManager is required for apply requests"
            self._json(422, status(422, "Invalid", message))
        elif plural in REPORTS:
            self._json(*self.server.fake.apply_object(plural, name or "", namespace, body, query))
        else:
            self._json(*self.server.fake.apply(plural, name or "", body))

    def do_POST(self) -> None:
        body = self._body()
        accepted = self._accept(body)
        if accepted is None:
            return
        _, plural, _, _, namespace = accepted
        self._json(*self.server.fake.create(plural, namespace, body))

    def do_PUT(self) -> None:
        body = self._body()
        accepted = self._accept(body)
        if accepted is None:
            return
        _, plural, name, _, namespace = accepted
        self._json(*self.server.fake.replace(plural, name or "", namespace, body))

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        return json.loads(raw) if raw else None

    def do_DELETE(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        accepted = self._accept(None)
        if accepted is None:
            return
        _, plural, name, _, namespace = accepted
        self._json(*self.server.fake.remove(plural, name or "", namespace))

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
