"""The live cluster, read in pages: every resource the audit scans, and the reports it writes.

Why apart from :mod:`.api`: the server keeps two small watched caches for the life of a
worker, while ``audit`` (and ``explain`` on a live cluster) read whole collections once, and
must do it in bounded memory. So a list here is a generator of pages (``limit`` and
``continue``): the caller admits one page and lets it go before the next arrives, and
memory grows with what the caller keeps, not with the cluster.

Failure behaviour, chosen so a scan either completes or says in one line why it did not:

* A page that fails with a status that may pass (429, 500, 502, 503, 504) or with a broken,
  refused or silent connection is asked again, with the same ``continue`` token, up to
  :attr:`Paging.attempts` times with a doubling pause. Then :class:`ApiError` names the
  resource, the last reason and the number of attempts
  (``list pods: HTTP 500: etcdserver: request timed out (4 attempts)``).
* Other statuses (401, 403, 404, ...) are answers, not accidents: no retry, the same one line.
* A ``continue`` token that expired mid-list (410) is replaced by the one the server sends
  with the error, as the API conventions allow: the rest of the list then comes from a
  newer snapshot, which an audit tolerates (an object may be missed or seen twice, never
  invented). Without a new token the list fails.

The ``kubernetes`` package is imported only when a :class:`Lister` is built, so the offline
CLI never loads it. Objects stay plain dicts decoded with orjson; list items get the
``kind`` and ``apiVersion`` the wire leaves out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from webhooks.cluster.failures import describe, http_status, status_message
from webhooks.cluster.kubeconfig import (
    SERVICE_ACCOUNT_TOKEN,
    ClusterError,
    ClusterSource,
    load_configuration,
    resolve_source,
)
from webhooks.core.config import ClusterSettings
from webhooks.k8s.releases import Release, ServerRelease

__all__ = [
    "KINDS",
    "RETRIED_STATUSES",
    "ApiError",
    "ClusterError",
    "Kind",
    "Lister",
    "Paging",
    "connect",
    "device_taint_rules",
]

#: Statuses that say "not now" rather than "no": asked again (429 and the 5xx a busy or
#: restarting API server or its load balancer answers).
RETRIED_STATUSES: Final = frozenset({429, 500, 502, 503, 504})
#: How an API server's 500 to a server-side apply begins when the body names a field the
#: schema does not declare: the body is at fault, so asking again cannot help.
UNDECLARED_FIELD: Final = "failed to create typed patch object"


class ApiError(Exception):
    """A request that could not be completed; the message is one line naming the resource.

    ``status`` is the HTTP status when the server answered (404: it does not serve it).
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Kind:
    """A resource as the API serves it, and the client calls that list it.

    ``api`` is the ``kubernetes.client`` class; ``list_all`` lists every namespace (or the
    cluster-scoped collection) and ``list_in`` one namespace. Kinds with ``api`` set to
    ``CustomObjectsApi`` (the report CRDs) are reached through its generic calls.
    """

    kind: str
    plural: str
    group: str
    version: str
    namespaced: bool
    api: str = "CustomObjectsApi"
    list_all: str = ""
    list_in: str = ""

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, ``group/version`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource(self) -> str:
        """The name kubectl and RBAC messages use: ``pods``, ``deployments.apps``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def custom(self) -> bool:
        """Whether the generic custom-object calls reach it."""
        return self.api == "CustomObjectsApi"


DRA_GROUP = "resource.k8s.io"
DRA_API = "ResourceV1Api"


def _core(kind: str, plural: str, snake: str, namespaced: bool = True) -> Kind:
    if not namespaced:
        return Kind(kind, plural, "", "v1", False, "CoreV1Api", f"list_{snake}")
    return Kind(
        kind,
        plural,
        "",
        "v1",
        True,
        "CoreV1Api",
        f"list_{snake}_for_all_namespaces",
        f"list_namespaced_{snake}",
    )


def _grouped(kind: str, plural: str, group: str, api: str, snake: str) -> Kind:
    return Kind(
        kind,
        plural,
        group,
        "v1",
        True,
        api,
        f"list_{snake}_for_all_namespaces",
        f"list_namespaced_{snake}",
    )


#: Every built-in kind the audit and ``explain`` read, by kind.
KINDS: Mapping[str, Kind] = {
    k.kind: k
    for k in (
        _core("Namespace", "namespaces", "namespace", namespaced=False),
        _core("Node", "nodes", "node", namespaced=False),
        Kind(
            "RuntimeClass",
            "runtimeclasses",
            "node.k8s.io",
            "v1",
            False,
            "NodeV1Api",
            "list_runtime_class",
        ),
        _core("Pod", "pods", "pod"),
        _core("PodTemplate", "podtemplates", "pod_template"),
        _core("ReplicationController", "replicationcontrollers", "replication_controller"),
        _grouped("Deployment", "deployments", "apps", "AppsV1Api", "deployment"),
        _grouped("ReplicaSet", "replicasets", "apps", "AppsV1Api", "replica_set"),
        _grouped("StatefulSet", "statefulsets", "apps", "AppsV1Api", "stateful_set"),
        _grouped("DaemonSet", "daemonsets", "apps", "AppsV1Api", "daemon_set"),
        _grouped("Job", "jobs", "batch", "BatchV1Api", "job"),
        _grouped("CronJob", "cronjobs", "batch", "BatchV1Api", "cron_job"),
    )
}
#: The DRA kinds ``explain`` reads from a cluster (not the audit: it admits objects), in
#: the order it reads them; every supported release serves them at ``v1``. DeviceTaintRule,
#: whose version differs by release, is :func:`device_taint_rules`.
DRA_KINDS: tuple[Kind, ...] = (
    *(
        Kind(kind, plural, DRA_GROUP, "v1", False, DRA_API, f"list_{snake}")
        for kind, plural, snake in (
            ("DeviceClass", "deviceclasses", "device_class"),
            ("ResourceSlice", "resourceslices", "resource_slice"),
        )
    ),
    _grouped("ResourceClaim", "resourceclaims", DRA_GROUP, DRA_API, "resource_claim"),
    _grouped(
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        DRA_GROUP,
        DRA_API,
        "resource_claim_template",
    ),
)


def device_taint_rules(release: Release) -> Kind:
    """DeviceTaintRule at the API version ``release`` serves it (``v1alpha3`` on 1.34).

    Why from the release table: reading it at ``v1`` answers 404 before 1.37 even where
    the gate is on, and the client's class for each version is named after it
    (``ResourceV1alpha3Api``).
    """
    version = release.device_taint_rule_version
    api = f"Resource{version.capitalize()}Api"
    return Kind(
        "DeviceTaintRule",
        "devicetaintrules",
        DRA_GROUP,
        version,
        False,
        api,
        "list_device_taint_rule",
    )


@dataclass(frozen=True, slots=True)
class Paging:
    """Page size, timeouts and retries of a :class:`Lister`; tests shrink the pauses.

    ``attempts`` counts every try of one request, the first included; the pause before the
    n-th retry is ``backoff * 2**(n-1)`` seconds, at most ``backoff_cap``. With the
    defaults a page is given about 3.5 s of pauses to come back, which covers an API
    server restarting behind its load balancer but not one that is down.
    """

    page_size: int = 500
    attempts: int = 4
    backoff: float = 0.5
    backoff_cap: float = 8.0
    connect: float = 5.0
    read: float = 60.0


def connect(
    kubeconfig: str = "",
    context: str = "",
    *,
    paging: Paging | None = None,
    environ: Mapping[str, str] | None = None,
    token_path: str = SERVICE_ACCOUNT_TOKEN,
) -> Lister:
    """A :class:`Lister` for the cluster kubectl would talk to; :class:`ClusterError` if none.

    Inside a pod (service host set and a token mounted) and with neither argument given,
    the pod's service account; otherwise ``kubeconfig`` (empty: ``$KUBECONFIG``, else
    ``~/.kube/config``) at ``context`` (empty: its current one). Why this order: a
    CronJob has no kubeconfig and must just work, and on a laptop the flags mean what they
    mean to kubectl.
    """
    auto = ClusterSettings(source="auto")
    source: ClusterSource = "kubeconfig"
    if not (kubeconfig or context) and resolve_source(auto, environ, token_path) == "in-cluster":
        source = "in-cluster"
    return Lister(load_configuration(source, kubeconfig, context), paging)


class Lister:
    """Paged reads of built-in kinds and the report CRDs, and server-side applies of reports.

    Why one object: the requests share a connection pool, the credentials and the retry
    policy. Close it with :meth:`close` (or use it as a context manager).
    """

    def __init__(
        self,
        configuration: Any,
        paging: Paging | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        from kubernetes import client

        self.paging = paging or Paging()
        self._sleep = sleep or time.sleep
        self._client: Any = client.ApiClient(configuration)
        self._apis: dict[str, Any] = {}

    def __enter__(self) -> Lister:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool. Why explicit: a CronJob should end without stragglers."""
        self._client.close()

    def _api(self, name: str) -> Any:
        if name not in self._apis:
            from kubernetes import client

            self._apis[name] = getattr(client, name)(self._client)
        return self._apis[name]

    # -- reading -----------------------------------------------------------------------------

    def release(self) -> ServerRelease:
        """The release the API server reports (the newest assumed, and said, if it cannot
        be asked). Why here: what ``explain`` reads depends on it (DeviceTaintRule)."""
        from webhooks.cluster.version import read_release

        return read_release(self._client, self.paging.read)

    def items(
        self, kind: Kind, namespace: str | None = None, label_selector: str = ""
    ) -> Iterator[dict[str, Any]]:
        """Every object of ``kind`` (in ``namespace``, or everywhere), one page at a time.

        Why a generator of objects over pages: only the page being handed out is held, so a
        caller that keeps nothing scans any cluster in the memory of one page. Raises
        :class:`ApiError` (after the retries) when a page cannot be had.
        """
        for page in self.pages(kind, namespace, label_selector):
            yield from page

    def pages(
        self, kind: Kind, namespace: str | None = None, label_selector: str = ""
    ) -> Iterator[list[dict[str, Any]]]:
        """The pages of :meth:`items`, as lists; why: a caller may want the page boundaries."""
        what = f"list {kind.resource}" + (f" in namespace {namespace}" if namespace else "")
        token: str | None = None
        while True:
            body = self._page(kind, namespace, label_selector, token, what)
            items = body.get("items")
            if not isinstance(items, list):
                raise ApiError(f"{what}: the answer is not a {kind.kind}List")
            for item in items:
                if isinstance(item, dict):
                    item.setdefault("kind", kind.kind)
                    item.setdefault("apiVersion", kind.api_version)
            yield [item for item in items if isinstance(item, dict)]
            meta = body.get("metadata")
            token = meta.get("continue") if isinstance(meta, dict) else None
            if not isinstance(token, str) or not token:
                return

    def _list_call(self, kind: Kind, namespace: str | None) -> Callable[..., Any]:
        api = self._api(kind.api)
        if kind.custom:
            if namespace and kind.namespaced:
                call = api.list_namespaced_custom_object
                return lambda **kw: call(kind.group, kind.version, namespace, kind.plural, **kw)
            call = api.list_cluster_custom_object
            return lambda **kw: call(kind.group, kind.version, kind.plural, **kw)
        if namespace and kind.namespaced:
            call = getattr(api, kind.list_in)
            return lambda **kw: call(namespace, **kw)
        return getattr(api, kind.list_all)  # type: ignore[no-any-return]

    def _page(
        self,
        kind: Kind,
        namespace: str | None,
        label_selector: str,
        token: str | None,
        what: str,
    ) -> dict[str, Any]:
        call = self._list_call(kind, namespace)
        paging = self.paging

        def request() -> bytes:
            options: dict[str, Any] = {"limit": paging.page_size}
            if token:
                options["_continue"] = token
            if label_selector:
                options["label_selector"] = label_selector
            response = call(
                **options,
                _preload_content=False,
                _request_timeout=(paging.connect, paging.read),
            )
            try:
                return bytes(response.data)
            finally:
                response.release_conn()

        while True:
            try:
                data = self._retrying(what, request, expirable=True)
            except _Expired as expired:
                if not expired.token:
                    raise ApiError(
                        f"{what}: the list changed too much to continue (410); run again"
                    ) from None
                token = expired.token
                continue
            try:
                body = orjson.loads(data)
            except orjson.JSONDecodeError:
                raise ApiError(f"{what}: the answer is not JSON") from None
            if not isinstance(body, dict):
                raise ApiError(f"{what}: the answer is not a {kind.kind}List")
            return body

    # -- writing reports ---------------------------------------------------------------------

    def apply(
        self,
        kind: Kind,
        name: str,
        body: Mapping[str, Any],
        field_manager: str,
        namespace: str = "",
    ) -> None:
        """Server-side apply ``body`` as ``field_manager`` (forcing), creating it if missing.

        Why apply: the result lists are replaced, not merged, and fields other managers set
        on the object (a dashboard's annotations) are left alone. Unknown fields are refused
        (``fieldValidation=Strict``) so a report the CRD would silently prune fails loudly.
        """
        api = self._api(kind.api)
        common: dict[str, Any] = {
            "field_manager": field_manager,
            "force": True,
            "field_validation": "Strict",
            "_content_type": "application/apply-patch+yaml",
            "_preload_content": False,
            "_request_timeout": (self.paging.connect, self.paging.read),
        }
        where = f"{namespace}/{name}" if namespace else name
        what = f"apply {kind.resource} {where}"

        def request() -> bytes:
            if kind.namespaced:
                response = api.patch_namespaced_custom_object(
                    kind.group, kind.version, namespace, kind.plural, name, dict(body), **common
                )
            else:
                response = api.patch_cluster_custom_object(
                    kind.group, kind.version, kind.plural, name, dict(body), **common
                )
            try:
                return bytes(response.data)
            finally:
                response.release_conn()

        self._retrying(what, request, final=_refused_body)

    def delete(self, kind: Kind, name: str, namespace: str = "") -> None:
        """Delete one custom object; one already gone counts as deleted.

        Why gone is fine: a retried delete whose first try succeeded answers 404.
        """
        api = self._api(kind.api)
        where = f"{namespace}/{name}" if namespace else name
        timeout = (self.paging.connect, self.paging.read)

        def request() -> bytes:
            try:
                if kind.namespaced:
                    response = api.delete_namespaced_custom_object(
                        kind.group,
                        kind.version,
                        namespace,
                        kind.plural,
                        name,
                        _preload_content=False,
                        _request_timeout=timeout,
                    )
                else:
                    response = api.delete_cluster_custom_object(
                        kind.group,
                        kind.version,
                        kind.plural,
                        name,
                        _preload_content=False,
                        _request_timeout=timeout,
                    )
            except Exception as exc:
                if http_status(exc) == 404:
                    return b""
                raise
            try:
                return bytes(response.data)
            finally:
                response.release_conn()

        self._retrying(f"delete {kind.resource} {where}", request)

    # -- retries -----------------------------------------------------------------------------

    def _retrying(
        self,
        what: str,
        request: Callable[[], bytes],
        *,
        expirable: bool = False,
        final: Callable[[BaseException], bool] | None = None,
    ) -> bytes:
        """``request()``, asked again while it fails in a way that may pass; else ApiError.

        ``expirable``: a 410 means an expired ``continue`` token (lists only); ``final``
        picks out failures that a retried status still cannot pass (the request's fault).
        """
        paging = self.paging
        attempt = 0
        while True:
            attempt += 1
            try:
                return request()
            except Exception as exc:
                status = http_status(exc)
                if status == 410 and expirable:
                    raise _Expired(_continue_of(exc)) from None
                retried = status in RETRIED_STATUSES if status is not None else _transport(exc)
                if final is not None and final(exc):
                    retried = False
                if not retried or attempt >= paging.attempts:
                    reason = describe(exc, paging.read)
                    tries = f" ({attempt} attempts)" if attempt > 1 else ""
                    raise ApiError(f"{what}: {reason}{tries}", status) from None
            self._sleep(min(paging.backoff_cap, paging.backoff * 2 ** (attempt - 1)))


class _Expired(Exception):
    """A 410 Gone: the ``continue`` token expired; carries the server's fresh one, if any."""

    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


def _continue_of(exc: BaseException) -> str:
    """The ``metadata.continue`` of the Status that came with a 410, or ``""``."""
    body = getattr(exc, "body", None)
    try:
        status = orjson.loads(body) if body else None
    except (orjson.JSONDecodeError, TypeError):
        return ""
    meta = status.get("metadata") if isinstance(status, dict) else None
    token = meta.get("continue") if isinstance(meta, dict) else None
    return token if isinstance(token, str) else ""


def _refused_body(exc: BaseException) -> bool:
    """Whether an apply failed because the report names a field its CRD does not declare.

    Why a 500 is final here: the API server builds the typed patch before validating and
    answers a field the schema lacks with an internal error, which no retry will change.
    """
    return http_status(exc) == 500 and status_message(getattr(exc, "body", None)).startswith(
        UNDECLARED_FIELD
    )


def _transport(exc: BaseException) -> bool:
    """Whether ``exc`` is a connection that broke, was refused or went silent.

    Why refused is retried too: an API server restarting behind a load balancer refuses
    for a moment, and a scan of an hour's work should not end on that moment.
    """
    from urllib3 import exceptions as u3

    return isinstance(exc, u3.HTTPError | OSError | TimeoutError)
