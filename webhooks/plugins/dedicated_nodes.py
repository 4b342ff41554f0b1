"""dedicated-nodes: pin a namespace's pods to its group's dedicated nodes, and keep everyone
else off them; also serves the PodNodeSelector and PodTolerationRestriction annotations.

Why it exists: the taint docs' recipe for dedicated nodes is to taint them
``dedicated=<group>:NoSchedule``, label them ``dedicated=<group>``, and have an admission
controller give the group's pods the toleration *and* a node affinity that pins them there.
Upstream ships no such controller, and managed clusters cannot enable the two in-tree
plugins that come closest (spec §6). So this plugin:

* decides group membership from the cluster admin's side only: a Namespace label, or the
  static ``namespaces`` map (which wins); never from anything the pod says;
* on CREATE, adds the group's toleration (unless a §1c superset is already there) and ANDs
  ``<key> In [<group>]`` into *every* required nodeSelectorTerm, creating the affinity when
  there is none; a pod whose nodeSelector or required affinity can never reach the group's
  nodes is denied rather than left Pending forever;
* on CREATE and UPDATE (``enforce``), denies pods outside the group that tolerate its taint:
  an ``Equal`` toleration for another group, ``Exists`` on the key, or the bare wildcard;
* reproduces PodNodeSelector (``scheduler.alpha.kubernetes.io/node-selector``, cluster default
  and per-namespace whitelist) and PodTolerationRestriction (``defaultTolerations`` and
  ``tolerationsWhitelist`` annotations, cluster default and whitelist) with upstream's
  merge rules and messages.

Settings (``plugins.dedicated-nodes``; the plugin is disabled by default):

``namespaceLabel``          Namespace label whose value names the group
                            (``placement-webhooks.io/dedicated``); an empty value means none.
``namespaces``              ``{namespace: group}``; wins over the label.
``key``                     taint key and node label key (``dedicated``).
``effect``                  effect of the dedicated taint (``NoSchedule``).
``enforce``                 deny foreign tolerations of dedicated taints (``true``).
``exemptNamespaces``        namespaces enforcement never denies (``[kube-system]``).
``clusterDefaultNodeSelector``  PodNodeSelector's default for namespaces without the
                            annotation (``k=v,k2=v2``).
``nodeSelectorWhitelist``   ``{namespace: "k=v,..."}``: PodNodeSelector's per-namespace
                            whitelist of nodeSelector pairs.
``defaultTolerations``      PodTolerationRestriction's cluster default tolerations.
``tolerationsWhitelist``    PodTolerationRestriction's cluster whitelist.
``memoryPressureToleration``  give non-BestEffort pods the memory-pressure toleration as the
                            in-tree plugin does (``false``: it touches every pod).

Choices where upstream does not apply:

* A Namespace that does not exist (or that offline ``--objects`` do not supply) is "not
  dedicated, no annotations": the static map and the cluster-level defaults still apply. The
  in-tree plugins fail with the not-found error, but the API server refuses a pod in a
  missing namespace before webhooks run, and a CLI dry-run without Namespaces must not fail.
  A lookup that cannot complete (``LookupFailure``) still fails the request.
* Mutation is CREATE-only: the API server forbids changing a pod's affinity or removing
  tolerations on UPDATE. So the in-tree plugin's memory-pressure merge on UPDATE is not done.
* Namespace or cluster default tolerations are merged (§1c) only when one of them is not
  already tolerated; the in-tree plugin always re-merges, which would collapse tolerations
  added later in the chain and make a second pass change the pod.
* On UPDATE enforcement only judges tolerations the old pod did not have, so a pod created
  before a namespace lost its group can still have labels or finalizers changed.
* A whitelist (namespace or cluster) implicitly allows the namespace's own dedicated
  toleration, which this plugin adds itself.
* Mirror pods (the kubelet's copies of static pods) are neither pinned nor judged by
  enforcement: the static pod runs on its node whatever admission says.
* An empty nodeSelectorTerm matches no node, so it gets no requirement (that would widen
  it). A term that excludes the group while another term can match is warned about, not
  denied, and still gets the requirement, so every term reads "group nodes only".
* An unparsable namespace annotation denies the pod (403) with a message naming namespace
  and annotation; for the node selector the reason is upstream's own text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, Half, Plugin
from webhooks.core.result import UNCHANGED, Result, Violation
from webhooks.core.review import AdmissionRequest
from webhooks.k8s import affinity
from webhooks.k8s.labels import first_conflict, format_label_set, is_subset, parse_label_set
from webhooks.k8s.names import is_valid_label_value, qualified_name_errors
from webhooks.k8s.podspec import is_mirror_pod
from webhooks.k8s.qos import is_best_effort
from webhooks.k8s.tolerations import (
    EQUAL,
    EXISTS,
    NO_SCHEDULE,
    describe,
    identity,
    is_superset,
    merge,
    previous_identities,
    tolerations_of,
)
from webhooks.plugins.taint_toleration_rules import toleration_errors

NAME = "dedicated-nodes"

NODE_SELECTOR_ANNOTATION = "scheduler.alpha.kubernetes.io/node-selector"
DEFAULT_TOLERATIONS_ANNOTATION = "scheduler.alpha.kubernetes.io/defaultTolerations"
TOLERATIONS_WHITELIST_ANNOTATION = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"

# Upstream's exact denial texts (spec §6).
SELECTOR_CONFLICT = "pod node label selector conflicts with its namespace node label selector"
SELECTOR_WHITELIST = "pod node label selector labels conflict with its namespace whitelist"
TOLERATIONS_WHITELIST = (
    "pod tolerations (possibly merged with namespace default tolerations) conflict with its "
    "namespace whitelist"
)

MEMORY_PRESSURE: dict[str, Any] = {
    "key": "node.kubernetes.io/memory-pressure",
    "operator": EXISTS,
    "effect": NO_SCHEDULE,
}

WARNING_LIMIT = 120
_TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")
_REQUIRED_FIELD = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"

Effect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


def _toleration_problems(items: Sequence[Any]) -> list[str]:
    """Why configured tolerations would be refused: unknown fields, then ValidateTolerations.

    Upstream validates its plugin configuration with the Pod rules (spec §9), so the same
    messages are given here, with paths relative to the list (``[0].operator``).
    """
    for index, item in enumerate(items):
        unknown = (
            [n for n in item if n not in _TOLERATION_FIELDS] if isinstance(item, Mapping) else []
        )
        if unknown:
            known = ", ".join(_TOLERATION_FIELDS)
            return [f"[{index}]: unknown field {unknown[0]!r} (known: {known})"]
    return [message for _, message in toleration_errors(list(items), "")]


def normalize_toleration(toleration: Mapping[str, Any]) -> dict[str, Any]:
    """The toleration as the API server stores it: empty strings and null seconds omitted.

    Why: v1.Toleration serialises every field with ``omitempty``, so a default written as
    ``{key: a, value: ""}`` comes back as ``{key: a}``; comparing or patching the raw form
    would make a second pass see a difference that is not there.
    """
    return {
        name: toleration[name]
        for name in _TOLERATION_FIELDS
        if toleration.get(name) not in (None, "")
    }


@dataclass(frozen=True, slots=True)
class Settings:
    """See the module docstring for each key; every value is checked at load."""

    namespace_label: str = "placement-webhooks.io/dedicated"
    namespaces: Mapping[str, str] = field(default_factory=dict)
    key: str = "dedicated"
    effect: Effect = "NoSchedule"
    enforce: bool = True
    exempt_namespaces: tuple[str, ...] = ("kube-system",)
    cluster_default_node_selector: str = ""
    node_selector_whitelist: Mapping[str, str] = field(default_factory=dict)
    default_tolerations: tuple[dict[str, Any], ...] = ()
    tolerations_whitelist: tuple[dict[str, Any], ...] = ()
    memory_pressure_toleration: bool = False

    def __post_init__(self) -> None:
        for name, value in (("namespaceLabel", self.namespace_label), ("key", self.key)):
            errors = qualified_name_errors(value)
            if errors:
                raise ValueError(f"{name}: {value!r} is not a valid label key: {errors[0]}")
        for namespace, group in self.namespaces.items():
            if not group or not is_valid_label_value(group):
                raise ValueError(
                    f"namespaces: group {group!r} of namespace {namespace!r} must be a "
                    "non-empty label value"
                )
        try:
            parse_label_set(self.cluster_default_node_selector)
        except ValueError as exc:
            raise ValueError(f"clusterDefaultNodeSelector: {exc}") from None
        for namespace, text in self.node_selector_whitelist.items():
            try:
                parse_label_set(text)
            except ValueError as exc:
                raise ValueError(f"nodeSelectorWhitelist: namespace {namespace!r}: {exc}") from None
        for name, attr in (
            ("defaultTolerations", "default_tolerations"),
            ("tolerationsWhitelist", "tolerations_whitelist"),
        ):
            items = getattr(self, attr)
            problems = _toleration_problems(items)
            if problems:
                raise ValueError(f"{name}: {'; '.join(problems)}")
            object.__setattr__(self, attr, tuple(normalize_toleration(t) for t in items))

    def wanted_toleration(self, group: str) -> dict[str, Any]:
        """The toleration a pod of ``group`` gets: ``<key>=<group>:<effect>`` (Equal).

        Why Equal and not Exists: Exists on the key would tolerate every group's taint.
        """
        return {"key": self.key, "operator": EQUAL, "value": group, "effect": self.effect}


# --- the namespace: group and annotations ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Namespace:
    """What this plugin reads from one Namespace; built once per request half."""

    name: str
    group: str | None
    source: str
    annotations: Mapping[str, str]


def read_namespace(name: str, obj: Mapping[str, Any] | None, settings: Settings) -> Namespace:
    """Group membership and annotations of namespace ``name`` (``obj`` may be missing).

    Why the static map wins: it is the cluster admin's config file, which an admin may use to
    override or replace labels that namespace owners can sometimes edit.
    """
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    metadata = metadata if isinstance(metadata, Mapping) else {}
    labels = metadata.get("labels")
    annotations = metadata.get("annotations")
    annotations = annotations if isinstance(annotations, Mapping) else {}
    static = settings.namespaces.get(name)
    if static:
        return Namespace(name, static, f"config namespaces.{name}", annotations)
    value = labels.get(settings.namespace_label) if isinstance(labels, Mapping) else None
    if isinstance(value, str) and value:
        return Namespace(name, value, f"namespace label {settings.namespace_label}", annotations)
    return Namespace(name, None, "", annotations)


def _lookup(request: AdmissionRequest, ctx: Context) -> Namespace:
    settings: Settings = ctx.settings
    return read_namespace(request.namespace, ctx.cluster.namespace(request.namespace), settings)


class AnnotationError(ValueError):
    """A namespace annotation this plugin honours cannot be parsed."""


def _annotation_tolerations(ns: Namespace, key: str) -> list[dict[str, Any]] | None:
    """The tolerations in annotation ``key``: ``None`` when absent, ``[]`` when empty.

    Mirrors upstream's JSON decoding into ``[]v1.Toleration``: ``null`` is an empty list, a
    ``null`` item is a zero toleration, unknown fields are ignored, wrong types are errors.
    """
    if key not in ns.annotations:
        return None
    text = ns.annotations[key]
    if not text:
        return []
    where = f"namespace {ns.name!r} annotation {key}"
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise AnnotationError(f"{where}: not valid JSON: {exc}") from None
    if data is None:
        return []
    if not isinstance(data, list):
        raise AnnotationError(f"{where}: must be a JSON list of tolerations")
    result = []
    for index, raw in enumerate(data):
        item = {} if raw is None else raw
        if not isinstance(item, dict):
            raise AnnotationError(f"{where}: item {index} must be an object")
        for name in _TOLERATION_FIELDS[:4]:
            if not isinstance(item.get(name, ""), str | None):
                raise AnnotationError(f"{where}: item {index}: {name} must be a string")
        seconds = item.get("tolerationSeconds")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
            raise AnnotationError(f"{where}: item {index}: tolerationSeconds must be an integer")
        result.append(normalize_toleration(item))
    return result


def _namespace_selector(ns: Namespace, settings: Settings) -> tuple[dict[str, str], str]:
    """PodNodeSelector's selector for the namespace and where it came from.

    A present annotation, even an empty one, replaces the cluster default (spec §6).
    """
    if NODE_SELECTOR_ANNOTATION in ns.annotations:
        text = ns.annotations[NODE_SELECTOR_ANNOTATION]
        try:
            return parse_label_set(text), "namespace node-selector annotation"
        except ValueError as exc:
            raise AnnotationError(
                f"namespace {ns.name!r} annotation {NODE_SELECTOR_ANNOTATION}: {exc}"
            ) from None
    return parse_label_set(settings.cluster_default_node_selector), "clusterDefaultNodeSelector"


def _warning(text: str) -> str:
    """Prefix and cap one warning; why: the API server caps the warnings of a response in total."""
    text = f"{NAME}: {text}"
    return text if len(text) < WARNING_LIMIT else text[: WARNING_LIMIT - 4] + "..."


# --- mutation -------------------------------------------------------------------------------


def _merge_node_selector(
    editor: Editor, ns: Namespace, settings: Settings, notes: list[str]
) -> Violation | None:
    selector, origin = _namespace_selector(ns, settings)
    current = editor.get(("spec", "nodeSelector"), {})
    if not isinstance(current, Mapping):
        return None
    if first_conflict(selector, current) is not None:
        return Violation(SELECTOR_CONFLICT, "spec.nodeSelector")
    added = {k: v for k, v in selector.items() if k not in current}
    for key in sorted(added):
        editor.set(("spec", "nodeSelector", key), added[key])
    if added:
        notes.append(f"nodeSelector gained {format_label_set(added)} from {origin}")
    return None


def _default_tolerations(ns: Namespace, settings: Settings) -> tuple[list[dict[str, Any]], str]:
    """PodTolerationRestriction's defaults: a present annotation (even empty) wins (spec §6)."""
    defaults = _annotation_tolerations(ns, DEFAULT_TOLERATIONS_ANNOTATION)
    if defaults is not None:
        return defaults, "namespace defaultTolerations annotation"
    return list(settings.default_tolerations), "cluster defaultTolerations"


def _merge_tolerations(editor: Editor, ns: Namespace, settings: Settings, notes: list[str]) -> None:
    spec = editor.get(("spec",), {})
    tolerations = tolerations_of(spec)
    if tolerations is None:
        return
    extras, origin = _default_tolerations(ns, settings)
    if settings.memory_pressure_toleration and not is_best_effort(spec):
        extras = [*extras, MEMORY_PRESSURE]
    missing = [
        e
        for e in extras
        if not any(isinstance(t, Mapping) and is_superset(t, e) for t in tolerations)
    ]
    if not missing:
        return
    editor.set(("spec", "tolerations"), merge(tolerations, extras))
    defaults = [describe(t) for t in missing if t is not MEMORY_PRESSURE]
    if defaults:
        notes.append(f"added {', '.join(defaults)} from {origin}")
    if any(t is MEMORY_PRESSURE for t in missing):
        notes.append(f"added {describe(MEMORY_PRESSURE)}: the pod is not BestEffort")


def _dedicated_conflict(
    spec: Mapping[str, Any], ns: Namespace, settings: Settings
) -> Violation | None:
    """A denial when nodeSelector or every required term excludes the group's nodes."""
    group = ns.group
    assert group is not None
    why = (
        f"namespace {ns.name} is dedicated to group {group} ({ns.source}), so its pods run "
        f"only on nodes labelled {settings.key}={group}"
    )
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping) and selector.get(settings.key, group) != group:
        return Violation(
            f"pod nodeSelector {settings.key}={selector[settings.key]} can never match the "
            f"nodes of group {group}: {why}",
            f"spec.nodeSelector.{settings.key}",
        )
    terms = affinity.required_terms(spec)
    live = [(i, t) for i, t in enumerate(terms or []) if not affinity.is_empty_term(t)]
    conflicts = [(i, affinity.term_conflict(t, settings.key, group)) for i, t in live]
    if not live or any(found is None for _, found in conflicts):
        return None
    index, found = conflicts[0]
    assert found is not None
    position, expr = found
    every = " (as does every other term)" if len(conflicts) > 1 else ""
    return Violation(
        f"pod required node affinity can never match the nodes of group {group}: "
        f"nodeSelectorTerms[{index}] has {affinity.describe_expression(expr)}{every}; {why}",
        f"{_REQUIRED_FIELD}.nodeSelectorTerms[{index}].matchExpressions[{position}]",
    )


def _pin_to_group(editor: Editor, ns: Namespace, settings: Settings, notes: list[str]) -> None:
    group = ns.group
    assert group is not None
    spec = editor.get(("spec",), {})
    tolerations = tolerations_of(spec)
    wanted = settings.wanted_toleration(group)
    why = f"({ns.source})"
    if tolerations is not None and not any(
        isinstance(t, Mapping) and is_superset(t, wanted) for t in tolerations
    ):
        editor.set(("spec", "tolerations"), [*tolerations, wanted])
        notes.append(f"added toleration {settings.key}={group}:{settings.effect} {why}")
    expression = affinity.describe_expression(affinity.requirement(settings.key, group))
    terms = affinity.required_terms(spec)
    required_path = ("spec", *affinity.REQUIRED_PATH)
    if terms is None:
        editor.set(required_path, affinity.and_requirement(None, settings.key, group))
        notes.append(f"added node affinity {expression} {why}")
        return
    changed = 0
    for index, term in enumerate(terms):
        new = affinity.with_requirement(term, settings.key, group)
        if new is not None:
            path: tuple[str | int, ...] = (
                *required_path,
                "nodeSelectorTerms",
                index,
                "matchExpressions",
            )
            editor.set(path, new["matchExpressions"])
            changed += 1
    if changed:
        terms_text = "1 affinity term" if changed == 1 else f"{changed} affinity terms"
        notes.append(f"added {expression} to {terms_text} {why}")
    for index, term in enumerate(terms):
        found = affinity.term_conflict(term, settings.key, group)
        if found is not None and not affinity.is_empty_term(term):
            shown = affinity.describe_expression(found[1])
            notes.append(f"nodeSelectorTerms[{index}] ({shown}) can never match group {group}")


def mutate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> Result:
    """On CREATE: PodNodeSelector merge, PodTolerationRestriction defaults, then the group pin.

    Why this order: the namespace's own selector and defaults are what the pod "has" before
    the group requirement is checked against it, and the group toleration is appended only
    when the defaults did not already bring a superset of it.
    """
    settings: Settings = ctx.settings
    if not isinstance(pod.get("spec"), dict) or is_mirror_pod(pod):
        return UNCHANGED
    ns = _lookup(request, ctx)
    editor = Editor(pod)
    notes: list[str] = []
    try:
        denial = _merge_node_selector(editor, ns, settings, notes)
        if denial is not None:
            return Result(violations=(denial,))
        _merge_tolerations(editor, ns, settings, notes)
    except AnnotationError as exc:
        return Result(violations=(Violation(str(exc)),))
    if ns.group is not None:
        denial = _dedicated_conflict(editor.get(("spec",), {}), ns, settings)
        if denial is not None:
            return Result(violations=(denial,))
        _pin_to_group(editor, ns, settings, notes)
    warnings = tuple(_warning(note) for note in notes)
    if not editor.changed:
        return Result(warnings=warnings) if warnings else UNCHANGED
    return Result(editor.obj, editor.patch, warnings, audit={NAME: "; ".join(notes)})


# --- validation -----------------------------------------------------------------------------


def _foreign(toleration: Mapping[str, Any], group: str | None, settings: Settings) -> str | None:
    """How ``toleration`` reaches the dedicated taint of a group other than ``group``.

    Scheduler matching (§1d) against ``<key>=<h>:<effect>`` for every possible group h:
    ``"group"`` for Equal on another group, ``"key"`` for Exists on the key, ``"range"`` for
    Lt/Gt on it (numeric group names), ``"wildcard"`` for an empty key with Exists; ``None``
    when it tolerates no foreign group.
    """
    key, operator, value, effect = identity(toleration)
    if effect not in ("", settings.effect) or key not in ("", settings.key):
        return None
    if operator == EXISTS:
        return "key" if key else "wildcard"
    if operator in ("", EQUAL):
        # An empty value names no group: no namespace can belong to "".
        return "group" if value not in ("", group) else None
    return "range" if operator in ("Gt", "Lt") else None


def _access_hint(settings: Settings, group: str | None = None) -> str:
    target = group or "<group>"
    return (
        f"a cluster admin grants a namespace access by labelling it "
        f"{settings.namespace_label}={target} (or mapping it in dedicated-nodes namespaces)"
    )


def _enforcement_message(
    toleration: Mapping[str, Any], how: str, ns: Namespace, settings: Settings
) -> str:
    shown = describe(toleration)
    own = (
        f"namespace {ns.name} belongs to group {ns.group} ({ns.source})"
        if ns.group
        else f"namespace {ns.name} belongs to no dedicated group"
    )
    if how == "group":
        other = identity(toleration)[2]
        return (
            f"toleration {shown} lets this pod onto the nodes dedicated to group {other}, but "
            f"{own}; {_access_hint(settings, other)}"
        )
    if how == "key":
        what = f"tolerates the {settings.key} taint of every dedicated group"
    elif how == "range":
        what = f"tolerates the {settings.key} taint of every group named by a number in range"
    else:
        what = f"tolerates every taint, including the {settings.key} taint of every group"
    if ns.group:
        fix = (
            f"pods there get {settings.key}={ns.group}:{settings.effect} added automatically, "
            "so remove this toleration"
        )
    else:
        fix = _access_hint(settings)
    return f"toleration {shown} {what}, but {own}; {fix}"


def _check_node_selector(
    spec: Mapping[str, Any], ns: Namespace, settings: Settings
) -> list[Violation]:
    selector = spec.get("nodeSelector")
    selector = selector if isinstance(selector, Mapping) else {}
    namespace_selector, _ = _namespace_selector(ns, settings)
    if first_conflict(namespace_selector, selector) is not None:
        return [Violation(SELECTOR_CONFLICT, "spec.nodeSelector")]
    whitelist = parse_label_set(settings.node_selector_whitelist.get(ns.name, ""))
    if not is_subset(selector, whitelist):
        return [Violation(SELECTOR_WHITELIST, "spec.nodeSelector")]
    return []


def _check_whitelist(
    tolerations: Sequence[Any], ns: Namespace, settings: Settings
) -> list[Violation]:
    if not tolerations:
        return []
    whitelist = _annotation_tolerations(ns, TOLERATIONS_WHITELIST_ANNOTATION)
    if whitelist is None:
        whitelist = list(settings.tolerations_whitelist)
    if not whitelist:
        return []
    if ns.group is not None:
        whitelist.append(settings.wanted_toleration(ns.group))
    for index, toleration in enumerate(tolerations):
        if not isinstance(toleration, Mapping):
            continue
        if not any(is_superset(w, toleration) for w in whitelist):
            return [Violation(TOLERATIONS_WHITELIST, f"spec.tolerations[{index}]")]
    return []


def validate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> list[Violation]:
    """PodNodeSelector (CREATE), the tolerations whitelist, and dedicated-taint enforcement.

    Why after all mutation: like the in-tree validating phase, the whitelist must hold for the
    tolerations the pod ends up with, whichever mutator added them.
    """
    settings: Settings = ctx.settings
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return []
    tolerations = tolerations_of(spec) or []
    ns = _lookup(request, ctx)
    violations: list[Violation] = []
    try:
        if request.operation == "CREATE":
            violations += _check_node_selector(spec, ns, settings)
        violations += _check_whitelist(tolerations, ns, settings)
    except AnnotationError as exc:
        violations.append(Violation(str(exc)))
    if not settings.enforce or ns.name in settings.exempt_namespaces or is_mirror_pod(pod):
        return violations
    old = previous_identities(request.operation, request.old_object)
    for index, toleration in enumerate(tolerations):
        if not isinstance(toleration, Mapping) or identity(toleration) in old:
            continue
        how = _foreign(toleration, ns.group, settings)
        if how is not None:
            message = _enforcement_message(toleration, how, ns, settings)
            violations.append(Violation(message, f"spec.tolerations[{index}]"))
    return violations


PLUGIN = Plugin(
    name=NAME,
    summary="Pins dedicated namespaces' pods to their nodes and keeps other pods off them.",
    settings=Settings,
    mutate=Half(mutate, frozenset({PODS}), frozenset({"CREATE"})),
    validate=Half(validate, frozenset({PODS}), frozenset({"CREATE", "UPDATE"})),
    enabled_by_default=False,
)
