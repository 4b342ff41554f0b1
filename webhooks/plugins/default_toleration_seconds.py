"""default-toleration-seconds: the DefaultTolerationSeconds admission plugin (spec §2).

Why it exists: pods without a not-ready/unreachable NoExecute toleration would be evicted
the instant their node fails; upstream gives them a bounded grace period (300 s by default)
so short node blips do not reschedule every pod. Managed clusters that replace the in-tree
plugin, or tune its flags, need exactly the same rule.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, Mutator, Plugin
from webhooks.core.result import UNCHANGED, Result
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.tolerations import NO_EXECUTE, covers_no_execute, describe, tolerations_of

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"


@dataclass(frozen=True, slots=True)
class Settings:
    """Upstream's two kube-apiserver flags; no range check, as upstream (0 and negatives pass)."""

    not_ready_seconds: int = 300
    unreachable_seconds: int = 300


@functools.lru_cache(maxsize=8)
def _defaults(not_ready: int, unreachable: int) -> tuple[tuple[str, dict[str, Any], str], ...]:
    """(taint key, toleration, description) for not-ready then unreachable, built once."""
    out = []
    for key, seconds in ((NOT_READY, not_ready), (UNREACHABLE, unreachable)):
        toleration: dict[str, Any] = {"key": key, "operator": "Exists", "effect": NO_EXECUTE}
        toleration["tolerationSeconds"] = seconds
        out.append((key, toleration, describe(toleration)))
    return tuple(out)


def mutate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> Result:
    """Append the not-ready, then the unreachable, NoExecute toleration when not covered.

    Existing entries are never modified or reordered; coverage uses the loose §1a test.
    """
    settings: Settings = ctx.settings
    spec = pod.get("spec")
    if spec is not None and not isinstance(spec, dict):
        return UNCHANGED  # a spec that is not an object cannot be read, so it is not "fixed"
    tolerations = tolerations_of(spec) if spec is not None else []
    if tolerations is None:
        return UNCHANGED
    missing = []
    for key, toleration, text in _defaults(
        settings.not_ready_seconds, settings.unreachable_seconds
    ):
        for t in tolerations:
            if isinstance(t, dict) and covers_no_execute(t, key):
                break
        else:
            missing.append((toleration, text))
    if not missing:
        return UNCHANGED
    editor = Editor(pod)
    # Copies: the cached dicts must never end up inside an object someone may edit.
    editor.set(("spec", "tolerations"), [*tolerations, *(dict(t) for t, _ in missing)])
    summary = "added " + ", ".join(text for _, text in missing)
    return Result(editor.obj, editor.patch, audit={PLUGIN.name: summary})


PLUGIN = Plugin(
    name="default-toleration-seconds",
    summary="Adds not-ready/unreachable NoExecute tolerations with a bounded grace period.",
    settings=Settings,
    mutate=Mutator(mutate, frozenset({PODS}), frozenset({"CREATE", "UPDATE"})),
    wrong_kind="expected *api.Pod but got {kind}",
    upstream="DefaultTolerationSeconds",
)
