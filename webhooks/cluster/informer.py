"""The watch-backed cache of one resource (an informer), kept current by a daemon thread.

Why apart from the lookups: the cache is the part that runs on its own, with its own
timeouts, backoff and failure states; :class:`~webhooks.cluster.api.ApiCluster` only reads
it and decides when a miss is worth a live GET. The cache keeps its last contents while the
API server is away (RuntimeClasses and Namespaces change rarely, and stale beats failing
every review), and counts as synced from its first complete list onwards.

Namespaced resources (ResourceClaims, ResourceClaimTemplates) are listed and watched across
all namespaces and keyed ``namespace/name``. A resource may keep only what the webhooks
read of each object (:attr:`Resource.keep`): a cluster has one ResourceClaim per pod that
uses DRA, and their status (allocation results, reservations, managed fields) is most of
their size. A resource the API server does not serve (HTTP 404 on the list: a cluster
older than ``resource.k8s.io/v1``) counts as synced and empty, and is listed again after
the longest backoff: no object of it can exist, so no review should wait for it.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from webhooks.cluster.failures import describe as _describe
from webhooks.cluster.failures import http_status as _http_status
from webhooks.cluster.failures import status_message as _status_message


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
    """A resource the webhooks consult, and the typed client calls for it.

    ``list_call`` lists across all namespaces for a namespaced resource; ``read_call``
    then takes the namespace too. ``store``, when set, turns each object into the form the
    cache keeps, so the cache holds what plugins read only, and ``load`` turns that form
    (with its key) back into an object when one is read; a live GET answers the same way.
    """

    plural: str
    kind: str
    api_version: str
    api_class: str
    list_call: str
    read_call: str
    namespaced: bool = False
    store: Callable[[dict[str, Any]], Any] | None = None
    load: Callable[[str, Any], dict[str, Any]] | None = None


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


def _string(value: Any) -> Any:
    # Names repeat across thousands of claims (the same few classes): share one copy.
    return sys.intern(value) if isinstance(value, str) else value


def _class_names(spec: Any) -> tuple[str, ...]:
    """The device class names of a ResourceClaimSpec's requests, alternatives included."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    raw = devices.get("requests") if isinstance(devices, dict) else None
    names: list[str] = []
    for request in raw if isinstance(raw, list) else []:
        if not isinstance(request, dict):
            continue
        exactly = request.get("exactly")
        found = [exactly] if isinstance(exactly, dict) else [request]  # v1beta1: flat
        first = request.get("firstAvailable")
        if isinstance(first, list):
            found = [sub for sub in first if isinstance(sub, dict)]
        names.extend(n for f in found if isinstance(n := f.get("deviceClassName"), str))
    return tuple(_string(n) for n in dict.fromkeys(names))


def store_claim(obj: dict[str, Any]) -> tuple[str, ...]:
    """A ResourceClaim as the cache stores it: the device classes its requests name.

    Why so little: a cluster has one claim per pod that uses DRA, and the plugins read
    nothing else of it (how many devices, selectors and status are the scheduler's).
    """
    return _class_names(obj.get("spec"))


def store_claim_template(obj: dict[str, Any]) -> tuple[str, ...]:
    """A ResourceClaimTemplate as the cache stores it (the same, one level down)."""
    spec = obj.get("spec")
    return _class_names(spec.get("spec") if isinstance(spec, dict) else None)


def _spec_of(classes: tuple[str, ...]) -> dict[str, Any]:
    requests = [
        {"name": f"request-{i}", "exactly": {"deviceClassName": name}}
        for i, name in enumerate(classes)
    ]
    return {"devices": {"requests": requests}}


def _identity(key: str) -> dict[str, str]:
    namespace, _, name = key.rpartition("/")
    return {"name": name, "namespace": namespace} if namespace else {"name": name}


def load_claim(key: str, classes: tuple[str, ...]) -> dict[str, Any]:
    """The stored form as a ResourceClaim object: one exact request per device class."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": _identity(key),
        "spec": _spec_of(classes),
    }


def load_claim_template(key: str, classes: tuple[str, ...]) -> dict[str, Any]:
    """The stored form as a ResourceClaimTemplate object."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": _identity(key),
        "spec": {"spec": _spec_of(classes)},
    }


def store_device_class(obj: dict[str, Any]) -> dict[str, Any]:
    """A DeviceClass as the cache stores it: identity and the extended resource it serves."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    spec = obj.get("spec")
    name = spec.get("extendedResourceName") if isinstance(spec, dict) else None
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {k: meta[k] for k in ("name", "creationTimestamp") if k in meta},
        "spec": {} if name is None else {"extendedResourceName": _string(name)},
    }


_DRA = ("resource.k8s.io/v1", "ResourceV1Api")
DEVICE_CLASSES = Resource(
    "deviceclasses",
    "DeviceClass",
    *_DRA,
    "list_device_class",
    "read_device_class",
    store=store_device_class,
)
RESOURCE_CLAIMS = Resource(
    "resourceclaims",
    "ResourceClaim",
    *_DRA,
    "list_resource_claim_for_all_namespaces",
    "read_namespaced_resource_claim",
    namespaced=True,
    store=store_claim,
    load=load_claim,
)
RESOURCE_CLAIM_TEMPLATES = Resource(
    "resourceclaimtemplates",
    "ResourceClaimTemplate",
    *_DRA,
    "list_resource_claim_template_for_all_namespaces",
    "read_namespaced_resource_claim_template",
    namespaced=True,
    store=store_claim_template,
    load=load_claim_template,
)
#: The resources a setting may ask to have cached, by plural.
OPTIONAL = {r.plural: r for r in (DEVICE_CLASSES, RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES)}


class _Expired(Exception):
    """The resource version we watch from is gone (410 Gone): relist."""


class _NotServed(Exception):
    """The API server does not serve the resource (404 on the list)."""


class _Broken(Exception):
    """A list or watch failed; the message is the one-line reason kept for operators."""


def with_kind(obj: dict[str, Any], resource: Resource) -> dict[str, Any]:
    """``obj`` with its ``kind`` and ``apiVersion`` filled in when missing.

    Why: list items carry neither on the wire, and objects from the list, the watch and a
    live GET must look alike to plugins.
    """
    obj.setdefault("kind", resource.kind)
    obj.setdefault("apiVersion", resource.api_version)
    return obj


def stored(obj: dict[str, Any], resource: Resource) -> Any:
    """``obj`` (kind filled in) in the form the resource's cache keeps."""
    obj = with_kind(obj, resource)
    return resource.store(obj) if resource.store is not None else obj


def shown(key: str, value: Any, resource: Resource) -> dict[str, Any]:
    """A cached value as the object plugins read; why: stored forms may be compact."""
    return resource.load(key, value) if resource.load is not None else value


def key_of(obj: Any, resource: Resource) -> str | None:
    """The cache key of a decoded object: its name, or ``namespace/name`` when namespaced;
    ``None`` when it has no name."""
    name = name_of(obj)
    if name is None or not resource.namespaced:
        return name
    meta = obj.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    return f"{namespace}/{name}" if isinstance(namespace, str) else None


def name_of(obj: Any) -> str | None:
    """``metadata.name`` of a decoded object, or ``None``; why: events and answers are
    untrusted JSON, and an object without a name cannot be cached or matched."""
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
        self._items: dict[str, Any] = {}
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._stream: Any = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.resource_version = ""
        self._progress = False
        self.watching = False
        self.served = True
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
        """The cached object called ``name`` (``namespace/name`` when namespaced), or
        ``None`` when the cache does not hold it.

        Why no live GET here: the informer only mirrors the server; :class:`ApiCluster`
        decides when a miss is worth a request. Objects are shared: treat them as read-only.
        """
        value = self._items.get(name)
        return None if value is None else shown(name, value, self.resource)

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
            except _NotServed:
                # Nothing of it can exist: synced and empty; look again now and then.
                self._items = {}
                self.served = False
                self.last_error = ""
                self._synced.set()
                relist = True
                self._stop.wait(self.timing.backoff_cap)
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
        items: dict[str, Any] = {}
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
                if token is None and _http_status(exc) == 404:
                    raise _NotServed from exc
                reason = _describe(exc, timeout[1])
                raise _Broken(f"list {self.resource.plural}: {reason}") from exc
            if not isinstance(body, dict) or not isinstance(body.get("items"), list):
                self.counts["list_error"] += 1
                raise _Broken(f"list {self.resource.plural}: not a {self.resource.kind}List")
            for item in body["items"]:
                key = key_of(item, self.resource)
                if key is not None:
                    items[key] = stored(item, self.resource)
            meta = body.get("metadata") or {}
            token = meta.get("continue") or None
            if token is None:
                break
        self._items = items  # one assignment: readers see the old or the new list, whole
        self.resource_version = str(meta.get("resourceVersion") or "")
        self.counts["list_ok"] += 1
        self.served = True
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
                self._apply_line(line)
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

    def _apply_line(self, line: bytes) -> None:
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
            key = key_of(obj, self.resource)
            if key is None or not isinstance(obj, dict):
                return
            if kind == "DELETED":
                self._items.pop(key, None)
            else:
                self._items[key] = stored(obj, self.resource)
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
