"""From a manifest to the admission requests the cluster would really see for it.

A workload is never admitted alone: its controller later creates Pods from the stored pod
template, and those Pods go through admission too. So every workload yields two requests:
the object itself (validators of pod templates, the DaemonSet template mutator) and the Pod
its controller would create from the object as stored (every Pod plugin). Before a Pod
reaches admission the API server fills in its namespace and copies container ``limits``
into missing ``requests`` (spec §0); both are reproduced here because plugins read them.

Mapping back: a Pod's ``spec…`` is the template's pod spec (``POD_SPEC_PATHS``) and its
``metadata.labels|annotations|finalizers…`` the template's ``metadata…``; nothing else of a
Pod exists in a template. ``mutate`` writes a Pod patch into the template through that map.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from webhooks.core.patch import escape
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.podspec import (
    DAEMON_SET,
    NODE,
    POD,
    POD_SPEC_PATHS,
    TEMPLATE_KINDS,
    GroupKind,
    dotted,
    spec_at,
)

Role = Literal["object", "pod"]


@dataclass(frozen=True, slots=True)
class KindInfo:
    """How the API serves a kind: group, resource, default version, whether namespaced."""

    group: str
    resource: str
    version: str
    namespaced: bool = True


#: Every kind ``check`` admits, by (group, kind): the template kinds and Nodes; anything
#: else (a kind of another group that takes a built-in's name included) is counted and
#: skipped.
KINDS: Mapping[GroupKind, KindInfo] = {
    **{key: KindInfo(key[0], kind.resource, "v1") for key, kind in TEMPLATE_KINDS.items()},
    NODE: KindInfo("", "nodes", "v1", namespaced=False),
}

#: The admitted kinds by name alone, for where users name one without its group (a policy
#: test's expectations): the name means the built-in.
KIND_NAMES: Mapping[str, KindInfo] = {kind: info for (_, kind), info in KINDS.items()}

#: Kinds that only supply cluster context (what plugins look up), never admitted here.
CONTEXT_KINDS: frozenset[GroupKind] = frozenset(
    {
        ("", "Namespace"),
        ("node.k8s.io", "RuntimeClass"),
        ("resource.k8s.io", "DeviceClass"),
        ("resource.k8s.io", "ResourceClaim"),
        ("resource.k8s.io", "ResourceClaimTemplate"),
    }
)

_SYSTEM_SA = "system:serviceaccount:kube-system:"
#: Who creates a workload's Pods, as kube-controller-manager's service accounts; why: a
#: plugin may treat requests from controllers differently from a user's.
_CONTROLLERS: Mapping[GroupKind, tuple[str, str]] = {
    # workload kind → (owner kind written on the Pod, controller service account)
    ("apps", "Deployment"): ("ReplicaSet", "replicaset-controller"),
    ("apps", "ReplicaSet"): ("ReplicaSet", "replicaset-controller"),
    ("apps", "StatefulSet"): ("StatefulSet", "statefulset-controller"),
    DAEMON_SET: ("DaemonSet", "daemon-set-controller"),
    ("batch", "Job"): ("Job", "job-controller"),
    ("batch", "CronJob"): ("Job", "job-controller"),
    ("", "ReplicationController"): ("ReplicationController", "replication-controller"),
}
_OWNER_API = {"ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1"}
_OWNER_API.update({"Job": "batch/v1", "ReplicationController": "v1"})
_TEMPLATE_METADATA = ("labels", "annotations", "finalizers")


@dataclass(frozen=True, slots=True)
class Target:
    """One admission request for a manifest, and whose view it is (the object, its Pods)."""

    role: Role
    request: AdmissionRequest


def name_of(obj: Mapping[str, Any]) -> str:
    """``metadata.name`` or ``""``; why: manifests are user input and may omit it."""
    meta = obj.get("metadata")
    value = meta.get("name") if isinstance(meta, Mapping) else None
    return value if isinstance(value, str) else ""


def namespace_of(obj: Mapping[str, Any], fallback: str) -> str:
    """The object's own namespace, else ``fallback``; the API server fills it the same way."""
    meta = obj.get("metadata")
    value = meta.get("namespace") if isinstance(meta, Mapping) else None
    return value if isinstance(value, str) and value else fallback


def with_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    """``obj`` with ``metadata.namespace`` set (copy-on-write); a no-op when already set.

    Why: admission receives objects whose namespace the API server took from the request
    path, while manifests commonly leave it to ``kubectl -n``.
    """
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    if meta.get("namespace") == namespace:
        return obj
    return {**obj, "metadata": {**meta, "namespace": namespace}}


def default_requests(pod: dict[str, Any]) -> dict[str, Any]:
    """Copy container and init-container ``limits`` into missing ``requests`` (spec §0).

    Why only this piece of API defaulting: it is the one admission plugins depend on
    (extended resources requested only through limits); containers are copied only when
    something is added, so the input is never modified.
    """
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return pod
    new_spec: dict[str, Any] | None = None
    for key in ("containers", "initContainers"):
        items = spec.get(key)
        if not isinstance(items, list):
            continue
        new_items: list[Any] | None = None
        for i, container in enumerate(items):
            resources = container.get("resources") if isinstance(container, dict) else None
            limits = resources.get("limits") if isinstance(resources, dict) else None
            if not isinstance(limits, dict) or not limits:
                continue
            requests = resources.get("requests")  # type: ignore[union-attr]
            requests = requests if isinstance(requests, dict) else {}
            missing = {k: v for k, v in limits.items() if k not in requests}
            if not missing:
                continue
            new_items = new_items if new_items is not None else list(items)
            new_resources = {**resources, "requests": {**requests, **missing}}  # type: ignore[dict-item]
            new_items[i] = {**container, "resources": new_resources}
        if new_items is not None:
            new_spec = new_spec if new_spec is not None else dict(spec)
            new_spec[key] = new_items
    return pod if new_spec is None else {**pod, "spec": new_spec}


def pod_from(workload: Mapping[str, Any], kind: GroupKind, namespace: str) -> dict[str, Any] | None:
    """The Pod ``workload``'s controller would create from its template, before admission.

    Template labels, annotations and finalizers are carried over, the namespace is the
    workload's, the name is generated from the workload's (``web-0`` for a StatefulSet),
    and a controller ``ownerReference`` names the owner kind the controller writes, which is
    how plugins recognise, for example, DaemonSet Pods. A template missing or null (or an
    object above it) is an empty one, as the API server decodes the workload into typed
    structs, so the Pods' changes agree with the workload's own (the DaemonSet defaults
    create a template as well); ``None`` when something on the way is not an object.
    """
    path = POD_SPEC_PATHS.get(kind)
    if path is None or kind == POD:
        return None
    template = spec_at(workload, path[:-1])
    spec = spec_at(workload, path)
    if template is None or spec is None:
        return None
    source_meta = template.get("metadata")
    source_meta = source_meta if isinstance(source_meta, Mapping) else {}
    name = name_of(workload)
    meta: dict[str, Any] = {"namespace": namespace}
    if kind == ("apps", "StatefulSet"):
        meta["name"] = f"{name}-0"
    else:
        meta["generateName"] = f"{name}-"
    meta.update((k, source_meta[k]) for k in _TEMPLATE_METADATA if k in source_meta)
    owner = _CONTROLLERS.get(kind)
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": _OWNER_API[owner[0]],
                "kind": owner[0],
                "name": name,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
    }
    return default_requests(pod)


def request_for(
    obj: dict[str, Any], kind: GroupKind, namespace: str, user: Mapping[str, Any] | None = None
) -> AdmissionRequest:
    """A CREATE request for ``obj`` as the API server would send it to the webhooks.

    Plugins filter on group and resource, so those come from :data:`KINDS`. The version is
    the object's when it is of the kind's own group (a legacy group's is not served).
    """
    info = KINDS[kind]
    api_version = obj.get("apiVersion")
    version = info.version
    if isinstance(api_version, str):
        group, _, ver = api_version.rpartition("/")
        if group == info.group and ver:
            version = ver
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return AdmissionRequest(
        uid="offline-check",
        operation="CREATE",
        group=info.group,
        version=version,
        kind=kind[1],
        resource=info.resource,
        sub_resource="",
        namespace=namespace if info.namespaced else "",
        name=name if isinstance(name, str) else "",
        object=obj,
        user=dict(user or {}),
        kind_group=info.group,
    )


def controller_user(kind: GroupKind) -> dict[str, Any]:
    """The controller's identity when it creates ``kind``'s Pods (empty for PodTemplates).

    Plugins may treat requests from kube-controller-manager differently from a user's.
    """
    owner = _CONTROLLERS.get(kind)
    if owner is None:
        return {}
    return {
        "username": _SYSTEM_SA + owner[1],
        "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system"],
    }


def object_target(
    obj: dict[str, Any], kind: GroupKind, namespace: str, user: Mapping[str, Any] | None = None
) -> Target:
    """The request for the manifest itself (namespace filled in; Pods defaulted).

    Validators of pod templates and the DaemonSet template mutator act on this one.
    ``user`` is who sends it, when known (the controller that created a live Pod).
    """
    view = with_namespace(obj, namespace) if KINDS[kind].namespaced else obj
    if kind == POD:
        view = default_requests(view)
    return Target("object", request_for(view, kind, namespace, user))


def pod_target(stored: dict[str, Any], kind: GroupKind, namespace: str) -> Target | None:
    """The request for the Pod created from ``stored`` (the workload as admission kept it).

    Every Pod plugin acts on this one; ``None`` for kinds that create no Pods.
    """
    pod = pod_from(stored, kind, namespace)
    if pod is None:
        return None
    return Target("pod", request_for(pod, POD, namespace, controller_user(kind)))


def template_field(kind: GroupKind, pod_field: str) -> str:
    """Map a Pod field path onto ``kind``'s template: ``spec.x`` → ``spec.template.spec.x``.

    Why: validators on the expanded Pod report Pod paths, while the user must be pointed at
    the template line they wrote. Paths with no template counterpart map to the template.
    """
    path = POD_SPEC_PATHS.get(kind)
    if path is None or kind == POD:
        return pod_field
    template = dotted(path[:-1])
    head, sep, rest = pod_field.partition(".")
    head_only = head.split("[", 1)[0]
    if head_only == "spec":
        return dotted(path) + pod_field[len("spec") :]
    if head_only == "metadata" and rest.split("[", 1)[0].split(".", 1)[0] in _TEMPLATE_METADATA:
        return f"{template}.{pod_field}" if sep else template
    return template


def template_pointer(kind: GroupKind, pod_pointer: str) -> str | None:
    """Map a Pod JSON Pointer onto ``kind``'s template, or ``None`` when it has no place.

    ``/spec/…`` → ``<pod spec path>/…``; ``/metadata/labels|annotations|finalizers…`` →
    ``<template>/metadata/…``. Anything else (name, ownerReferences, status) is the
    controller's or the API server's business, not the template's.
    """
    path = POD_SPEC_PATHS.get(kind)
    if path is None or kind == POD:
        return pod_pointer
    spec = "".join("/" + escape(p) for p in path)
    parts = pod_pointer.split("/")
    if len(parts) >= 2 and parts[1] == "spec":
        return spec + pod_pointer[len("/spec") :]
    if len(parts) >= 3 and parts[1] == "metadata" and parts[2] in _TEMPLATE_METADATA:
        return spec[: -len("/spec")] + pod_pointer
    return None
