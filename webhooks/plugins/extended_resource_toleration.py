"""extended-resource-toleration: the ExtendedResourceToleration admission plugin (spec §3).

Why it exists: operators taint GPU and other device nodes with the resource's name so that
only pods requesting that resource land there; this plugin gives exactly those pods the
matching toleration, so users never have to write it by hand.

The taint only keeps pods off if nobody else tolerates it, so ``enforce`` (off by default,
beyond upstream) adds a validating half: on CREATE and UPDATE it denies a pod with a
toleration whose key is an extended resource name that none of its containers or init
containers requests, outside ``exemptNamespaces`` (default ``kube-system``). GPU nodes then
stay free for GPU pods. Wildcard tolerations have an empty key and are left to
dedicated-nodes' enforcement. On UPDATE only tolerations the old pod lacked are judged, so
existing pods can still be relabelled or finalised; mirror pods of static pods are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, Mutator, Plugin, Validator
from webhooks.core.result import UNCHANGED, Result, Violation
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.names import is_extended_resource_name
from webhooks.k8s.podspec import is_mirror_pod, resource_names
from webhooks.k8s.tolerations import (
    NO_SCHEDULE,
    add_or_update,
    describe,
    identity,
    previous_identities,
    tolerations_of,
)


@dataclass(frozen=True, slots=True)
class Settings:
    """Upstream has no settings; ``enforce`` switches the validating half's check on.

    ``exemptNamespaces`` (default ``[kube-system]``) is an exception for the validating
    half, handled by the chain like every exception.
    """

    enforce: bool = False


def wanted_tolerations(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One Exists/NoSchedule toleration per extended resource requested, sorted byte-wise.

    Limits count as requests (API defaulting, spec §0); quantities are irrelevant.
    """
    names = sorted(
        (n for n in resource_names(spec) if is_extended_resource_name(n)),
        key=lambda n: n.encode(),
    )
    return [{"key": n, "operator": "Exists", "effect": NO_SCHEDULE} for n in names]


def mutate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> Result:
    """Add or update each wanted toleration with AddOrUpdateTolerationInPodSpec (§1b)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return UNCHANGED
    wanted = wanted_tolerations(spec)
    tolerations = tolerations_of(spec)
    if not wanted or tolerations is None:
        return UNCHANGED
    result = tolerations
    for toleration in wanted:
        result = add_or_update(result, toleration)
    editor = Editor(pod)
    editor.set(("spec", "tolerations"), result)
    if not editor.changed:
        return UNCHANGED
    added = [t for t in wanted if t not in tolerations]
    summary = "added " + ", ".join(describe(t) for t in added)
    return Result(editor.obj, editor.patch, audit={PLUGIN.name: summary})


def validate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> list[Violation]:
    """With ``enforce``: deny tolerations of extended-resource taints the pod does not request.

    Why: a device taint keeps other pods off only while nobody tolerates it by hand; a pod
    that tolerates ``nvidia.com/gpu`` without requesting it can take a GPU node's CPU and
    memory and leave a GPU pod Pending.
    """
    settings: Settings = ctx.settings
    if not settings.enforce:
        return []
    spec = pod.get("spec")
    if not isinstance(spec, dict) or is_mirror_pod(pod):
        return []
    tolerations = tolerations_of(spec) or []
    requested = resource_names(spec)
    old = previous_identities(request.operation, request.old_object)
    violations = []
    for index, toleration in enumerate(tolerations):
        if not isinstance(toleration, dict) or identity(toleration) in old:
            continue
        key = identity(toleration)[0]
        if key and key not in requested and is_extended_resource_name(key):
            violations.append(
                Violation(
                    f"toleration {describe(toleration)} lets this pod onto nodes reserved for "
                    f"{key}, but no container requests {key}: request it in "
                    "resources.requests or limits, or remove the toleration",
                    f"spec.tolerations[{index}].key",
                )
            )
    return violations


def enforcing(settings: Settings) -> bool:
    """Whether the validating half checks anything: only with ``enforce``.

    Why the chain asks: with enforcement off there is nothing for ``exemptNamespaces`` to
    exempt, so no exception may be reported as skipping this plugin.
    """
    return settings.enforce


PLUGIN = Plugin(
    name="extended-resource-toleration",
    summary="Tolerates the taint named after each extended resource a pod requests.",
    settings=Settings,
    mutate=Mutator(mutate, frozenset({PODS}), frozenset({"CREATE", "UPDATE"})),
    validate=Validator(
        validate, frozenset({PODS}), frozenset({"CREATE", "UPDATE"}), active=enforcing
    ),
    wrong_kind="expected *core.Pod but got {kind}",
    upstream="ExtendedResourceToleration",
    exempt_namespaces=("kube-system",),
)
