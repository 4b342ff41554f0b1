"""pod-toleration-restriction: the PodTolerationRestriction admission plugin (spec §6).

Why it exists: in a cluster shared between tenants, a namespace may only tolerate the
taints its owner was granted, and its pods should get the tolerations they need without
writing them. Upstream does this with two namespace annotations, a JSON list of tolerations
each: ``scheduler.alpha.kubernetes.io/defaultTolerations`` (added to new pods) and
``scheduler.alpha.kubernetes.io/tolerationsWhitelist`` (everything a pod there may
tolerate). It is an opt-in kube-apiserver plugin that managed clusters do not let anyone
enable; this plugin is the same rule as a webhook, messages included.

Settings (``plugins.pod-toleration-restriction``; disabled by default, as upstream):

``defaultTolerations``        the cluster's defaults, for namespaces without the annotation.
``tolerationsWhitelist``      the cluster's whitelist, for namespaces without the annotation.
``memoryPressureToleration``  add ``node.kubernetes.io/memory-pressure:NoSchedule (Exists)`` to
                              every pod that is not BestEffort (``true``: upstream always
                              does while the plugin is on).

As upstream (current ``admission.go``):

* On CREATE the extras are the namespace's default tolerations (the annotation when
  present, even empty; otherwise the cluster's). On CREATE and UPDATE, a pod whose QoS class
  is not BestEffort also gets the memory-pressure toleration; the class is
  ``status.qosClass`` when set, else computed (pod-level resources decide when present).
* Whenever there are extras, the tolerations become MergeTolerations(pod, extras) (§1c),
  which also collapses the pod's own redundant entries.
* Then the whitelist: every toleration must be a §1c subset of a whitelist entry, else
  ``pod tolerations (possibly merged with namespace default tolerations) conflict with its
  <namespace|cluster> whitelist``, naming the whitelist that applied. That check ends the
  mutating step, as upstream's Admit ends with its Validate, and runs again on the final
  object in the validating phase, so tolerations a later plugin adds must be whitelisted
  too.

Where upstream has no offline answer: a Namespace that does not exist counts as one without
annotations, and an annotation that does not parse refuses the pod with a message naming
the namespace and the annotation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, Mutator, Plugin, Validator
from webhooks.core.result import UNCHANGED, Result, Violation
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.namespaces import (
    DEFAULT_TOLERATIONS_ANNOTATION,
    TOLERATIONS_WHITELIST_ANNOTATION,
    annotations_of,
)
from webhooks.k8s.podspec import spec_at
from webhooks.k8s.qos import is_best_effort
from webhooks.k8s.tolerations import (
    EXISTS,
    NO_SCHEDULE,
    Facts,
    TolerationList,
    decode_list,
    describe,
    facts,
    merge_read,
    normalize,
    tolerations_of,
)
from webhooks.k8s.validation import toleration_setting_problems

NAME = "pod-toleration-restriction"

#: Upstream's exact denial text (spec §6); ``{scope}`` is ``namespace`` or ``cluster``.
NOT_WHITELISTED = (
    "pod tolerations (possibly merged with namespace default tolerations) conflict with its "
    "{scope} whitelist"
)

MEMORY_PRESSURE: dict[str, Any] = {
    "key": "node.kubernetes.io/memory-pressure",
    "operator": EXISTS,
    "effect": NO_SCHEDULE,
}


@dataclass(frozen=True, slots=True)
class Settings:
    """Upstream's plugin configuration (``default``, ``whitelist``) plus the memory-pressure rule.

    Tolerations are checked at load with the Pod rules and stored as the API server stores
    them (empty fields omitted), so a merge never sees a difference that is not there.
    """

    default_tolerations: tuple[dict[str, Any], ...] = ()
    tolerations_whitelist: tuple[dict[str, Any], ...] = ()
    memory_pressure_toleration: bool = True

    def __post_init__(self) -> None:
        for name, attr in (
            ("defaultTolerations", "default_tolerations"),
            ("tolerationsWhitelist", "tolerations_whitelist"),
        ):
            items = getattr(self, attr)
            problems = toleration_setting_problems(items)
            if problems:
                raise ValueError(f"{name}: {'; '.join(problems)}")
            object.__setattr__(self, attr, tuple(normalize(t) for t in items))


class _Unreadable(ValueError):
    """A namespace annotation does not parse; the message names namespace and annotation."""


@dataclass(frozen=True, slots=True)
class Annotated:
    """A toleration-list annotation as read: the list (``None`` when the annotation is
    absent), or why it does not parse.

    Why a value with the failure in it: it is read once per Namespace version and kept
    (:mod:`webhooks.core.derived`), and an annotation that does not parse must give its
    error on every review that meets it.
    """

    tolerations: TolerationList | None = None
    error: str = ""
    #: ``tolerations`` and the memory-pressure toleration (default tolerations only): the
    #: extras of a pod that is not BestEffort, merged once here rather than per pod.
    with_memory: TolerationList | None = None


def _read(namespace: Any, key: str) -> Annotated:
    found = annotations_of(namespace)
    if key not in found:
        return Annotated()
    text = found[key]
    if not isinstance(text, str) or not text:
        return Annotated(TolerationList())
    try:
        return Annotated(TolerationList.of(decode_list(orjson.loads(text))))
    except orjson.JSONDecodeError as exc:
        return Annotated(error=f"not valid JSON: {exc}")
    except ValueError as exc:
        return Annotated(error=str(exc))


def _read_defaults(namespace: Any) -> Annotated:
    found = _read(namespace, DEFAULT_TOLERATIONS_ANNOTATION)
    if found.tolerations is None:
        return found
    return Annotated(found.tolerations, found.error, _with_memory(found.tolerations))


def _read_whitelist(namespace: Any) -> Annotated:
    return _read(namespace, TOLERATIONS_WHITELIST_ANNOTATION)


def _annotation(request: AdmissionRequest, ctx: Context, key: str) -> Annotated:
    """Annotation ``key`` as read: its tolerations are ``None`` when it is absent, empty
    when it is empty.

    Read once per Namespace version; the lists are shared (see :class:`TolerationList`).
    """
    read = _read_defaults if key == DEFAULT_TOLERATIONS_ANNOTATION else _read_whitelist
    found = ctx.derived.of(
        "Namespace", ctx.cluster.namespace(request.namespace), f"{NAME}/{key}", read
    )
    if found.error:
        raise _Unreadable(f"namespace {request.namespace!r} annotation {key}: {found.error}")
    return found


def _cluster_lists(settings: Settings) -> tuple[Annotated, TolerationList]:
    defaults = TolerationList.of(settings.default_tolerations)
    whitelisted = TolerationList.of(settings.tolerations_whitelist)
    return Annotated(defaults, with_memory=_with_memory(defaults)), whitelisted


def defaults(
    request: AdmissionRequest, ctx: Context, memory: bool = False
) -> tuple[TolerationList, str]:
    """The default tolerations for the pod's namespace, and where they came from; with
    ``memory``, the memory-pressure toleration after them.

    Why a present annotation wins even when empty: upstream falls back to the cluster's
    defaults only when the namespace has no annotation at all.
    """
    found = _annotation(request, ctx, DEFAULT_TOLERATIONS_ANNOTATION)
    origin = "namespace defaultTolerations"
    if found.tolerations is None:
        found, _ = ctx.derived.of("Settings", ctx.settings, f"{NAME}/cluster", _cluster_lists)
        origin = "cluster defaultTolerations"
    chosen = found.with_memory if memory else found.tolerations
    assert chosen is not None
    return chosen, origin


def whitelist(request: AdmissionRequest, ctx: Context) -> tuple[TolerationList, str]:
    """The whitelist for the pod's namespace and its scope (``namespace`` or ``cluster``).

    Why the scope: upstream names it in the denial, so a misspelt annotation (the cluster
    list applied instead) is visible in the message.
    """
    found = _annotation(request, ctx, TOLERATIONS_WHITELIST_ANNOTATION).tolerations
    if found is not None:
        return found, "namespace"
    _, cluster = ctx.derived.of("Settings", ctx.settings, f"{NAME}/cluster", _cluster_lists)
    return cluster, "cluster"


def _problems(
    request: AdmissionRequest,
    tolerations: Sequence[Any],
    ctx: Context,
    read: Sequence[Facts] | None = None,
) -> list[Violation]:
    """Upstream's Validate: every toleration within the effective whitelist, if any.

    ``read``, when given, is every toleration's facts, position by position (all entries
    are dicts then): a merge has read them already.
    """
    if not tolerations:
        return []
    try:
        allowed, scope = whitelist(request, ctx)
    except _Unreadable as exc:
        return [Violation(str(exc), "spec.tolerations")]
    if not allowed:
        return []
    for index, toleration in enumerate(tolerations):
        if read is not None:
            found = read[index]
        elif isinstance(toleration, dict):
            found = facts(toleration)
        else:
            continue
        if not allowed.covers(found):
            return [Violation(NOT_WHITELISTED.format(scope=scope), f"spec.tolerations[{index}]")]
    return []


def _with_memory(extras: TolerationList) -> TolerationList:
    return TolerationList.of([*extras.items, MEMORY_PRESSURE])


def _summary(before: Sequence[Any], after: Sequence[Any], origin: str, memory: bool) -> str:
    # By identity: the merge keeps the pod's own entries as they are and copies what it
    # adds, so an entry of ``after`` is the pod's exactly when it is one of ``before``.
    mine = {id(t) for t in before}
    kept = {id(t) for t in after}
    added = [t for t in after if id(t) not in mine]
    parts = []
    defaults_added = [describe(t) for t in added if t != MEMORY_PRESSURE]
    if defaults_added:
        parts.append(f"added {', '.join(defaults_added)} from {origin}")
    if memory and MEMORY_PRESSURE in added:
        parts.append(f"added {describe(MEMORY_PRESSURE)}: the pod is not BestEffort")
    removed = sum(1 for t in before if id(t) not in kept)
    if removed:
        parts.append(f"merged away {removed} redundant toleration{'s' if removed > 1 else ''}")
    return "; ".join(parts) or "merged tolerations"


#: The extras of an UPDATE: the memory-pressure toleration alone, or nothing.
MEMORY_ONLY = TolerationList.of([MEMORY_PRESSURE])
NO_TOLERATIONS = TolerationList()


def mutate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> Result:
    """Merge the defaults (CREATE) and the memory-pressure toleration, then validate (§6).

    Why validate here too: upstream's Admit ends with its Validate, so its denial comes
    before later plugins run and decides which message a pod sees.
    """
    settings: Settings = ctx.settings
    spec = spec_at(pod)  # a missing spec is an empty one, as the API server decodes it
    tolerations = tolerations_of(spec) if spec is not None else None
    if tolerations is None:
        return UNCHANGED  # a spec or list that is not what the API stores cannot be merged
    memory = settings.memory_pressure_toleration and not is_best_effort(pod)
    extras, origin = (MEMORY_ONLY if memory else NO_TOLERATIONS), ""
    try:
        if request.operation == "CREATE":
            extras, origin = defaults(request, ctx, memory)
    except _Unreadable as exc:
        return Result(violations=(Violation(str(exc), "spec.tolerations"),))
    editor = Editor(pod)
    read: list[Facts] | None = None
    if extras:
        merged, read = merge_read(tolerations, extras)
        editor.set(("spec", "tolerations"), merged)
    else:
        merged = tolerations
    violations = tuple(_problems(request, merged, ctx, read))
    if not editor.changed:
        return Result(violations=violations) if violations else UNCHANGED
    summary = _summary(tolerations, merged, origin, memory)
    return Result(editor.obj, editor.patch, violations=violations, audit={NAME: summary})


def validate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> list[Violation]:
    """The whitelist on the final object, whichever plugin added its tolerations.

    Why again after all mutation: upstream's validating phase runs after every mutating
    plugin and webhook, so a toleration added later must be whitelisted as well.
    """
    spec = spec_at(pod)
    tolerations = tolerations_of(spec) if spec is not None else None
    return _problems(request, tolerations or [], ctx)


PLUGIN = Plugin(
    name=NAME,
    summary="Gives pods their namespace's default tolerations and keeps them within its whitelist.",
    settings=Settings,
    mutate=Mutator(mutate, frozenset({PODS}), frozenset({"CREATE", "UPDATE"})),
    validate=Validator(validate, frozenset({PODS}), frozenset({"CREATE", "UPDATE"})),
    enabled_by_default=False,
    upstream="PodTolerationRestriction",
)
