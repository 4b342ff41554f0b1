"""extended-resource-toleration: the ExtendedResourceToleration admission plugin (spec §3).

Why it exists: operators taint GPU and other device nodes with the resource's name so that
only pods requesting that resource land there; this plugin gives exactly those pods the
matching toleration, so users never have to write it by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, Half, Plugin
from webhooks.core.result import UNCHANGED, Result
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.names import is_extended_resource_name
from webhooks.k8s.podspec import resource_names
from webhooks.k8s.tolerations import NO_SCHEDULE, add_or_update, describe, tolerations_of


@dataclass(frozen=True, slots=True)
class Settings:
    """No upstream settings; enforcement beyond upstream is added by its own issue."""


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


PLUGIN = Plugin(
    name="extended-resource-toleration",
    summary="Tolerates the taint named after each extended resource a pod requests.",
    settings=Settings,
    mutate=Half(mutate, frozenset({PODS}), frozenset({"CREATE", "UPDATE"})),
    wrong_kind="expected *core.Pod but got {kind}",
)
