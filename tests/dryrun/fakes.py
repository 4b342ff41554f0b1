"""Stand-in plugins with the coverage shapes of the real ones, for engine tests.

The engine must be generic over the registry, so its tests use plugins written here: a
validator of every pod template, a Pod-only validator, a Node validator, a DaemonSet
template-and-pod mutator, and a mutator that never converges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.core.patch import Editor
from webhooks.core.plugin import (
    PODS,
    ClusterView,
    Context,
    Mutator,
    Plugin,
    Registry,
    Validator,
)
from webhooks.core.result import UNCHANGED, Result, Violation
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.podspec import (
    DAEMON_SET,
    POD_SPEC_PATHS,
    TEMPLATE_RESOURCES,
    dotted,
    get_path,
    group_kind,
)
from webhooks.plugins import ORDER

BOTH = frozenset({"CREATE", "UPDATE"})
TEMPLATES = frozenset(TEMPLATE_RESOURCES)
NODES = frozenset({("", "nodes")})
DAEMONSETS = frozenset({("apps", "daemonsets")})
SPREAD = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class Nothing:
    """No settings."""


def lower_keys(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> list[Violation]:
    """Toleration keys must be lower case, in Pods and every pod template."""
    path = POD_SPEC_PATHS[group_kind(obj) or ("", "")]
    spec = get_path(obj, path) or {}
    return [
        Violation(
            f"{dotted(path, 'tolerations', i, 'key')}: must be lower case",
            dotted(path, "tolerations", i, "key"),
        )
        for i, t in enumerate(spec.get("tolerations") or [])
        if t.get("key", "") != t.get("key", "").lower()
    ]


def hostname_only(req: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> list[Violation]:
    """Required anti-affinity must use the hostname topology (Pods only, like upstream)."""
    terms = (((pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or []
    return [
        Violation(
            f"topologyKey {t.get('topologyKey')} is not allowed", f"{SPREAD}[{i}].topologyKey"
        )
        for i, t in enumerate(terms)
        if t.get("topologyKey") != "kubernetes.io/hostname"
    ]


def taint_effects(req: AdmissionRequest, node: dict[str, Any], ctx: Context) -> list[Violation]:
    """Taint effects must be known; paths under metadata.taints, as upstream reports them."""
    taints = (node.get("spec") or {}).get("taints") or []
    return [
        Violation(f"unsupported effect {t.get('effect')}", f"metadata.taints[{i}].effect")
        for i, t in enumerate(taints)
        if t.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute")
    ]


DS_TOLERATION = {
    "key": "node.kubernetes.io/unschedulable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def daemon_defaults(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
    """Add one default toleration to DaemonSet templates and to Pods a DaemonSet owns."""
    if obj.get("kind") == "Pod":
        owners = (obj.get("metadata") or {}).get("ownerReferences") or []
        if not any(o.get("kind") == "DaemonSet" and o.get("controller") for o in owners):
            return UNCHANGED
        path: tuple[str, ...] = ("spec",)
    else:
        path = POD_SPEC_PATHS[DAEMON_SET]
    editor = Editor(obj)
    tolerations = editor.get((*path, "tolerations"), [])
    if DS_TOLERATION in tolerations:
        return UNCHANGED
    editor.set((*path, "tolerations"), [*tolerations, DS_TOLERATION])
    return Result(editor.obj, editor.patch, audit={"daemon-defaults": "added unschedulable"})


def restless(req: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> Result:
    """Bump a counter annotation on every pass: a mutator that never converges."""
    editor = Editor(pod)
    count = int(editor.get(("metadata", "annotations", "passes"), "0"))
    editor.set(("metadata", "annotations", "passes"), str(count + 1))
    return Result(editor.obj, editor.patch)


def sandboxed(req: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> list[Violation]:
    """Pods naming a RuntimeClass must find it in the cluster context."""
    name = (pod.get("spec") or {}).get("runtimeClassName")
    if name and ctx.cluster.runtime_class(name) is None:
        return [Violation(f'RuntimeClass "{name}" not found', "spec.runtimeClassName")]
    return []


LOWER_KEYS = Plugin(
    "lower-keys",
    "Toleration keys are lower case.",
    Nothing,
    validate=Validator(lower_keys, TEMPLATES, BOTH),
)
HOSTNAME_ONLY = Plugin(
    "hostname-only",
    "Hard anti-affinity per host only.",
    Nothing,
    validate=Validator(hostname_only, frozenset({PODS}), BOTH),
)
TAINT_EFFECTS = Plugin(
    "taint-effects",
    "Node taint effects are known.",
    Nothing,
    validate=Validator(taint_effects, NODES, BOTH),
)
DAEMON_DEFAULTS = Plugin(
    "daemon-defaults",
    "DaemonSet default tolerations.",
    Nothing,
    mutate=Mutator(daemon_defaults, DAEMONSETS | {PODS}, BOTH),
)
#: Marked as an in-tree plugin's twin, so it runs once per chain, as upstream's do.
RESTLESS = Plugin(
    "restless",
    "Never converges.",
    Nothing,
    mutate=Mutator(restless, frozenset({PODS}), BOTH),
    upstream="Restless",
)
SANDBOXED = Plugin(
    "sandboxed",
    "RuntimeClass must exist.",
    Nothing,
    validate=Validator(sandboxed, frozenset({PODS}), BOTH),
)

#: The real plugins of this tree, then the stand-ins (validators after mutators still hold
#: within each phase because the chain runs every mutator before any validator).
FAKES = (DAEMON_DEFAULTS, LOWER_KEYS, HOSTNAME_ONLY, TAINT_EFFECTS, SANDBOXED)


def admission(
    *extra: Plugin,
    cluster: ClusterView | None = None,
    real: bool = True,
    config: dict[str, Any] | None = None,
) -> Admission:
    """An :class:`Admission` over this tree's plugins (when ``real``) plus ``extra``."""
    registry = Registry([*(ORDER if real else ()), *extra])
    return Admission(registry, load_config(config, registry), cluster)
