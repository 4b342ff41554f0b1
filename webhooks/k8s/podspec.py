"""Where the pod spec lives inside each workload kind, and reading container resources.

Why one table: validators that check "every pod template" and the offline expansion of
workloads into Pods must agree on the paths, and the CLI maps those paths back to YAML lines.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from webhooks.k8s.mapping import MAPPING

PodSpecPath = tuple[str, ...]
#: A kind as the API knows it: (API group, kind); ``""`` is the core group.
GroupKind = tuple[str, str]
#: A resource as the API serves it: (API group, plural).
GroupResource = tuple[str, str]


@dataclass(frozen=True, slots=True)
class TemplateKind:
    """A built-in kind that carries a pod template: its resource and where the template is.

    ``template`` is the path of the pod template (``()`` for a Pod, which is its own);
    ``spec`` the path of the pod spec the template holds.
    """

    resource: str
    template: PodSpecPath

    @property
    def spec(self) -> PodSpecPath:
        """The path of the pod spec: the template's ``spec``."""
        return (*self.template, "spec")


POD: GroupKind = ("", "Pod")
DAEMON_SET: GroupKind = ("apps", "DaemonSet")

#: The built-in kinds that carry pod templates, by (group, kind). Why keyed by group: a
#: custom resource may reuse a built-in kind's name (an ``apps.kruise.io`` DaemonSet, a
#: ``batch.volcano.sh`` Job) with another shape and another controller, and nothing of
#: the built-in applies to it.
TEMPLATE_KINDS: Mapping[GroupKind, TemplateKind] = {
    POD: TemplateKind("pods", ()),
    ("apps", "Deployment"): TemplateKind("deployments", ("spec", "template")),
    ("apps", "ReplicaSet"): TemplateKind("replicasets", ("spec", "template")),
    ("apps", "StatefulSet"): TemplateKind("statefulsets", ("spec", "template")),
    DAEMON_SET: TemplateKind("daemonsets", ("spec", "template")),
    ("batch", "Job"): TemplateKind("jobs", ("spec", "template")),
    ("", "ReplicationController"): TemplateKind("replicationcontrollers", ("spec", "template")),
    ("batch", "CronJob"): TemplateKind("cronjobs", ("spec", "jobTemplate", "spec", "template")),
    ("", "PodTemplate"): TemplateKind("podtemplates", ("template",)),
}

#: (group, kind) → path of its pod spec (the Pod's own ``spec`` for a Pod).
POD_SPEC_PATHS: Mapping[GroupKind, PodSpecPath] = {
    key: kind.spec for key, kind in TEMPLATE_KINDS.items()
}

#: (group, resource) → the kind its objects carry, for the template kinds.
TEMPLATE_RESOURCES: Mapping[GroupResource, GroupKind] = {
    (key[0], kind.resource): key for key, kind in TEMPLATE_KINDS.items()
}

#: Groups that served a built-in kind before it moved, read as the built-in's group. Why:
#: ``extensions/v1beta1`` (and ``apps/v1beta1``/``v1beta2``, already in ``apps``) carried
#: Deployments, DaemonSets and ReplicaSets of the same shape, which the API server
#: converted to ``apps/v1``; whether such an ``apiVersion`` is still served is the schema
#: check's question, not this one.
LEGACY_GROUPS: Mapping[GroupKind, str] = {
    ("extensions", "Deployment"): "apps",
    ("extensions", "DaemonSet"): "apps",
    ("extensions", "ReplicaSet"): "apps",
}

#: The other built-in kind admission handles: Nodes (their taints).
NODE: GroupKind = ("", "Node")

#: The group a built-in kind name means when an object gives no ``apiVersion`` at all.
_UNVERSIONED: Mapping[str, str] = {kind: group for group, kind in (*TEMPLATE_KINDS, NODE)}


def group_of(api_version: object) -> str | None:
    """The API group of an ``apiVersion``: ``""`` for ``v1``, ``apps`` for ``apps/v1``.

    ``None`` when there is no usable ``apiVersion`` (absent, empty, not a string).
    """
    if not isinstance(api_version, str) or not api_version:
        return None
    group, _, _ = api_version.rpartition("/")
    return group


def group_kind(obj: Mapping[str, Any]) -> GroupKind | None:
    """An object's (group, kind), a legacy group read as the built-in's; ``None`` without a kind.

    An object with no ``apiVersion`` is taken for the built-in of its kind name (core for
    any other name): the API server refuses it anyway, and offline fragments written
    without one mean the built-in.
    """
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        return None
    group = group_of(obj.get("apiVersion"))
    if group is None:
        return (_UNVERSIONED.get(kind, ""), kind)
    return (LEGACY_GROUPS.get((group, kind), group), kind)


def foreign(key: GroupKind) -> bool:
    """Whether ``key`` is a kind of another group that takes the name of a built-in kind the
    webhooks admit (a template kind, or Node).

    Why worth a word of its own: such a kind is where a tool matching on names alone goes
    wrong, so reports name its group.
    """
    return key not in TEMPLATE_KINDS and key != NODE and key[1] in _UNVERSIONED


def kind_label(key: GroupKind) -> str:
    """How reports name a kind: ``Kind``, or ``Kind.group`` when the name alone would be
    read as a built-in of another group (``DaemonSet.apps.kruise.io``), as kubectl spells
    a kind qualified by its group."""
    group, kind = key
    return f"{kind}.{group}" if foreign(key) and group else kind


def pod_spec_path(key: GroupKind | None) -> PodSpecPath | None:
    """The path of the pod spec inside an object of kind ``key``, or ``None`` for other kinds."""
    return POD_SPEC_PATHS.get(key) if key is not None else None


def get_path(obj: Mapping[str, Any], path: PodSpecPath) -> dict[str, Any] | None:
    """Follow ``path`` through nested mappings; ``None`` when any step is missing or not a dict."""
    node: Any = obj
    for part in path:
        if not isinstance(node, MAPPING):
            return None
        node = node.get(part)
    return node if isinstance(node, dict) else None


def spec_at(obj: Mapping[str, Any], path: PodSpecPath = ("spec",)) -> dict[str, Any] | None:
    """The pod spec at ``path``: an empty one where it, or an object on the way, is missing
    or null; ``None`` where something on the way is not an object.

    Why missing reads as empty: the API server decodes a Pod, and a workload with its
    template, into typed structs before admission runs, so every plugin upstream meets a
    spec, if an empty one. A mutator that skipped a missing spec while another created one
    would make its change only on a second pass, and ``mutate`` run twice would differ.
    Callers write through an editor, which creates the missing objects.
    """
    node: Any = obj
    for part in path:
        if not isinstance(node, MAPPING):
            return None
        node = node.get(part)
        if node is None:
            return {}
    return node if isinstance(node, dict) else None


def dotted(path: PodSpecPath, *rest: str | int) -> str:
    """Render a field path the way Kubernetes error messages do: ``spec.tolerations[2].key``."""
    out = ".".join(path)
    for part in rest:
        out = f"{out}[{part}]" if isinstance(part, int) else (f"{out}.{part}" if out else part)
    return out


def containers(spec: Mapping[str, Any], *, init: bool = True) -> Iterator[Mapping[str, Any]]:
    """The pod spec's containers, then its init containers (sidecars included) when ``init``.

    Ephemeral containers are never included: they may not carry resources.
    """
    keys = ("containers", "initContainers") if init else ("containers",)
    for key in keys:
        items = spec.get(key)
        if isinstance(items, list):
            for item in items:
                if isinstance(item, MAPPING):
                    yield item


def resource_names(spec: Mapping[str, Any], *, include_limits: bool = True) -> set[str]:
    """Names of resources requested by containers and init containers.

    With ``include_limits`` a name that appears only under ``limits`` counts too. Why: the
    API server copies limits into missing requests before admission (spec §0), so the union
    is what admission sees, and manifests checked offline have not been through that.
    """
    # A tight loop on purpose: this runs for every pod on the request path.
    names: set[Any] = set()
    for key in ("containers", "initContainers"):
        items = spec.get(key)
        if not isinstance(items, list):
            continue
        for item in items:
            resources = item.get("resources") if isinstance(item, dict) else None
            if not resources or not isinstance(resources, dict):
                continue
            requests = resources.get("requests")
            if requests and isinstance(requests, dict):
                names.update(requests)
            if include_limits:
                limits = resources.get("limits")
                if limits and isinstance(limits, dict):
                    names.update(limits)
    return {n for n in names if isinstance(n, str)}


MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def is_mirror_pod(pod: Mapping[str, Any]) -> bool:
    """Whether ``pod`` is the kubelet's API mirror of a static pod.

    Why policy skips it: the static pod already runs on its node whatever admission says, so
    refusing or re-pinning the mirror only hides a running pod from the API.
    """
    metadata = pod.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, MAPPING) else None
    return isinstance(annotations, MAPPING) and MIRROR_POD_ANNOTATION in annotations
