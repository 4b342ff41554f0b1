"""A small fake Kubernetes API server on 127.0.0.1 that speaks the API's real JSON shapes.

Why one fake: the cluster source and ``webhook-config --inject`` both go through the real
``kubernetes`` client (kubeconfig loading, bearer token, content types, query parameters),
and the only way to see what they put on the wire is to be the server. Why it lives in
``bench/``: the benchmarks serve their clusters with it (the audit's pods, the Namespaces
whose annotations change under a running server) and must not import the tests, while the
tests may use what the benchmarks use; the product package carries no test stand-ins.
The tests' ``tests/fakeapi.py`` adds the OpenReports CRD schema check (:attr:`schema`).

It serves RuntimeClasses (``node.k8s.io/v1``), Namespaces (``v1``), the two webhook
configurations (``admissionregistration.k8s.io/v1``) and the DRA objects
(``resource.k8s.io/v1``: DeviceClasses, ResourceSlices, DeviceTaintRules, and the
namespaced ResourceClaims and ResourceClaimTemplates; any of them can be made
:attr:`FakeApiServer.unserved`, answered 404 as by an older API server): paginated lists with
``metadata.resourceVersion``, chunked newline-delimited watch streams from a resourceVersion
(with BOOKMARK events and a 410 ``ERROR`` event for a compacted version), GETs, ``Status``
objects for errors and 401 for any token but :data:`TOKEN`. A PATCH is a server-side apply
of the fields a client may send (``webhooks[name=...].clientConfig.caBundle`` and
``.failurePolicy``); anything else in it is recorded and makes the test fail. Faults are
switches: lists or GETs answering 500, every request stalling (accepted, never answered),
bodies stalling after the headers, watches going silent or failing with an ``ERROR`` event;
:meth:`FakeApiServer.stop` drops every open connection and :meth:`FakeApiServer.start` brings
the server back on the same port.
The server binds port 0 itself and keeps the port while it is stopped (a bound socket that
does not listen: connections are refused, and no other server can take the port), so no
test picks a port that another process may take before it is used; :func:`refused_port` is
the same for a test that needs an address nothing answers on.

For ``audit`` it also serves Nodes, the namespaced workloads (Pods, PodTemplates,
ReplicationControllers, Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs,
CronJobs) listed across all namespaces or in one, in pages whose ``continue`` token is the
last key returned (so a page stays correct while objects come and go), filtered by an
equality ``labelSelector``; and the report kinds of OpenReports and wgpolicyk8s, which a
PATCH server-side applies (created when missing; refused with 422 when the body breaks the
OpenReports CRD schema under ``fieldValidation=Strict`` as the API server refuses it: 500 for
an undeclared field, 422 for the rest) and a
DELETE removes. :attr:`FakeApiServer.fault` decides per request whether to answer with an
error status or to drop the connection unanswered. Secrets are read, created (POST: 409
AlreadyExists when present) and replaced (PUT: 409 Conflict unless the body carries the stored
``resourceVersion``), as the managed certificates need.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

import yaml

ADMISSION = "admissionregistration.k8s.io"
DRA = "resource.k8s.io"

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
    "/api/v1/nodes": ("nodes", "", "v1", "Node"),
    f"/apis/{DRA}/v1/deviceclasses": ("deviceclasses", DRA, f"{DRA}/v1", "DeviceClass"),
    f"/apis/{DRA}/v1/resourceslices": ("resourceslices", DRA, f"{DRA}/v1", "ResourceSlice"),
    f"/apis/{DRA}/v1/devicetaintrules": (
        "devicetaintrules",
        DRA,
        f"{DRA}/v1",
        "DeviceTaintRule",
    ),
    "/apis/openreports.io/v1alpha1/clusterreports": (
        "clusterreports",
        "openreports.io",
        "openreports.io/v1alpha1",
        "ClusterReport",
    ),
    "/apis/wgpolicyk8s.io/v1alpha2/clusterpolicyreports": (
        "clusterpolicyreports",
        "wgpolicyk8s.io",
        "wgpolicyk8s.io/v1alpha2",
        "ClusterPolicyReport",
    ),
}

#: plural → (API path, group, apiVersion, kind) for the namespaced collections served, each
#: at ``<path>/<plural>`` (every namespace) and ``<path>/namespaces/<ns>/<plural>[/<name>]``.
NAMESPACED = {
    "pods": ("/api/v1", "", "v1", "Pod"),
    "podtemplates": ("/api/v1", "", "v1", "PodTemplate"),
    "replicationcontrollers": ("/api/v1", "", "v1", "ReplicationController"),
    "deployments": ("/apis/apps/v1", "apps", "apps/v1", "Deployment"),
    "replicasets": ("/apis/apps/v1", "apps", "apps/v1", "ReplicaSet"),
    "statefulsets": ("/apis/apps/v1", "apps", "apps/v1", "StatefulSet"),
    "daemonsets": ("/apis/apps/v1", "apps", "apps/v1", "DaemonSet"),
    "jobs": ("/apis/batch/v1", "batch", "batch/v1", "Job"),
    "cronjobs": ("/apis/batch/v1", "batch", "batch/v1", "CronJob"),
    "resourceclaims": (f"/apis/{DRA}/v1", DRA, f"{DRA}/v1", "ResourceClaim"),
    "resourceclaimtemplates": (f"/apis/{DRA}/v1", DRA, f"{DRA}/v1", "ResourceClaimTemplate"),
    "reports": (
        "/apis/openreports.io/v1alpha1",
        "openreports.io",
        "openreports.io/v1alpha1",
        "Report",
    ),
    "policyreports": (
        "/apis/wgpolicyk8s.io/v1alpha2",
        "wgpolicyk8s.io",
        "wgpolicyk8s.io/v1alpha2",
        "PolicyReport",
    ),
    "secrets": ("/api/v1", "", "v1", "Secret"),
}
#: Namespaced kinds whose changes watch streams carry (every namespace's).
WATCHED_NAMESPACED = frozenset({"resourceclaims", "resourceclaimtemplates"})
#: The report kinds: written with server-side apply and deleted by ``audit``.
REPORTS = frozenset({"reports", "clusterreports", "policyreports", "clusterpolicyreports"})
KINDS = {kind: plural for plural, _, _, kind in COLLECTIONS.values()}
KINDS.update((kind, plural) for plural, (_, _, _, kind) in NAMESPACED.items())


def info(plural: str) -> tuple[str, str, str, bool]:
    """(group, apiVersion, kind, namespaced) of a plural the fake serves."""
    if plural in NAMESPACED:
        _, group, api_version, kind = NAMESPACED[plural]
        return group, api_version, kind, True
    _, group, api_version, kind = next(c for c in COLLECTIONS.values() if c[0] == plural)
    return group, api_version, kind, False


def key_of(plural: str, name: str, namespace: str | None = None) -> str:
    """The key of an object in :attr:`FakeApiServer.objects`: ``name``, ``namespace/name``."""
    return f"{namespace}/{name}" if plural in NAMESPACED else name


def selected(obj: dict[str, Any], selector: str) -> bool:
    """Whether ``obj``'s labels satisfy an equality ``labelSelector`` (``a=b,c=d``)."""
    labels = obj.get("metadata", {}).get("labels") or {}
    for requirement in filter(None, selector.split(",")):
        label, _, value = requirement.partition("=")
        if labels.get(label.strip()) != value.strip().lstrip("="):
            return False
    return True


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


def _reserve(port: int = 0) -> socket.socket:
    """A socket bound to 127.0.0.1:``port`` (0: one the kernel picks) that does not listen.

    Why: while it is bound, connections to the port are refused and no other socket can
    bind it, except another of ours with ``SO_REUSEPORT``; :meth:`FakeApiServer.stop`
    binds one beside its listener before closing that, so the port is never free.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    return sock


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections until the block ends.

    Why not a port that was free a moment ago: another process may start listening on it
    before the test connects; a bound socket that does not listen holds the port.
    """
    with _reserve() as sock:
        yield int(sock.getsockname()[1])


class _Server(ThreadingHTTPServer):
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
        with self.conn_lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

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
        kind, plural, name, namespace = fake.route(url.path)
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
        #: Resources answered with 404 as an API server that does not serve them answers.
        self.unserved: set[str] = set()
        #: What ``GET /version`` answers as ``gitVersion``; ``None``: 404.
        self.version: str | None = "v1.37.2"
        #: The API version DeviceTaintRules are served at (``v1alpha3`` as 1.34 with its
        #: gate on); the other versions answer 404, as a real API server does.
        self.device_taint_rule_version = "v1"
        self.stall = threading.Event()
        self.released = threading.Event()
        self.silent_watches = False
        self.watch_error: dict[str, Any] | None = None
        self.stall_bodies = False
        #: Per request, after it is recorded: ``None`` to serve it, an HTTP status to answer
        #: with instead (a ``Status`` body; a 410 carries a fresh ``continue`` token), or
        #: ``"drop"`` to close the connection without an answer.
        self.fault: Callable[[Request], int | str | None] | None = None
        #: Called with the plural before every create or replace is decided (outside the
        #: lock): where a test lets another writer change the object in between.
        self.before_write: Callable[[str], None] | None = None
        #: With ``fieldValidation=Strict``, the problems the schema of ``kind`` finds in an
        #: applied body (none: accepted); ``None`` checks nothing.
        self.schema: Callable[[str, Any], list[str]] | None = None
        #: With ``fieldValidation=Strict``, the fields of an applied report its schema does
        #: not declare: a real API server refuses them first, with HTTP 500.
        self.undeclared: Callable[[str, Any], list[str]] | None = None
        self.port = 0
        self.running = False
        self._server: _Server | None = None
        #: While stopped, the bound socket that holds the port for the next :meth:`start`.
        self._reserved: socket.socket | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeApiServer:
        """Listen (again on the same port after a stop) and serve in a daemon thread.

        Why the port is bound here, and 0 the first time: the test reads :attr:`port` from
        the server that holds it, never from a port picked before something listens on it.
        """
        self.released.clear()
        sock, self._reserved = self._reserved or _reserve(), None
        self._server = _Server(sock, self)
        self.port = int(sock.getsockname()[1])
        self.running = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and drop every open connection, watches and stalled ones included.

        The port stays held (connections to it are refused) for a later :meth:`start`;
        :meth:`close` gives it up.
        """
        if self._server is None:
            return
        self.running = False
        self.released.set()
        with self.lock:
            self.lock.notify_all()
        self._server.shutdown()
        self._server.drop_connections()
        self._reserved = _reserve(self.port)  # beside the listener, so the port is never free
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self._server = None

    def close(self) -> None:
        """Stop, and give up the port; why apart from :meth:`stop`: a stopped fake may start
        again on its port, a closed one is done."""
        self.stop()
        if self._reserved is not None:
            self._reserved.close()
            self._reserved = None

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
        key = key_of(plural, name, obj["metadata"].get("namespace"))
        with self.lock:
            self.rv += 1
            stored = json.loads(json.dumps(obj))
            stored["metadata"]["resourceVersion"] = str(self.rv)
            stored["metadata"].setdefault("uid", f"uid-{plural}-{key.replace('/', '-')}")
            if (plural, key) not in self.objects:
                _created(stored)
            kind = "MODIFIED" if (plural, key) in self.objects else "ADDED"
            self.objects[plural, key] = stored
            # Of the namespaced kinds only the claims are watched (across all namespaces).
            if announce and (plural not in NAMESPACED or plural in WATCHED_NAMESPACED):
                self.history[plural].append((self.rv, {"type": kind, "object": stored}))
            self.lock.notify_all()
        return stored

    def load(self, objects: list[dict[str, Any]]) -> None:
        """Store many objects at once, unannounced and uncopied (the benchmark's 20,000 pods).

        Why not :meth:`put`: copying and announcing each object costs the benchmark more
        time to set up than the audit takes to run. The objects must not be changed later.
        """
        with self.lock:
            for obj in objects:
                meta = obj["metadata"]
                self.rv += 1
                meta["resourceVersion"] = str(self.rv)
                plural = KINDS[obj["kind"]]
                key = key_of(plural, meta["name"], meta.get("namespace"))
                meta.setdefault("uid", f"uid-{plural}-{key.replace('/', '-')}")
                self.objects[plural, key] = obj
            self.lock.notify_all()

    def delete(self, plural: str, name: str, namespace: str | None = None) -> None:
        """Delete an object (``namespace`` for a namespaced one) and announce it to watchers."""
        with self.lock:
            obj = self.objects.pop((plural, key_of(plural, name, namespace)))
            self.rv += 1
            if plural not in NAMESPACED:
                gone = json.loads(json.dumps(obj))
                gone["metadata"]["resourceVersion"] = str(self.rv)
                self.history[plural].append((self.rv, {"type": "DELETED", "object": gone}))
            self.lock.notify_all()

    def stored(self, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Copies of the stored objects of ``plural`` (in ``namespace``), in key order."""
        with self.lock:
            found = [
                obj
                for (p, key), obj in sorted(self.objects.items())
                if p == plural and (namespace is None or key.startswith(namespace + "/"))
            ]
            return json.loads(json.dumps(found))  # type: ignore[no-any-return]

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

    def route(self, path: str) -> tuple[str, str | None, str | None, str | None]:
        """(list|get, plural, name, namespace) for a request path; plural None when unknown."""
        rules = f"/apis/{DRA}/{self.device_taint_rule_version}/devicetaintrules"
        canonical = f"/apis/{DRA}/v1/devicetaintrules"
        if rules != canonical:
            if path.startswith(canonical):
                return "get", None, None, None
            if path.startswith(rules):
                path = canonical + path[len(rules) :]
        for plural, (base, *_rest) in NAMESPACED.items():
            if path == f"{base}/{plural}":
                return "list", plural, None, None
            if path.startswith(f"{base}/namespaces/"):
                parts = path[len(f"{base}/namespaces/") :].split("/")
                if len(parts) in (2, 3) and parts[1] == plural and all(parts):
                    if len(parts) == 2:
                        return "list", plural, None, parts[0]
                    return "get", plural, parts[2], parts[0]
        for prefix, (plural, *_rest) in COLLECTIONS.items():
            if path == prefix:
                return "list", plural, None, None
            if path.startswith(prefix + "/") and "/" not in path[len(prefix) + 1 :]:
                return "get", plural, path[len(prefix) + 1 :], None
        return "get", None, None, None

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

    def get(
        self, plural: str, name: str, namespace: str | None = None
    ) -> tuple[int, dict[str, Any]]:
        group = info(plural)[0]
        resource = f"{plural}.{group}" if group else plural
        if name in self.fail_gets:
            return 500, status(
                500,
                "InternalError",
                "Internal error occurred: etcdserver: request timed out",
                causes=[{"message": "etcdserver: request timed out"}],
            )
        with self.lock:
            obj = self.objects.get((plural, key_of(plural, name, namespace)))
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
        """Server-side apply of ``webhooks[name=...]``: ``clientConfig.caBundle`` and
        ``failurePolicy``, and nothing else.

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
                if "clientConfig" in applied:
                    hook["clientConfig"]["caBundle"] = applied["clientConfig"]["caBundle"]
                if "failurePolicy" in applied:
                    hook["failurePolicy"] = applied["failurePolicy"]
            return 200, self.put(updated) if updated != current else current

    def list(
        self, plural: str, query: dict[str, str], namespace: str | None = None
    ) -> tuple[int, dict[str, Any]]:
        _, api_version, kind, _ = info(plural)
        if plural in self.fail_lists:
            return 500, status(500, "InternalError", "Internal error occurred: list unavailable")
        after = query.get("continue") or ""
        prefix = f"{namespace}/" if namespace else ""
        selector = query.get("labelSelector") or ""
        with self.lock:
            keyed = sorted(
                (key, obj)
                for (p, key), obj in self.objects.items()
                if p == plural and key > after and key.startswith(prefix)
            )
            rv = self.rv
        items = [(key, obj) for key, obj in keyed if not selector or selected(obj, selector)]
        limit = int(query.get("limit") or 0) or len(items) or 1
        page = [obj for _, obj in items[:limit]]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if limit < len(items):
            meta["continue"] = items[limit - 1][0]
            meta["remainingItemCount"] = len(items) - limit
        # List items carry no kind or apiVersion, exactly as the API server sends them.
        bare = [{k: v for k, v in item.items() if k not in ("kind", "apiVersion")} for item in page]
        return 200, {
            "kind": f"{kind}List",
            "apiVersion": api_version,
            "metadata": meta,
            "items": bare,
        }

    def apply_object(
        self,
        plural: str,
        name: str,
        namespace: str | None,
        body: Any,
        query: dict[str, str],
    ) -> tuple[int, dict[str, Any]]:
        """Server-side apply of a whole report: created when missing, replaced otherwise.

        The applied body is checked as the API server checks it: kind and apiVersion of the
        collection, the name (and namespace) of the URL, and, with
        ``fieldValidation=Strict``, :attr:`undeclared` (a field the schema does not declare
        is HTTP 500 "failed to create typed patch object": a real API server builds the typed
        patch first) and then :attr:`schema` (422 with every problem). The
        applier's fields replace the previous ones (one manager, so the whole object); an
        unchanged object keeps its resourceVersion.
        """
        group, api_version, kind, namespaced = info(plural)
        meta = body.get("metadata") if isinstance(body, dict) else None
        if not isinstance(meta, dict) or body.get("kind") != kind:
            return 400, status(400, "BadRequest", f"the body is not a {kind}")
        if body.get("apiVersion") != api_version:
            return 400, status(400, "BadRequest", f"apiVersion must be {api_version}")
        if meta.get("name") != name or (
            namespaced and meta.get("namespace", namespace) != namespace
        ):
            message = "the name or namespace of the object does not match the URL"
            return 400, status(400, "BadRequest", message)
        strict = query.get("fieldValidation") == "Strict"
        extra = self.undeclared(kind, body) if strict and self.undeclared is not None else []
        if extra:
            where = f"{namespace}/{name}" if namespaced else name
            message = (
                f"failed to create typed patch object ({where}; {api_version}, "
                f"Kind={kind}): {extra[0]}: field not declared in schema"
            )
            return 500, status(500, "InternalError", message)
        if strict and self.schema is not None:
            problems = self.schema(kind, body)
            if problems:
                message = f'{kind}.{group} "{name}" is invalid: ' + "; ".join(problems)
                return 422, status(422, "Invalid", message)
        with self.lock:
            current = self.objects.get((plural, key_of(plural, name, namespace)))
            applied = json.loads(json.dumps(body))
            if namespaced:
                applied["metadata"].setdefault("namespace", namespace)
            applied["metadata"]["managedFields"] = [
                {"manager": query["fieldManager"], "operation": "Apply", "apiVersion": api_version}
            ]
            if current is not None:
                for server_set in ("uid", "creationTimestamp", "resourceVersion"):
                    if server_set in current["metadata"]:
                        applied["metadata"][server_set] = current["metadata"][server_set]
                if applied == current:
                    return 200, current
            return (200 if current is not None else 201), self.put(applied)

    def create(self, plural: str, namespace: str | None, body: Any) -> tuple[int, dict[str, Any]]:
        """POST: store a new object (201), or 409 AlreadyExists, as the API server answers.

        :attr:`before_write` runs first, so a test can let another writer in between a
        client's read and its write.
        """
        self._before_write(plural)
        name = (body or {}).get("metadata", {}).get("name", "")
        group = info(plural)[0]
        resource = f"{plural}.{group}" if group else plural
        with self.lock:
            if (plural, key_of(plural, name, namespace)) in self.objects:
                message = f'{resource} "{name}" already exists'
                return 409, status(409, "AlreadyExists", message, name=name, kind=plural)
            obj = json.loads(json.dumps(body))
            obj["metadata"].setdefault("namespace", namespace)
            return 201, self.put(obj)

    def replace(
        self, plural: str, name: str, namespace: str | None, body: Any
    ) -> tuple[int, dict[str, Any]]:
        """PUT: replace an object whose ``metadata.resourceVersion`` is the stored one; 409
        Conflict otherwise (another writer came first), 404 when there is none."""
        self._before_write(plural)
        group = info(plural)[0]
        resource = f"{plural}.{group}" if group else plural
        with self.lock:
            current = self.objects.get((plural, key_of(plural, name, namespace)))
            if current is None:
                return 404, status(404, "NotFound", f'{resource} "{name}" not found')
            given = (body or {}).get("metadata", {}).get("resourceVersion")
            if given != current["metadata"]["resourceVersion"]:
                message = (
                    f'Operation cannot be fulfilled on {resource} "{name}": the object has '
                    "been modified; please apply your changes to the latest version and try again"
                )
                return 409, status(409, "Conflict", message, name=name, kind=plural)
            obj = json.loads(json.dumps(body))
            obj["metadata"]["uid"] = current["metadata"].get("uid")
            return 200, self.put(obj)

    def _before_write(self, plural: str) -> None:
        if self.before_write is not None:
            self.before_write(plural)

    def remove(self, plural: str, name: str, namespace: str | None) -> tuple[int, dict[str, Any]]:
        """DELETE: a ``Success`` Status, or 404 when there is no such object."""
        code, found = self.get(plural, name, namespace)
        if code != 200:
            return code, found
        self.delete(plural, name, namespace)
        done = status(200, "", "")
        done.update(status="Success", details={"name": name, "kind": plural})
        del done["message"], done["reason"]
        return 200, done

    @staticmethod
    def fault_status(code: int, token: str) -> dict[str, Any]:
        """The Status a faulted request answers with; a 410 offers a fresh ``continue``."""
        if code == 410:
            body = status(410, "Expired", "The provided continue parameter is too old")
            body["metadata"] = {"continue": token}
            return body
        if code >= 500:
            return status(
                code, "InternalError", "Internal error occurred: etcdserver: leader changed"
            )
        return status(code, "Forbidden" if code == 403 else "Failure", f"refused ({code})")

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
def running(
    *objects: dict[str, Any], server: type[FakeApiServer] = FakeApiServer
) -> Iterator[FakeApiServer]:
    """A started fake (a ``server``) holding ``objects``, stopped when the block ends however
    it ends."""
    fake = server().start()
    try:
        for obj in objects:
            fake.put(obj)
        yield fake
    finally:
        fake.close()
