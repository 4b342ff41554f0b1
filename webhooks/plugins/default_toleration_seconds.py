"""default-toleration-seconds: the DefaultTolerationSeconds admission plugin (spec §2).

Why it exists: pods without a not-ready/unreachable NoExecute toleration would be evicted
the instant their node fails; upstream gives them a bounded grace period (300 s by default)
so short node blips do not reschedule every pod. Managed clusters that replace the in-tree
plugin, or tune its flags, need exactly the same rule.

Beyond upstream, off by default (``namespaceOverrides: true`` turns it on): a Namespace may
set its own failover time with the annotations :data:`NOT_READY_ANNOTATION` and
:data:`UNREACHABLE_ANNOTATION` (a non-negative integer of seconds). Upstream has no
per-namespace knob that works: a shorter ``defaultTolerations`` entry of
PodTolerationRestriction is absorbed by the 300 s entry DefaultTolerationSeconds added
before it. So, with the setting on:

* the toleration this plugin appends carries the namespace's seconds;
* on CREATE, the first entry covering the taint, when it is *exactly* equal to the cluster
  default (``Exists``, ``NoExecute``, no value, ``tolerationSeconds`` equal to
  ``notReadySeconds``/``unreachableSeconds``), is taken for the one the in-tree plugin
  added before any webhook ran, and its seconds are rewritten to the namespace's, with
  those of its exact duplicates. Any other entry, such as one the user wrote with other
  seconds, is left alone, and nothing is rewritten on UPDATE;
* an annotation that is not a non-negative integer is ignored (the cluster default
  applies); the audit annotation says so and the notice :data:`INVALID_ANNOTATION` counts it;
* the Namespace is looked up only when there is something to add or rewrite; a missing one
  means no override, and a lookup that cannot complete fails the request, as for every
  plugin that reads Namespaces.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, Mutator, Plugin
from webhooks.core.result import UNCHANGED, Result
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.namespaces import annotations_of
from webhooks.k8s.podspec import spec_at
from webhooks.k8s.tolerations import (
    EXISTS,
    NO_EXECUTE,
    covers_no_execute,
    describe,
    identity,
    tolerations_of,
)

NAME = "default-toleration-seconds"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY_ANNOTATION = "placement-webhooks.io/not-ready-seconds"
UNREACHABLE_ANNOTATION = "placement-webhooks.io/unreachable-seconds"
#: The notice (a decision the metrics count) for an annotation that is ignored.
INVALID_ANNOTATION = "invalid_annotation"
_SECONDS = f"{NAME}/seconds"  # the derived value's name, built once

#: What a Namespace annotation must look like: decimal digits, as ``kubectl annotate`` writes
#: a number; the bound keeps the value within what ``tolerationSeconds`` (int64) can hold.
_SECONDS_RE = re.compile(r"[0-9]{1,18}")


@dataclass(frozen=True, slots=True)
class Settings:
    """Upstream's two kube-apiserver flags (no range check, as upstream: 0 and negatives
    pass), and whether Namespace annotations may override them (ours; off by default)."""

    not_ready_seconds: int = 300
    unreachable_seconds: int = 300
    namespace_overrides: bool = False


@functools.lru_cache(maxsize=8)
def _defaults(not_ready: int, unreachable: int) -> tuple[tuple[str, dict[str, Any], str], ...]:
    """(taint key, toleration, description) for not-ready then unreachable, built once."""
    out = []
    for key, seconds in ((NOT_READY, not_ready), (UNREACHABLE, unreachable)):
        toleration: dict[str, Any] = {"key": key, "operator": EXISTS, "effect": NO_EXECUTE}
        toleration["tolerationSeconds"] = seconds
        out.append((key, toleration, describe(toleration)))
    return tuple(out)


def _toleration(key: str, seconds: int) -> dict[str, Any]:
    return {"key": key, "operator": EXISTS, "effect": NO_EXECUTE, "tolerationSeconds": seconds}


def _is_default(toleration: Any, key: str, seconds: int) -> bool:
    """Whether ``toleration`` is exactly the one DefaultTolerationSeconds adds for ``key``."""
    if not isinstance(toleration, dict) or identity(toleration) != (key, EXISTS, "", NO_EXECUTE):
        return False
    value = toleration.get("tolerationSeconds")
    return isinstance(value, int) and not isinstance(value, bool) and value == seconds


@dataclass(frozen=True, slots=True)
class Overrides:
    """The seconds a Namespace asks for (``None``: the cluster default) and what to report."""

    not_ready: int | None = None
    unreachable: int | None = None
    problems: tuple[str, ...] = ()

    def seconds(self, key: str, default: int) -> tuple[int, str]:
        """The seconds for taint ``key`` and where they come from (``""``: the default).

        Why the origin: the audit annotation must say a namespace changed the default.
        """
        found = self.not_ready if key == NOT_READY else self.unreachable
        if found is None:
            return default, ""
        annotation = NOT_READY_ANNOTATION if key == NOT_READY else UNREACHABLE_ANNOTATION
        return found, f" from namespace annotation {annotation}"


def _read(
    namespace: Any,
) -> tuple[dict[str, int | None], tuple[tuple[str, Any], ...], Overrides | None]:
    """The seconds each annotation asks for (``None``: absent or unusable), the unusable
    ones as written, and, when none is unusable, the :class:`Overrides` itself (nothing in
    it then depends on the request); read once per Namespace version
    (:mod:`webhooks.core.derived`)."""
    found = annotations_of(namespace)
    values: dict[str, int | None] = {}
    unusable: list[tuple[str, Any]] = []
    for annotation in (NOT_READY_ANNOTATION, UNREACHABLE_ANNOTATION):
        raw = found.get(annotation)
        values[annotation] = None
        if raw is None:
            continue
        if isinstance(raw, str) and _SECONDS_RE.fullmatch(raw):
            values[annotation] = int(raw)
            continue
        unusable.append((annotation, raw))
    if unusable:
        return values, tuple(unusable), None
    return values, (), Overrides(values[NOT_READY_ANNOTATION], values[UNREACHABLE_ANNOTATION])


def namespace_overrides(request: AdmissionRequest, ctx: Context) -> Overrides:
    """The failover seconds the pod's Namespace annotates, each checked on its own.

    Why a bad value is ignored rather than refused: the annotation belongs to whoever owns
    the Namespace, not to the user creating the pod, and the cluster default is a safe
    answer; the problem is reported in the audit annotation and counted instead.
    """
    namespace = ctx.cluster.namespace(request.namespace)
    values, unusable, usable = ctx.derived.of("Namespace", namespace, _SECONDS, _read)
    if usable is not None:
        return usable  # frozen, so one shared value serves every review
    problems = tuple(
        f"ignored namespace {request.namespace!r} annotation {annotation}={raw!r}: "
        "not a non-negative integer of seconds, so the cluster default applies"
        for annotation, raw in unusable
    )
    return Overrides(values[NOT_READY_ANNOTATION], values[UNREACHABLE_ANNOTATION], problems)


@functools.lru_cache(maxsize=4096)
def _appended(key: str, seconds: int, origin: str) -> tuple[dict[str, Any], str]:
    """The toleration appended for ``key`` with a Namespace's ``seconds``, and its audit text.

    Why kept: every pod of a Namespace gets the same one, and describing it was a tenth of
    this half's cost. Bounded: two keys, two origins, seconds of at most 18 digits.
    """
    toleration = _toleration(key, seconds)
    return toleration, f"{describe(toleration)}{origin}"


def _uncovered(
    tolerations: list[Any],
    defaults: tuple[tuple[str, dict[str, Any], str], ...],
    overrides: bool,
) -> tuple[list[tuple[str, dict[str, Any], str]], list[tuple[int, str, int]]]:
    """The defaults no toleration covers; with ``overrides``, the covering entries equal
    to the default (index, key, seconds), which a Namespace's seconds may replace."""
    missing: list[tuple[str, dict[str, Any], str]] = []
    rewritable: list[tuple[int, str, int]] = []
    for key, toleration, text in defaults:
        for index, t in enumerate(tolerations):
            if isinstance(t, dict) and covers_no_execute(t, key):
                # Only the covering entry can be the in-tree plugin's: it adds one when none
                # covers the taint, so a later entry equal to the default is the user's,
                # unless it is the same toleration again: a duplicate left at the default
                # would be kept by PodTolerationRestriction's merge in place of the shorter
                # one, and the next pass would rewrite the same entry again.
                seconds = toleration["tolerationSeconds"]
                if overrides and _is_default(t, key, seconds):
                    rewritable.extend(
                        (later, key, seconds)
                        for later in range(index, len(tolerations))
                        if _is_default(tolerations[later], key, seconds)
                    )
                break
        else:
            missing.append((key, toleration, text))
    return missing, rewritable


def mutate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> Result:
    """Append the not-ready, then the unreachable, NoExecute toleration when not covered.

    Existing entries are never modified or reordered; coverage uses the loose §1a test.
    With ``namespaceOverrides`` the Namespace's seconds replace the default in what is
    appended and, on CREATE, in an entry exactly equal to the default (the module
    docstring says why).
    """
    settings: Settings = ctx.settings
    spec = spec_at(pod)  # a missing spec is an empty one, as the API server decodes it
    if spec is None:
        return UNCHANGED  # a spec that is not an object cannot be read, so it is not "fixed"
    tolerations = tolerations_of(spec)
    if tolerations is None:
        return UNCHANGED
    defaults = _defaults(settings.not_ready_seconds, settings.unreachable_seconds)
    missing, rewritable = _uncovered(tolerations, defaults, settings.namespace_overrides)
    if not missing and not (rewritable and request.operation == "CREATE"):
        return UNCHANGED
    editor = Editor(pod)
    if not settings.namespace_overrides:  # upstream's rule alone: the path of nearly every pod
        editor.set(("spec", "tolerations"), [*tolerations, *(dict(t) for _, t, _ in missing)])
        summary = "added " + ", ".join(text for _, _, text in missing)
        return Result(editor.obj, editor.patch, audit={NAME: summary})
    overrides = namespace_overrides(request, ctx)
    parts: list[str] = []
    if request.operation == "CREATE":
        for index, key, default in rewritable:
            seconds, origin = overrides.seconds(key, default)
            if seconds != default:
                editor.set(("spec", "tolerations", index, "tolerationSeconds"), seconds)
                text = f"set {key}:NoExecute to {seconds}s{origin}, for the default {default}s"
                if text not in parts:  # its duplicates are the same change
                    parts.append(text)
    added: list[dict[str, Any]] = []
    texts: list[str] = []
    for key, standard, standard_text in missing:
        seconds, origin = overrides.seconds(key, standard["tolerationSeconds"])
        toleration, text = _appended(key, seconds, origin) if origin else (standard, standard_text)
        # Copies: the cached dicts must never end up inside an object someone may edit.
        added.append(dict(toleration))
        texts.append(text)
    if added:
        current = editor.get(("spec", "tolerations"), [])
        editor.set(("spec", "tolerations"), [*current, *added])
        parts.append("added " + ", ".join(texts))
    audit = "; ".join([*parts, *overrides.problems])
    notices = (INVALID_ANNOTATION,) if overrides.problems else ()
    if not editor.changed:
        return Result(audit={NAME: audit}, notices=notices) if audit else UNCHANGED
    return Result(editor.obj, editor.patch, audit={NAME: audit}, notices=notices)


PLUGIN = Plugin(
    name=NAME,
    summary="Adds not-ready/unreachable NoExecute tolerations with a bounded grace period.",
    settings=Settings,
    mutate=Mutator(mutate, frozenset({PODS}), frozenset({"CREATE", "UPDATE"})),
    wrong_kind="expected *api.Pod but got {kind}",
    upstream="DefaultTolerationSeconds",
)
