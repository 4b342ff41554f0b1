"""A small fake Kubernetes API server on 127.0.0.1 that speaks the API's real JSON shapes.

Why one fake: the cluster source and ``webhook-config --inject`` both go through the real
``kubernetes`` client (kubeconfig loading, bearer token, content types, query parameters),
and the only way to see what they put on the wire is to be the server.

It serves RuntimeClasses (``node.k8s.io/v1``), Namespaces (``v1``) and the two webhook
configurations (``admissionregistration.k8s.io/v1``): paginated lists with
``metadata.resourceVersion``, chunked newline-delimited watch streams from a resourceVersion
(with BOOKMARK events and a 410 ``ERROR`` event for a compacted version), GETs, ``Status``
objects for errors and 401 for any token but :data:`TOKEN`. A PATCH is a server-side apply
of the one field a client may send (``webhooks[name=...].clientConfig.caBundle``); anything
else in it is recorded and makes the test fail. Faults are switches: lists or GETs answering
500, every request stalling (accepted, never answered), bodies stalling after the headers,
watches going silent or failing with an ``ERROR`` event; :meth:`FakeApiServer.stop` drops
every open connection and :meth:`FakeApiServer.start` brings the server back on the same port.
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
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

import yaml

ADMISSION = "admissionregistration.k8s.io"

#: URL prefix → (plural, group, apiVersion, kind) for the collections served.
COLLECTIONS = {
    "/apis/node.k8s.io/v1/runtimeclasses": (
        "runtimeclasses",
        "node.k8s.io",
        "node.k8s.io/v1",
        "RuntimeClass",
    ),
    "/api/v1/namespaces": ("namespaces", "", "v1", "Namespace"),
    f"/apis/{ADMISSION}/v1/mutatingwebhookconfigurations": (
        "mutatingwebhookconfigurations",
        ADMISSION,
        f"{ADMISSION}/v1",
        "MutatingWebhookConfiguration",
    ),
    f"/apis/{ADMISSION}/v1/validatingwebhookconfigurations": (
        "validatingwebhookconfigurations",
        ADMISSION,
        f"{ADMISSION}/v1",
        "ValidatingWebhookConfiguration",
    ),
}
KINDS = {kind: plural for plural, _, _, kind in COLLECTIONS.values()}

#: The bearer token every kubeconfig written here carries; any other is refused with 401.
TOKEN = "fake-token"


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


def write_kubeconfig(path: Path, server: str, token: str = TOKEN) -> Path:
    """Write a kubeconfig for ``server`` with a bearer token; returns ``path``.

    Why a function of its own: a test of an unreachable API server needs a kubeconfig that
    names a port nothing listens on, with no fake behind it.
    """
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": server}}],
                "users": [{"name": "tester", "user": {"token": token}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "tester"}}],
                "current-context": "fake",
            }
        ),
        encoding="utf-8",
    )
    return path


class Request(NamedTuple):
    """One request the fake received; ``auth`` (the Authorization header) comes last."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    kind: str
    plural: str | None
    name: str | None
    auth: str


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

    def _accept(self, body: Any) -> tuple[str, str, str | None, dict[str, str]] | None:
        """Record the request; ``None`` when it has been answered (stalled or refused)."""
        fake = self.server.fake
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        flat = {k: v[-1] for k, v in query.items()}
        kind, plural, name = fake.route(url.path)
        if self.command == "PATCH":
            kind = "patch"
        elif kind == "list" and flat.get("watch") in ("1", "true"):
            kind = "watch"
        auth = self.headers.get("Authorization", "")
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake.record(Request(self.command, url.path, query, headers, body, kind, plural, name, auth))
        if fake.stall.is_set():
            fake.released.wait()  # accepted, never answered, until the server stops
            self.close_connection = True
            return None
        if auth != f"Bearer {TOKEN}":
            self._json(401, status(401, "Unauthorized", "Unauthorized"))
            return None
        if plural is None:
            message = "the server could not find the requested resource"
            self._json(404, status(404, "NotFound", message))
            return None
        return kind, plural, name, flat

    def do_GET(self) -> None:
        accepted = self._accept(None)
        if accepted is None:
            return
        kind, plural, name, query = accepted
        fake = self.server.fake
        if kind == "get":
            self._json(*fake.get(plural, name or ""))
        elif kind == "watch":
            self._watch(plural, query)
        else:
            self._json(*fake.list(plural, query))

    def do_PATCH(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        body = yaml.safe_load(raw) if raw else None
        accepted = self._accept(body)
        if accepted is None:
            return
        _, plural, name, query = accepted
        if self.headers.get("Content-Type") != "application/apply-patch+yaml":
            self._json(415, status(415, "UnsupportedMediaType", "unsupported patch type"))
        elif not query.get("fieldManager"):
            message = "fieldManager is required for apply requests"
            self._json(422, status(422, "Invalid", message))
        else:
            self._json(*self.server.fake.apply(plural, name or "", body))

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
    """The fake API server; thread-safe; start with :meth:`start`, always :meth:`stop`.

    :attr:`objects` maps (plural, name) to the stored object; hold :attr:`lock` to read or
    change it from a test.
    """

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.rv = 1
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.history: dict[str, list[tuple[int, dict[str, Any]]]] = {p: [] for p in KINDS.values()}
        self.compacted: dict[str, int] = dict.fromkeys(KINDS.values(), 0)
        self.requests: list[Request] = []
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
        with self.lock:
            self.lock.notify_all()
        self._server.shutdown()
        self._server.drop_connections()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self._server = None

    def kubeconfig(self, path: Path) -> Path:
        """Write a kubeconfig pointing at this server with :data:`TOKEN`; returns ``path``."""
        return write_kubeconfig(path, self.url)

    def cluster_config(self, directory: Path, **settings: Any) -> Path:
        """Write ``config.yaml`` whose ``cluster`` section reads this server; returns its path.

        Why: the server finds the API through its config file, so every test of that path
        writes a kubeconfig (next to it, in ``directory``) and a config naming it.
        """
        kubeconfig = self.kubeconfig(directory / "kubeconfig")
        cluster = {"source": "kubeconfig", "kubeconfig": str(kubeconfig), **settings}
        path = directory / "config.yaml"
        path.write_text(json.dumps({"cluster": cluster}), encoding="utf-8")  # JSON is YAML
        return path

    # -- changing the cluster --------------------------------------------------------------

    def put(self, obj: dict[str, Any], *, announce: bool = True) -> dict[str, Any]:
        """Create or replace ``obj``; ``announce=False`` keeps it out of watch streams.

        Unannounced objects model an object the cache has not heard of yet, which a live GET
        must still find.
        """
        plural = KINDS[obj["kind"]]
        name = obj["metadata"]["name"]
        with self.lock:
            self.rv += 1
            stored = json.loads(json.dumps(obj))
            stored["metadata"]["resourceVersion"] = str(self.rv)
            stored["metadata"].setdefault("uid", f"uid-{plural}-{name}")
            if (plural, name) not in self.objects:
                _created(stored)
            kind = "MODIFIED" if (plural, name) in self.objects else "ADDED"
            self.objects[plural, name] = stored
            if announce:
                self.history[plural].append((self.rv, {"type": kind, "object": stored}))
            self.lock.notify_all()
        return stored

    def delete(self, plural: str, name: str) -> None:
        """Delete an object and announce it to watchers."""
        with self.lock:
            obj = self.objects.pop((plural, name))
            self.rv += 1
            gone = json.loads(json.dumps(obj))
            gone["metadata"]["resourceVersion"] = str(self.rv)
            self.history[plural].append((self.rv, {"type": "DELETED", "object": gone}))
            self.lock.notify_all()

    def bookmark(self, plural: str) -> str:
        """Send a BOOKMARK at a new resourceVersion to watchers that allow them."""
        _, _, api_version, kind = next(c for c in COLLECTIONS.values() if c[0] == plural)
        with self.lock:
            self.rv += 1
            obj = {
                "kind": kind,
                "apiVersion": api_version,
                "metadata": {"resourceVersion": str(self.rv)},
            }
            self.history[plural].append((self.rv, {"type": "BOOKMARK", "object": obj}))
            self.lock.notify_all()
            return str(self.rv)

    def compact(self, plural: str) -> None:
        """Forget history: watches from an older resourceVersion now get 410 Gone."""
        with self.lock:
            self.rv += 1
            self.compacted[plural] = self.rv
            self.history[plural] = []
            self.lock.notify_all()

    # -- serving ---------------------------------------------------------------------------

    def route(self, path: str) -> tuple[str, str | None, str | None]:
        """(list|watch|get, plural, name) for a request path; plural None when unknown."""
        for prefix, (plural, *_rest) in COLLECTIONS.items():
            if path == prefix:
                return "list", plural, None
            if path.startswith(prefix + "/") and "/" not in path[len(prefix) + 1 :]:
                return "get", plural, path[len(prefix) + 1 :]
        return "get", None, None

    def record(self, request: Request) -> None:
        with self.lock:
            self.requests.append(request)

    def count(self, kind: str, plural: str) -> int:
        """How many ``kind`` (list, watch, get, patch) requests ``plural`` received."""
        with self.lock:
            return sum(1 for r in self.requests if r.kind == kind and r.plural == plural)

    def queries(self, kind: str, plural: str) -> list[dict[str, str]]:
        """The query parameters (last value of each) of every ``kind`` request on ``plural``."""
        with self.lock:
            return [
                {k: v[-1] for k, v in r.query.items()}
                for r in self.requests
                if r.kind == kind and r.plural == plural
            ]

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
        with self.lock:
            obj = self.objects.get((plural, name))
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

    def apply(self, plural: str, name: str, patch: Any) -> tuple[int, dict[str, Any]]:
        """Server-side apply of ``webhooks[name=...].clientConfig.caBundle``, and nothing else.

        An unchanged object keeps its resourceVersion, as with the real server.
        """
        with self.lock:
            code, current = self.get(plural, name)
            if code != 200:
                return code, current
            updated = json.loads(json.dumps(current))
            hooks = {h["name"]: h for h in updated.get("webhooks", [])}
            for applied in patch.get("webhooks", []):
                hook = hooks.get(applied["name"])
                if hook is None:
                    message = f"webhooks[name={applied['name']}]: required fields missing"
                    return 422, status(422, "Invalid", message)
                hook["clientConfig"]["caBundle"] = applied["clientConfig"]["caBundle"]
            return 200, self.put(updated) if updated != current else current

    def list(self, plural: str, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
        _, _, api_version, kind = next(c for c in COLLECTIONS.values() if c[0] == plural)
        if plural in self.fail_lists:
            return 500, status(500, "InternalError", "Internal error occurred: list unavailable")
        with self.lock:
            items = [obj for (p, _), obj in sorted(self.objects.items()) if p == plural]
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
        with self.lock:
            if after < self.compacted[plural]:
                message = f"too old resource version: {after} ({self.compacted[plural]})"
                yield {"type": "ERROR", "object": status(410, "Expired", message)}
                return
        while self.running:
            with self.lock:
                ready = [
                    event
                    for rv, event in self.history[plural]
                    if rv > after and (bookmarks or event["type"] != "BOOKMARK")
                ]
                if not ready or self.silent_watches:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 and not self.silent_watches:
                        return
                    self.lock.wait(min(max(remaining, 0.05), 0.2))
                    continue
            for event in ready:
                after = int(event["object"]["metadata"]["resourceVersion"])
                yield event


def _created(obj: dict[str, Any]) -> None:
    """Fill in what the API server adds to a webhook configuration it creates.

    That is its defaults (each webhook's ``objectSelector``, each rule's ``scope``) and the
    metadata of an object Helm created (``managedFields`` included), so a client that reads
    them and writes them back is caught.
    """
    if "webhooks" not in obj:
        return
    meta = obj["metadata"]
    meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
    meta.setdefault("generation", 1)
    meta.setdefault(
        "managedFields",
        [
            {
                "manager": "helm",
                "operation": "Update",
                "apiVersion": obj["apiVersion"],
                "time": meta["creationTimestamp"],
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:webhooks": {}},
            }
        ],
    )
    for hook in obj["webhooks"]:
        hook.setdefault("objectSelector", {})
        for rule in hook.get("rules", []):
            rule.setdefault("scope", "*")


@contextlib.contextmanager
def running(*objects: dict[str, Any]) -> Iterator[FakeApiServer]:
    """A started fake holding ``objects``, stopped when the block ends however it ends."""
    fake = FakeApiServer().start()
    try:
        for obj in objects:
            fake.put(obj)
        yield fake
    finally:
        fake.stop()
