"""RuntimeClasses and Namespaces from the API server: a watch-backed cache and live GETs.

Why behind the same small interface as the files (:class:`~webhooks.core.plugin.ClusterView`):
plugins stay pure and the CLI answers exactly as the server would, given the same objects.

Serving, :func:`open_cluster` starts an :class:`ApiCluster`: one list+watch cache per resource, kept
current by a daemon thread, and a live GET when the cache misses (upstream's admission
plugins do the same, since a just-created object may not have reached the cache). The
``kubernetes`` client is imported only by :func:`open_cluster` and what it starts, so the
offline CLI and a server with ``source: none`` never load it. Objects stay plain dicts decoded
from the API's JSON: client models are slow and drop fields they do not know.

Failure behaviour, chosen so a review never hangs on the API server:

* A cache hit answers from memory, also while the API server is unreachable (the cache
  keeps its last contents; RuntimeClasses and Namespaces change rarely, and stale beats
  failing every review).
* A miss asks the API server, bounded by ``cluster.lookupTimeoutSeconds`` for the whole
  request, including a server that accepts the connection and never answers. HTTP 404 means
  the object does not exist (``None``). A timeout, a refused or broken connection, or any
  other HTTP error raises :class:`~webhooks.core.plugin.LookupFailure` with a one-line
  reason, and the chain answers that review with an ``InternalError`` status (code 500
  inside HTTP 200): the operation is refused with that reason, as the in-tree plugins
  refuse it when their own lookup fails (``failurePolicy`` only covers a webhook that
  cannot be reached).
* Readiness waits for every cache's first list; once synced, a server is ready even when the
  API server later goes away, since hits are still answered and misses fail fast.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import orjson

from webhooks.cluster.failures import describe as _describe
from webhooks.cluster.failures import http_status as _http_status
from webhooks.cluster.failures import status_message as _status_message
from webhooks.core.config import ClusterSettings
from webhooks.core.plugin import LookupFailure

# --------------------------------------------------------------------------------------------
# The API server source
# --------------------------------------------------------------------------------------------

#: Where the kubelet mounts the service-account token in every pod that has one.
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"

Source = Literal["in-cluster", "kubeconfig", "none"]


class ClusterError(ValueError):
    """The configured cluster source cannot be set up (no kubeconfig, not in a pod)."""


def resolve_source(
    settings: ClusterSettings,
    environ: Mapping[str, str] | None = None,
    token_path: str = SERVICE_ACCOUNT_TOKEN,
) -> Source:
    """The source ``settings`` selects, with ``auto`` decided from the environment.

    Why ``auto`` needs both the service host and the token: a laptop may export
    ``KUBERNETES_SERVICE_HOST`` for other tools, and a pod with
    ``automountServiceAccountToken: false`` has the variable but no credentials; in both
    cases asking a cluster would only turn every lookup into an error.
    """
    if settings.source != "auto":
        return settings.source
    env = os.environ if environ is None else environ
    if env.get("KUBERNETES_SERVICE_HOST") and os.path.isfile(token_path):
        return "in-cluster"
    return "none"


def client_configuration(settings: ClusterSettings, source: Source) -> Any:
    """A ``kubernetes.client.Configuration`` for ``source``; :class:`ClusterError` if unusable.

    Why retries are switched off: urllib3 would otherwise retry a timed-out GET three times,
    turning the lookup bound into four times itself; informers retry with their own backoff.
    """
    return load_configuration(source, settings.kubeconfig, settings.context)


def load_configuration(source: Source, kubeconfig: str = "", context: str = "") -> Any:
    """A fresh ``kubernetes.client.Configuration``: in-cluster, or from a kubeconfig file.

    An empty ``kubeconfig`` means kubectl's default (``$KUBECONFIG``, else
    ``~/.kube/config``) and an empty ``context`` its current context. Why urllib3's retries
    are off: every caller bounds and retries its own requests, and hidden retries would
    multiply those bounds. :class:`ClusterError` says in one line what is unusable.
    """
    from kubernetes import client
    from kubernetes import config as loaders

    config: Any = loaders  # typed loosely: the loaders' annotations vary between releases
    conf = type.__call__(client.Configuration)  # a fresh one, never the process-wide default
    try:
        if source == "in-cluster":
            config.load_incluster_config(client_configuration=conf)
        else:
            config.load_kube_config(
                # Read now: the client reads $KUBECONFIG once, when it is first imported.
                config_file=kubeconfig or os.environ.get("KUBECONFIG") or None,
                context=context or None,
                client_configuration=conf,
                persist_config=False,
            )
    except Exception as exc:  # the loaders raise ConfigException, OSError, YAML and key errors
        if source == "in-cluster":
            where = "in-cluster config"
        else:
            where = f"kubeconfig {kubeconfig or os.environ.get('KUBECONFIG') or '~/.kube/config'}"
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ClusterError(f"{where}: {detail}") from None
    conf.retries = False
    return conf


def check_source(settings: ClusterSettings) -> None:
    """Raise :class:`ClusterError` when the source ``settings`` select cannot be configured.

    Why: ``serve`` and a SIGHUP reload check before workers start, because a worker that
    cannot open its source fails to boot, and failing workers take the server down.
    """
    source = resolve_source(settings)
    if source != "none":
        client_configuration(settings, source)


@dataclass(frozen=True, slots=True)
class Timing:
    """Timeouts and backoff of an :class:`ApiCluster`; tests shrink them, production keeps these.

    ``watch_seconds`` is the server-side timeout asked of each watch (jittered up to twice
    that, so replicas do not re-watch in step); the client gives up on a silent stream
    ``watch_slack`` seconds later, which is how a dead server or a black-holed connection is
    noticed. Reconnects back off exponentially from ``backoff_base`` to ``backoff_cap``
    with jitter.
    """

    lookup: float = 2.0
    connect: float = 5.0
    list_read: float = 60.0
    watch_seconds: int = 60
    watch_slack: float = 15.0
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    page_size: int = 500


@dataclass(frozen=True, slots=True)
class Resource:
    """A cluster-scoped resource the webhooks consult, and the typed client calls for it."""

    plural: str
    kind: str
    api_version: str
    api_class: str
    list_call: str
    read_call: str


RUNTIME_CLASSES = Resource(
    "runtimeclasses",
    "RuntimeClass",
    "node.k8s.io/v1",
    "NodeV1Api",
    "list_runtime_class",
    "read_runtime_class",
)
NAMESPACES = Resource(
    "namespaces", "Namespace", "v1", "CoreV1Api", "list_namespace", "read_namespace"
)


class _Expired(Exception):
    """The resource version we watch from is gone (410 Gone): relist."""


class _Broken(Exception):
    """A list or watch failed; the message is the one-line reason kept for operators."""


def _with_kind(obj: dict[str, Any], resource: Resource) -> dict[str, Any]:
    # List items carry no kind/apiVersion on the wire; fill them in so objects from the
    # list, the watch and a live GET look alike to plugins.
    obj.setdefault("kind", resource.kind)
    obj.setdefault("apiVersion", resource.api_version)
    return obj


def _name(obj: Any) -> str | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else None


def _resource_version(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return rv if isinstance(rv, str) else ""


class Informer:
    """A list+watch cache of one resource, kept current by a daemon thread.

    Why a thread per resource and not per request: reviews must be answered from memory in
    microseconds, and the API server is designed to be watched, not polled. The thread
    lists, then watches from the list's resourceVersion, applies ADDED/MODIFIED/DELETED
    and BOOKMARK events, re-watches when the server ends a watch at its timeout, relists
    at once on 410 Gone, and relists after a capped, jittered exponential backoff when a
    request fails or a stream breaks. The cache keeps its last contents while the API
    server is away: stale answers beat none for objects that change this rarely.
    """

    def __init__(self, resource: Resource, api_client: Any, timing: Timing) -> None:
        from kubernetes import client

        self.resource = resource
        self.timing = timing
        self._api_client = api_client
        self._list = getattr(getattr(client, resource.api_class)(api_client), resource.list_call)
        self._items: dict[str, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._stream: Any = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.resource_version = ""
        self._progress = False
        self.watching = False
        self.last_error = ""
        self.counts: dict[str, int] = {
            "list_ok": 0,
            "list_error": 0,
            "watch_ended": 0,
            "watch_expired": 0,
            "watch_error": 0,
        }

    # -- reading ---------------------------------------------------------------------------

    def get(self, name: str) -> dict[str, Any] | None:
        """The cached object called ``name``, or ``None`` when the cache does not hold it.

        Why no live GET here: the informer only mirrors the server; :class:`ApiCluster`
        decides when a miss is worth a request. Objects are shared: treat them as read-only.
        """
        return self._items.get(name)

    def names(self) -> list[str]:
        """Names currently cached, sorted. Why: tests and debugging look at the whole cache."""
        return sorted(self._items)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def synced(self) -> bool:
        """Whether the first list has completed. It stays true afterwards: stale beats empty."""
        return self._synced.is_set()

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the list+watch thread. A daemon, so it never holds the process open."""
        self._thread = threading.Thread(
            target=self._run, name=f"watch-{self.resource.plural}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the thread and close its connections.

        Why the open stream is shut down first: the thread is most likely blocked reading a
        quiet watch, which could otherwise take until the server's timeout to notice.
        """
        self._stop.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            _shutdown(stream)
        if self._thread is not None:
            self._thread.join(timeout)
        self._api_client.close()

    @property
    def alive(self) -> bool:
        """Whether the thread is still running. Why: shutdown and tests check it ended."""
        return self._thread is not None and self._thread.is_alive()

    # -- the loop --------------------------------------------------------------------------

    def _run(self) -> None:
        failures = 0
        relist = True
        while not self._stop.is_set():
            self._progress = False
            try:
                if relist:
                    self._relist()
                    relist = False
                self._watch()
                failures = 0  # the server ended the watch at its timeout: all is well
                continue
            except _Expired:
                self.counts["watch_expired"] += 1
                relist = True
                if self._progress:  # an old watch expiring is routine: relist at once
                    failures = 0
                    continue
            except Exception as exc:
                if self._stop.is_set():
                    break
                self.last_error = str(exc) if isinstance(exc, _Broken) else repr(exc)
                relist = True
            # A stream that delivered events was working: restart the backoff from the base.
            failures = 1 if self._progress else failures + 1
            delay = min(self.timing.backoff_cap, self.timing.backoff_base * 2 ** (failures - 1))
            self._stop.wait(delay * random.uniform(0.5, 1.0))

    def _relist(self) -> None:
        items: dict[str, dict[str, Any]] = {}
        token: str | None = None
        timeout = (self.timing.connect, self.timing.list_read)
        while True:
            try:
                response = self._list(
                    limit=self.timing.page_size,
                    _continue=token,
                    _preload_content=False,
                    _request_timeout=timeout,
                )
                try:
                    body = orjson.loads(response.data)
                finally:
                    response.release_conn()
            except Exception as exc:
                self.counts["list_error"] += 1
                if token is not None and _http_status(exc) == 410:
                    items, token = {}, None  # the continue token expired: start over
                    continue
                reason = _describe(exc, timeout[1])
                raise _Broken(f"list {self.resource.plural}: {reason}") from exc
            if not isinstance(body, dict) or not isinstance(body.get("items"), list):
                self.counts["list_error"] += 1
                raise _Broken(f"list {self.resource.plural}: not a {self.resource.kind}List")
            for item in body["items"]:
                name = _name(item)
                if name is not None:
                    items[name] = _with_kind(item, self.resource)
            meta = body.get("metadata") or {}
            token = meta.get("continue") or None
            if token is None:
                break
        self._items = items  # one assignment: readers see the old or the new list, whole
        self.resource_version = str(meta.get("resourceVersion") or "")
        self.counts["list_ok"] += 1
        self.last_error = ""
        self._synced.set()

    def _watch(self) -> None:
        """Watch from :attr:`resource_version` until the server ends the stream.

        Returns when the server ends the watch at its timeout (the caller re-watches from the
        last version, no relist); raises :class:`_Expired` on 410 and :class:`_Broken` on
        any other failure, including a stream silent for longer than the server timeout.
        """
        seconds = random.randint(self.timing.watch_seconds, 2 * self.timing.watch_seconds)
        read = seconds + self.timing.watch_slack
        try:
            stream = self._list(
                watch=True,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=seconds,
                _preload_content=False,
                _request_timeout=(self.timing.connect, read),
            )
        except Exception as exc:
            if _http_status(exc) == 410:
                raise _Expired from exc
            self.counts["watch_error"] += 1
            reason = _describe(exc, self.timing.connect)
            raise _Broken(f"watch {self.resource.plural}: {reason}") from exc
        with self._lock:
            self._stream = stream
        if self._stop.is_set():
            _shutdown(stream)
        self.watching = True
        try:
            for line in _lines(stream):
                self._apply(line)
        except (_Expired, _Broken):
            raise
        except Exception as exc:
            self.counts["watch_error"] += 1
            raise _Broken(f"watch {self.resource.plural}: {_describe(exc, read)}") from exc
        finally:
            self.watching = False
            with self._lock:
                self._stream = None
            stream.release_conn()
        self.counts["watch_ended"] += 1

    def _apply(self, line: bytes) -> None:
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            self.counts["watch_error"] += 1
            raise _Broken(f"watch {self.resource.plural}: undecodable event") from None
        kind = event.get("type") if isinstance(event, dict) else None
        obj = event.get("object") if isinstance(event, dict) else None
        if kind == "ERROR":
            if isinstance(obj, dict) and obj.get("code") == 410:
                raise _Expired
            self.counts["watch_error"] += 1
            message = _status_message(orjson.dumps(obj))
            raise _Broken(f"watch {self.resource.plural}: error event: {message}")
        rv = _resource_version(obj)
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            name = _name(obj)
            if name is None or not isinstance(obj, dict):
                return
            if kind == "DELETED":
                self._items.pop(name, None)
            else:
                self._items[name] = _with_kind(obj, self.resource)
        if rv and kind in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
            self.resource_version = rv
            self._progress = True


def _lines(stream: Any) -> Iterator[bytes]:
    """Newline-delimited events from a chunked watch response, as they arrive."""
    pending = b""
    for chunk in stream.stream(None, decode_content=True):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def _shutdown(response: Any) -> None:
    """Break a blocked read on ``response`` from another thread (urllib3 ≥ 2.3 can)."""
    try:
        if hasattr(response, "shutdown"):
            response.shutdown()
        else:  # pragma: no cover - older urllib3: the read timeout ends the stream instead
            response.close()
    except Exception:  # pragma: no cover - the stream is being torn down anyway
        pass


class ApiCluster:
    """A :class:`~webhooks.core.plugin.ClusterView` over the API server.

    Lookups read the informer caches; a miss asks the API server with a live GET (as
    upstream's admission plugins do, because a just-created object may not have reached the
    cache yet), bounded by ``timing.lookup`` seconds. Not found is ``None``; anything that
    prevents an answer raises :class:`~webhooks.core.plugin.LookupFailure`.
    """

    def __init__(self, configuration: Any, timing: Timing | None = None) -> None:
        from kubernetes import client

        self.timing = timing or Timing()
        self.informers: dict[str, Informer] = {
            r.plural: Informer(r, client.ApiClient(configuration), self.timing)
            for r in (RUNTIME_CLASSES, NAMESPACES)
        }
        self._lookup_client: Any = client.ApiClient(configuration)
        self._reads: dict[str, Callable[..., Any]] = {}
        for r in (RUNTIME_CLASSES, NAMESPACES):
            api = getattr(client, r.api_class)(self._lookup_client)
            self._reads[r.plural] = getattr(api, r.read_call)
        self._counts_lock = threading.Lock()
        self._lookups: dict[tuple[str, str], int] = {}

    def start(self) -> ApiCluster:
        """Start every informer and return ``self``.

        Why separate from construction: a gunicorn worker must start threads after fork,
        never in the master.
        """
        for informer in self.informers.values():
            informer.start()
        return self

    def stop(self) -> None:
        """Stop the informers and close connections.

        Why lookups keep working afterwards: a worker may still be finishing reviews while
        it shuts down; they are answered from the last cache contents.
        """
        for informer in self.informers.values():
            informer.stop()
        self._lookup_client.close()

    def synced(self) -> bool:
        """Whether every informer has completed its first list.

        Why: it is the readiness condition; a pod with empty caches would send every
        lookup to the API server.
        """
        return all(i.synced for i in self.informers.values())

    def unsynced(self) -> list[str]:
        """The resources whose first list has not completed yet. Why: readiness names them."""
        return [name for name, i in self.informers.items() if not i.synced]

    def runtime_class(self, name: str) -> dict[str, Any] | None:
        """The RuntimeClass called ``name``: cache, then a bounded live GET.

        Why the GET: a RuntimeClass created a moment before its first pod may not have
        reached the cache yet (upstream's RuntimeClass plugin does the same).
        """
        return self._lookup(RUNTIME_CLASSES, name)

    def namespace(self, name: str) -> dict[str, Any] | None:
        """The Namespace called ``name``: cache, then a bounded live GET.

        Why the GET: pods often arrive right after their namespace is created, before the
        watch has delivered it.
        """
        return self._lookup(NAMESPACES, name)

    def lookup_counts(self) -> dict[tuple[str, str], int]:
        """Lookups so far by (resource, result).

        Why a copy: metrics read it from another thread while reviews keep counting.
        """
        with self._counts_lock:
            return dict(self._lookups)

    def _count(self, resource: Resource, result: str) -> None:
        key = (resource.plural, result)
        with self._counts_lock:
            self._lookups[key] = self._lookups.get(key, 0) + 1

    def _lookup(self, resource: Resource, name: str) -> dict[str, Any] | None:
        if not name:  # no object has an empty name, and GET .../<empty> would be a list
            return None
        obj = self.informers[resource.plural].get(name)
        if obj is not None:
            self._count(resource, "hit")
            return obj
        try:
            obj = self._get(resource, name)
        except LookupFailure:
            self._count(resource, "error")
            raise
        self._count(resource, "found" if obj is not None else "not_found")
        return obj

    def _get(self, resource: Resource, name: str) -> dict[str, Any] | None:
        bound = self.timing.lookup
        deadline = time.monotonic() + bound
        what = f"get {resource.plural}/{name}"
        try:
            response = self._reads[resource.plural](
                name, _preload_content=False, _request_timeout=bound
            )
        except Exception as exc:
            if _http_status(exc) == 404:
                return None
            raise LookupFailure(f"{what}: {_describe(exc, bound)}") from None
        try:
            body = _read_within(response, deadline)
        except Exception as exc:
            raise LookupFailure(f"{what}: {_describe(exc, bound)}") from None
        finally:
            response.release_conn()
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise LookupFailure(f"{what}: the answer is not JSON") from None
        if _name(obj) != name:
            raise LookupFailure(f"{what}: the answer is not a {resource.kind}")
        return _with_kind(obj, resource)


def _read_within(response: Any, deadline: float) -> bytes:
    """The response body, failing once ``deadline`` passes even if bytes keep trickling.

    Why: the socket timeout bounds each read, not their sum, so a server that answers
    headers and then stalls or dribbles the body could otherwise hold a review past the
    lookup bound.
    """
    sock = getattr(getattr(response, "connection", None), "sock", None)
    parts: list[bytes] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            response.close()
            raise TimeoutError("body not received in time")
        if sock is not None:
            sock.settimeout(remaining)
        chunk = response.read(65536)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)


def open_cluster(
    settings: ClusterSettings,
    environ: Mapping[str, str] | None = None,
    timing: Timing | None = None,
) -> ApiCluster | None:
    """Start the API source ``settings`` selects, or return ``None`` when it selects none.

    Why a function and not import-time setup: the ``kubernetes`` package is imported here
    and only here, so the offline CLI and a server without a cluster never load it, and a
    gunicorn worker calls this after fork so its threads live in the worker.
    """
    source = resolve_source(settings, environ)
    if source == "none":
        return None
    configuration = client_configuration(settings, source)
    base = timing or Timing()
    return ApiCluster(configuration, replace(base, lookup=settings.lookup_timeout_seconds)).start()
