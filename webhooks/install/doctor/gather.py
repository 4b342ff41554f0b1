"""Read one installation from the cluster: what every ``doctor`` check judges.

Why the config is found the way the chart lays it out: the configurations alone do not say
which plugins the server runs, and "what ``webhook-config`` would render" depends on it.
The chart's Deployment (named like the configurations, in the release namespace) runs
``serve --config PATH``, and PATH is mounted from a ConfigMap key (``subPath``, or a file
of a mounted directory). That ConfigMap text is parsed by the one config reader
(:func:`webhooks.configfile.parse_config`), exactly as the server parses its file.

Every read is bounded by ``timeout``; one that fails is recorded in
:attr:`~webhooks.install.doctor.installation.Installation.unread` with its reason instead of
raising, so one forbidden or missing object cannot hide what the other checks would say.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from functools import partial
from typing import Any, Final

import orjson

from webhooks.cluster.failures import describe
from webhooks.cluster.version import read_release
from webhooks.configfile import parse_config
from webhooks.core.config import Config, ConfigError
from webhooks.install.doctor.installation import Installation
from webhooks.install.webhookconfig import KINDS, InjectError, read_configurations

#: The label an EndpointSlice names its Service by (discovery.k8s.io/v1).
SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"
#: The container command that is the server.
SERVE: Final = "serve"


class _Missing(Exception):
    """The object does not exist (HTTP 404)."""


def gather(api: Any, name: str, namespace: str, timeout: float) -> Installation:
    """Everything the checks judge about the installation ``name`` in ``namespace``.

    Why never raising for what the cluster answers: a check of a half-read installation
    still says what it can; what was not read is in ``unread`` and the checks that needed it
    say so.
    """
    release = read_release(api, timeout)
    unread: dict[str, str] = {}
    targets = [(KINDS["mutate"], name), (KINDS["validate"], name)]
    try:
        configurations = tuple(read_configurations(api, targets, timeout))
    except InjectError as exc:
        unread["configurations"] = str(exc)
        return Installation(api, name, namespace, release, unread=unread, timeout=timeout)
    deployment = _deployment(api, name, namespace, timeout, unread)
    config, note = _config(api, deployment, namespace, timeout, unread)
    services: dict[str, dict[str, Any] | None] = {}
    slices: dict[str, tuple[dict[str, Any], ...]] = {}
    for key in service_keys(configurations):
        ns, _, svc = key.partition("/")
        try:
            read = partial(_core(api).read_namespaced_service, svc, ns, **_opts(timeout))
            services[key] = _get(read, timeout)
        except _Missing:
            services[key] = None
            continue
        except _Unread as exc:
            unread[f"service {key}"] = str(exc)
            continue
        try:
            slices[key] = tuple(_items(_discovery_slices(api, ns, svc, timeout), timeout))
        except (_Missing, _Unread) as exc:
            unread[f"endpointslices {key}"] = str(exc) or "not served"
    labels: dict[str, str] | None = None
    try:
        found = _get(lambda: _core(api).read_namespace(namespace, **_opts(timeout)), timeout)
        labels = dict((found.get("metadata") or {}).get("labels") or {})
    except _Missing:
        unread[f"namespace {namespace}"] = "not found"
    except _Unread as exc:
        unread[f"namespace {namespace}"] = str(exc)
    others = _others(api, name, timeout, unread)
    return Installation(
        api,
        name,
        namespace,
        release,
        configurations=configurations,
        config=config,
        config_note=note,
        timeout=timeout,
        deployment=deployment,
        services=services,
        endpoint_slices=slices,
        namespace_labels=labels,
        others=others,
        unread=unread,
    )


def service_keys(configurations: tuple[dict[str, Any], ...]) -> list[str]:
    """``namespace/name`` of each Service the webhooks call, in order, once each."""
    keys: dict[str, None] = {}
    for configuration in configurations:
        for hook in configuration.get("webhooks") or []:
            service = (hook.get("clientConfig") or {}).get("service")
            if service:
                keys[f"{service.get('namespace')}/{service.get('name')}"] = None
    return list(keys)


def serve_args(deployment: dict[str, Any] | None) -> list[str] | None:
    """The arguments of the Deployment's container that runs ``serve`` (``None``: none).

    Why by arguments and not by container name: an operator may rename the container, but
    whatever runs the server passes ``serve`` first (as the chart's does).
    """
    if deployment is None:
        return None
    spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    for container in spec.get("containers") or []:
        words = [*(container.get("command") or []), *(container.get("args") or [])]
        if SERVE in words:
            return [str(word) for word in words[words.index(SERVE) :]]
    return None


def option_value(args: list[str], option: str) -> str | None:
    """The value of ``--option VALUE`` or ``--option=VALUE`` in ``args`` (``None``: absent)."""
    for index, arg in enumerate(args):
        if arg == option and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(option + "="):
            return arg.partition("=")[2]
    return None


def config_source(deployment: dict[str, Any], path: str) -> tuple[str, str] | str:
    """``(configmap, key)`` the file ``path`` of the serve container is mounted from, or why
    it is not known.

    A mount at ``path`` itself takes its ``subPath`` as the key; a mount of a directory
    holding ``path`` takes the file's name. Only ConfigMap volumes (alone or projected) are
    followed: a config baked into the image or from a Secret is not the chart's layout.
    """
    spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    volumes = {str(v.get("name")): v for v in spec.get("volumes") or []}
    for container in spec.get("containers") or []:
        words = [*(container.get("command") or []), *(container.get("args") or [])]
        if SERVE not in words:
            continue
        for mount in container.get("volumeMounts") or []:
            mounted = str(mount.get("mountPath") or "").rstrip("/")
            if mounted == path and mount.get("subPath"):
                key = str(mount["subPath"])
            elif path.startswith(mounted + "/") and not mount.get("subPath"):
                key = posixpath.relpath(path, mounted)
            else:
                continue
            volume = volumes.get(str(mount.get("name"))) or {}
            if volume.get("configMap"):
                return str(volume["configMap"].get("name")), key
            for source in (volume.get("projected") or {}).get("sources") or []:
                if source.get("configMap"):
                    return str(source["configMap"].get("name")), key
            return f"{path} is mounted from volume {mount.get('name')!r}, not a ConfigMap"
        return f"no volume of the serve container holds {path}"
    return "no container runs serve"


def _config(
    api: Any,
    deployment: dict[str, Any] | None,
    namespace: str,
    timeout: float,
    unread: dict[str, str],
) -> tuple[Config | None, str]:
    """The config the server runs, or ``None`` and why not."""
    args = serve_args(deployment)
    if deployment is None or args is None:
        why = unread.get("deployment", "no Deployment running serve")
        return None, f"{why} in namespace {namespace}"
    path = option_value(args, "--config")
    if path is None:
        return parse_config(b"{}", "serve's built-in defaults"), "serve runs without --config"
    source = config_source(deployment, path)
    if isinstance(source, str):
        return None, source
    configmap, key = source
    try:
        found = _get(
            lambda: _core(api).read_namespaced_config_map(configmap, namespace, **_opts(timeout)),
            timeout,
        )
    except _Missing:
        return None, f"ConfigMap {namespace}/{configmap} (serve --config {path}) not found"
    except _Unread as exc:
        return None, f"ConfigMap {namespace}/{configmap}: {exc}"
    text = (found.get("data") or {}).get(key)
    if not isinstance(text, str):
        return None, f"ConfigMap {namespace}/{configmap} has no key {key} (serve --config {path})"
    try:
        return parse_config(text.encode(), f"ConfigMap {namespace}/{configmap} {key}"), ""
    except ConfigError as exc:
        return None, str(exc)


def _deployment(
    api: Any, name: str, namespace: str, timeout: float, unread: dict[str, str]
) -> dict[str, Any] | None:
    """The Deployment named ``name`` in ``namespace``, else the one there that runs serve."""
    from kubernetes.client import AppsV1Api

    apps: Any = AppsV1Api(api)
    try:
        return _get(
            lambda: apps.read_namespaced_deployment(name, namespace, **_opts(timeout)), timeout
        )
    except _Missing:
        pass
    except _Unread as exc:
        unread["deployment"] = f"Deployment {namespace}/{name}: {exc}"
        return None
    try:
        listed = _items(
            lambda: apps.list_namespaced_deployment(namespace, **_opts(timeout)), timeout
        )
    except (_Missing, _Unread) as exc:
        unread["deployment"] = f"Deployments in {namespace}: {exc or 'not found'}"
        return None
    serving = [d for d in listed if serve_args(d) is not None]
    if len(serving) == 1:
        return serving[0]
    unread["deployment"] = (
        f"no Deployment {name}, and {len(serving)} others running serve"
        if serving
        else f"no Deployment {name} or other running serve"
    )
    return None


def _others(
    api: Any, name: str, timeout: float, unread: dict[str, str]
) -> tuple[dict[str, Any], ...]:
    """Every webhook configuration in the cluster but the installation's own two."""
    from kubernetes.client import AdmissionregistrationV1Api

    admission: Any = AdmissionregistrationV1Api(api)
    found: list[dict[str, Any]] = []
    for kind, lister in (
        (KINDS["mutate"], admission.list_mutating_webhook_configuration),
        (KINDS["validate"], admission.list_validating_webhook_configuration),
    ):
        try:
            items = _items(partial(lister, **_opts(timeout)), timeout)
        except (_Missing, _Unread) as exc:
            unread[f"{kind}s"] = str(exc) or "not served"
            continue
        for item in items:
            if (item.get("metadata") or {}).get("name") != name:
                found.append({**item, "kind": kind})
    return tuple(found)


class _Unread(Exception):
    """A read that failed for another reason than 404; the message is one line."""


def _opts(timeout: float) -> dict[str, Any]:
    return {"_preload_content": False, "_request_timeout": timeout}


def _core(api: Any) -> Any:
    from kubernetes.client import CoreV1Api

    return CoreV1Api(api)


def _discovery_slices(api: Any, namespace: str, service: str, timeout: float) -> Callable[[], Any]:
    from kubernetes.client import DiscoveryV1Api

    discovery: Any = DiscoveryV1Api(api)
    selector = f"{SERVICE_NAME_LABEL}={service}"
    return lambda: discovery.list_namespaced_endpoint_slice(
        namespace, label_selector=selector, **_opts(timeout)
    )


def _get(call: Callable[[], Any], timeout: float) -> dict[str, Any]:
    """The decoded answer of ``call`` (a GET with ``_preload_content=False``)."""
    from kubernetes.client.exceptions import ApiException

    try:
        response = call()
        data = orjson.loads(response.data or b"{}")
    except ApiException as exc:
        if exc.status == 404:
            raise _Missing from None
        raise _Unread(describe(exc, timeout)) from None
    except orjson.JSONDecodeError:
        raise _Unread("the answer is not JSON") from None
    except Exception as exc:  # a transport failure: one line, never a traceback
        raise _Unread(describe(exc, timeout)) from None
    return data if isinstance(data, dict) else {}


def _items(call: Callable[[], Any], timeout: float) -> list[dict[str, Any]]:
    return [item for item in _get(call, timeout).get("items") or [] if isinstance(item, dict)]
