"""Builders for real AdmissionReview v1 requests and common objects used across tests, and
the one way a test runs the chain on an object (:func:`decide`).

Why one module: the same Pod, Namespace or toleration written in every test file drifts
apart, and a test then proves something about its own builder instead of the plugin.
"""

from __future__ import annotations

import copy
import datetime as dt
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jsonpatch

from webhooks.cluster.files import StaticCluster
from webhooks.core.admission import Admission
from webhooks.core.config import Config, load_config
from webhooks.core.plugin import (
    PHASES,
    RESOURCE_KINDS,
    ClusterView,
    LookupFailure,
    Phase,
    Registry,
)
from webhooks.core.result import Outcome
from webhooks.core.review import AdmissionRequest, parse_review
from webhooks.install.webhookconfig import GROUP_VERSIONS
from webhooks.plugins import REGISTRY

#: The label that names a Namespace's dedicated group by default.
GROUP_LABEL = "placement-webhooks.io/dedicated"

#: kind → (group, version, resource): every kind a plugin may handle, in the version its
#: webhook is registered for (the version the API server then sends), and two it never does.
RESOURCES: dict[str, tuple[str, str, str]] = {
    **{kind: (g, GROUP_VERSIONS[g], r) for (g, r), kind in RESOURCE_KINDS.items()},
    "Namespace": ("", "v1", "namespaces"),
    "ConfigMap": ("", "v1", "configmaps"),
}


def review(
    obj: dict[str, Any] | None,
    *,
    operation: str = "CREATE",
    kind: str | None = None,
    resource: str | None = None,
    group: str | None = None,
    sub_resource: str = "",
    old: dict[str, Any] | None = None,
    namespace: str | None = None,
    uid: str | None = None,
) -> dict[str, Any]:
    """A complete AdmissionReview v1 request dict, shaped as the API server sends it."""
    kind = kind or (obj or old or {}).get("kind", "Pod")
    g, v, r = RESOURCES.get(kind, ("", "v1", kind.lower() + "s"))
    g = g if group is None else group
    r = resource or r
    meta = (obj or old or {}).get("metadata", {})
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": {"group": g, "version": v, "kind": kind},
        "resource": {"group": g, "version": v, "resource": r},
        "requestKind": {"group": g, "version": v, "kind": kind},
        "requestResource": {"group": g, "version": v, "resource": r},
        "name": meta.get("name", ""),
        "namespace": namespace if namespace is not None else meta.get("namespace", "default"),
        "operation": operation,
        "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": f"{operation.title()}Options"},
    }
    if sub_resource:
        request["subResource"] = sub_resource
        request["requestSubResource"] = sub_resource
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def request(obj: dict[str, Any] | None, **kwargs: Any) -> AdmissionRequest:
    """A parsed :class:`AdmissionRequest` for ``obj``."""
    return parse_review(review(obj, **kwargs))


def decide(
    obj: dict[str, Any] | None,
    *,
    config: Config | Mapping[str, Any] | None = None,
    cluster: ClusterView | Sequence[dict[str, Any]] | None = None,
    phases: Sequence[Phase] = PHASES,
    only: str | None = None,
    registry: Registry = REGISTRY,
    now: Callable[[], dt.datetime] | None = None,
    **kw: Any,
) -> Outcome:
    """The chain of ``config`` (a :class:`Config`, or a config mapping to load; the defaults
    when ``None``) decides ``obj`` over ``cluster`` (a view, or the objects of a static one),
    running ``phases`` in order, of every enabled plugin or just ``only``.

    Why one helper: it is how the server answers a review (:class:`Admission`), so every
    plugin test goes through the chain production runs; ``kw`` shapes the request
    (:func:`review`).
    """
    if not isinstance(config, Config):
        config = load_config(config, registry)
    if cluster is not None and not hasattr(cluster, "namespace"):
        cluster = StaticCluster(cluster)  # type: ignore[arg-type]
    admission = Admission(registry, config, cluster, now=now)  # type: ignore[arg-type]
    return admission.decide(request(obj, **kw), phases, only)


def decide_alone(
    plugin: str,
    obj: dict[str, Any],
    *,
    annotations: dict[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
    cluster: ClusterView | Sequence[dict[str, Any]] | None = None,
    **kw: Any,
) -> Outcome:
    """``plugin`` alone, enabled with ``settings``, on ``obj``; namespace ``web`` carries
    ``annotations`` unless another ``cluster`` is given (see :func:`decide` for ``kw``)."""
    if cluster is None:
        cluster = [namespace("web", annotations=annotations)]
    config = {"plugins": {plugin: {"enabled": True, **(settings or {})}}}
    return decide(obj, config=config, cluster=cluster, only=plugin, **kw)


def namespace(
    name: str, group: str | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """A v1 Namespace, dedicated to ``group`` when given, with ``annotations`` when given."""
    metadata: dict[str, Any] = {"name": name}
    if group is not None:
        metadata["labels"] = {GROUP_LABEL: group}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


class Unreachable:
    """A cluster whose every lookup fails, as an API server that does not answer in time;
    it counts the lookups it was asked for (``lookups``)."""

    def __init__(self, reason: str = "timed out") -> None:
        self.reason = reason
        self.lookups = 0

    def _fail(self) -> None:
        self.lookups += 1
        raise LookupFailure(self.reason)

    def runtime_class(self, name: str) -> None:
        """Always fails."""
        self._fail()

    def namespace(self, name: str) -> None:
        """Always fails."""
        self._fail()

    def device_class(self, name: str) -> None:
        """Always fails."""
        self._fail()

    def resource_claim(self, namespace: str, name: str) -> None:
        """Always fails."""
        self._fail()

    def resource_claim_template(self, namespace: str, name: str) -> None:
        """Always fails."""
        self._fail()


def pod(
    *,
    name: str = "web",
    namespace: str = "default",
    tolerations: list[dict[str, Any]] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A Pod as the API server hands it to admission (defaults applied where they matter)."""
    body: dict[str, Any] = {
        "containers": containers
        if containers is not None
        else [{"name": "app", "image": "nginx:1.27", "resources": {}}],
        **spec,
    }
    if init_containers is not None:
        body["initContainers"] = init_containers
    if tolerations is not None:
        body["tolerations"] = tolerations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": body,
    }


def daemonset(
    *,
    name: str = "agent",
    namespace: str = "kube-system",
    tolerations: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """An apps/v1 DaemonSet whose template spec carries ``tolerations`` and ``spec`` fields."""
    template = pod(name=name, namespace=namespace, tolerations=tolerations, **spec)
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": template["spec"]},
        },
    }


def owned_by(
    obj: dict[str, Any],
    kind: str = "DaemonSet",
    api_version: str = "apps/v1",
    *,
    controller: bool | None = True,
) -> dict[str, Any]:
    """``obj`` with one owner reference (``controller`` omitted when ``None``)."""
    ref: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "name": "owner",
        "uid": "6f1c2a5e-0000-4000-8000-000000000001",
        "blockOwnerDeletion": True,
    }
    if controller is not None:
        ref["controller"] = controller
    return {**obj, "metadata": {**obj["metadata"], "ownerReferences": [ref]}}


def container(
    name: str = "app", requests: dict[str, str] | None = None, **kw: Any
) -> dict[str, Any]:
    """A container with optional resource requests (and any other fields)."""
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    resources.update(kw.pop("resources", {}))
    return {"name": name, "image": "busybox:1.36", "resources": resources, **kw}


def tol(
    key: str = "",
    operator: str | None = None,
    value: str | None = None,
    effect: str | None = None,
    seconds: int | None = None,
) -> dict[str, Any]:
    """A toleration dict with only the given fields set."""
    out: dict[str, Any] = {}
    if key:
        out["key"] = key
    if operator is not None:
        out["operator"] = operator
    if value is not None:
        out["value"] = value
    if effect is not None:
        out["effect"] = effect
    if seconds is not None:
        out["tolerationSeconds"] = seconds
    return out


def taint(key: str, effect: str = "NoSchedule", value: str = "") -> dict[str, str]:
    """A node (or device) taint; ``value`` only when not empty."""
    out = {"key": key, "effect": effect}
    if value:
        out["value"] = value
    return out


def apply(obj: dict[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    """Apply a JSON Patch to a deep copy with the reference implementation."""
    return jsonpatch.apply_patch(copy.deepcopy(obj), patch)  # type: ignore[no-any-return]
