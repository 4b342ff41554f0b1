"""Cluster objects from the API server: a watch-backed cache and live GETs.

Why behind the same small interface as the files (:class:`~webhooks.core.plugin.ClusterView`):
plugins stay pure and the CLI answers exactly as the server would, given the same objects.

Serving, :func:`open_cluster` starts an :class:`ApiCluster`: one list+watch cache per resource
(:mod:`.informer`): RuntimeClasses and Namespaces always, DeviceClasses, ResourceClaims and
ResourceClaimTemplates only when a setting reads them (``Config.lookups``; a lookup of one
not cached is a live GET); and a live GET when the cache misses (upstream's admission plugins do
the same, since a just-created object may not have reached the cache); the credentials come
from :mod:`.kubeconfig`. The ``kubernetes`` client is imported only by :func:`open_cluster`
and what it starts, so the offline CLI and a server with ``source: none`` never load it.
Objects stay plain dicts decoded from the API's JSON: client models are slow and drop fields
they do not know.

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

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import orjson

from webhooks.cluster.failures import describe as _describe
from webhooks.cluster.failures import http_status as _http_status
from webhooks.cluster.informer import (
    DEVICE_CLASSES,
    NAMESPACES,
    OPTIONAL,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RUNTIME_CLASSES,
    Informer,
    Resource,
    Timing,
    name_of,
    shown,
    stored,
)
from webhooks.cluster.kubeconfig import (
    ClusterError,
    check_source,
    client_configuration,
    resolve_source,
)
from webhooks.core.config import ClusterSettings
from webhooks.core.plugin import LookupFailure

#: Names the server imports from here; the source and the cache live in their own modules.
__all__ = ["ApiCluster", "ClusterError", "Timing", "check_source", "open_cluster"]


class ApiCluster:
    """A :class:`~webhooks.core.plugin.ClusterView` over the API server.

    Lookups read the informer caches; a miss asks the API server with a live GET (as
    upstream's admission plugins do, because a just-created object may not have reached the
    cache yet), bounded by ``timing.lookup`` seconds. Not found is ``None``; anything that
    prevents an answer raises :class:`~webhooks.core.plugin.LookupFailure`.
    """

    #: Every object carries the API server's ``uid`` and ``resourceVersion``, so what plugins
    #: derive from one is kept per version (:mod:`webhooks.core.derived`).
    versioned = True

    def __init__(
        self, configuration: Any, timing: Timing | None = None, cached: Iterable[str] = ()
    ) -> None:
        from kubernetes import client

        self.timing = timing or Timing()
        unknown = sorted(set(cached) - set(OPTIONAL))
        if unknown:
            raise ValueError(f"cannot cache {', '.join(unknown)}")
        watched = [RUNTIME_CLASSES, NAMESPACES, *(OPTIONAL[p] for p in sorted(set(cached)))]
        self.informers: dict[str, Informer] = {
            r.plural: Informer(r, client.ApiClient(configuration), self.timing) for r in watched
        }
        self._lookup_client: Any = client.ApiClient(configuration)
        self._reads: dict[str, Callable[..., Any]] = {}
        for r in (RUNTIME_CLASSES, NAMESPACES, *OPTIONAL.values()):
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

    def device_class(self, name: str) -> dict[str, Any] | None:
        """The DeviceClass called ``name``: cache (when a setting keeps one), then a GET."""
        return self._lookup(DEVICE_CLASSES, name)

    def resource_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The ResourceClaim ``namespace/name``: cache, then a bounded live GET.

        Why the GET: a claim created just before the pod that uses it may not have
        reached the cache yet.
        """
        return self._lookup(RESOURCE_CLAIMS, name, namespace)

    def resource_claim_template(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The ResourceClaimTemplate ``namespace/name``: cache, then a bounded live GET.

        Why the GET: a Job and its template are often applied together, the template a
        moment before the Job's first pod.
        """
        return self._lookup(RESOURCE_CLAIM_TEMPLATES, name, namespace)

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

    def _lookup(self, resource: Resource, name: str, namespace: str = "") -> dict[str, Any] | None:
        if not name or (resource.namespaced and not namespace):
            return None  # no object has an empty name, and GET .../<empty> would be a list
        informer = self.informers.get(resource.plural)
        key = f"{namespace}/{name}" if resource.namespaced else name
        obj = informer.get(key) if informer is not None else None
        if obj is not None:
            self._count(resource, "hit")
            return obj
        if informer is not None and not informer.served:
            self._count(resource, "not_found")
            return None  # the API server does not serve the resource at all
        try:
            obj = self._get(resource, name, namespace)
        except LookupFailure:
            self._count(resource, "error")
            raise
        self._count(resource, "found" if obj is not None else "not_found")
        return obj

    def _get(self, resource: Resource, name: str, namespace: str = "") -> dict[str, Any] | None:
        bound = self.timing.lookup
        deadline = time.monotonic() + bound
        what = f"get {resource.plural}/{namespace + '/' if namespace else ''}{name}"
        args = (name, namespace) if resource.namespaced else (name,)
        try:
            response = self._reads[resource.plural](
                *args, _preload_content=False, _request_timeout=bound
            )
        except Exception as exc:
            if _http_status(exc) == 404:
                return None
            raise LookupFailure(f"{what}: {_describe(exc, bound)}") from None
        try:
            body = read_within(response, deadline)
        except Exception as exc:
            raise LookupFailure(f"{what}: {_describe(exc, bound)}") from None
        finally:
            response.release_conn()
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise LookupFailure(f"{what}: the answer is not JSON") from None
        if name_of(obj) != name:
            raise LookupFailure(f"{what}: the answer is not a {resource.kind}")
        key = f"{namespace}/{name}" if resource.namespaced else name
        return shown(key, stored(obj, resource), resource)


def read_within(
    response: Any, deadline: float, clock: Callable[[], float] = time.monotonic
) -> bytes:
    """The response body, failing once ``deadline`` (on ``clock``) passes even if bytes keep
    trickling.

    Why: the socket timeout bounds each read, not their sum, so a server that answers
    headers and then stalls or dribbles the body could otherwise hold a review past the
    lookup bound. Each read's socket timeout is what is left, so a stalled read ends at the
    deadline too. ``clock`` is there for tests, which check the deadline without waiting.
    """
    sock = getattr(getattr(response, "connection", None), "sock", None)
    parts: list[bytes] = []
    while True:
        remaining = deadline - clock()
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
    cached: Iterable[str] = (),
) -> ApiCluster | None:
    """Start the API source ``settings`` selects, or return ``None`` when it selects none;
    ``cached`` names the resources beyond RuntimeClasses and Namespaces to keep in cache.

    Why a function and not import-time setup: the ``kubernetes`` package is imported here
    and only here, so the offline CLI and a server without a cluster never load it, and a
    gunicorn worker calls this after fork so its threads live in the worker.
    """
    source = resolve_source(settings, environ)
    if source == "none":
        return None
    configuration = client_configuration(settings, source)
    base = timing or Timing()
    timing = replace(base, lookup=settings.lookup_timeout_seconds)
    return ApiCluster(configuration, timing, cached).start()
