"""dedicated-nodes: pin a namespace's pods to its group's dedicated nodes, and keep everyone
else off them.

Why it exists: the taint docs' recipe for dedicated nodes is to taint them
``dedicated=<group>:NoSchedule``, label them ``dedicated=<group>``, and have an admission
controller give the group's pods the toleration *and* a node affinity that pins them there.
Upstream ships no such controller (PodNodeSelector and PodTolerationRestriction, the closest,
are the plugins ``pod-node-selector`` and ``pod-toleration-restriction``). So this plugin:

* decides group membership from the cluster admin's side only: a Namespace label, or the
  static ``namespaces`` map (which wins); never from anything the pod says;
* on CREATE, adds the group's toleration (unless a §1c superset is already there) and ANDs
  ``<key> In [<group>]`` into *every* required nodeSelectorTerm, creating the affinity when
  there is none; a pod whose nodeSelector or required affinity can never reach the group's
  nodes is denied rather than left Pending forever;
* on CREATE and UPDATE (``enforce``), denies pods outside the group that tolerate its taint:
  an ``Equal`` toleration for another group, ``Exists`` on the key, or the bare wildcard.

Settings (``plugins.dedicated-nodes``; the plugin is disabled by default):

``namespaceLabel``    Namespace label whose value names the group
                      (``placement-webhooks.io/dedicated``); an empty value means none.
``namespaces``        ``{namespace: group}``; wins over the label.
``key``               taint key and node label key (``dedicated``).
``effect``            effect of the dedicated taint (``NoSchedule``).
``enforce``           deny foreign tolerations of dedicated taints (``true``).
``exemptNamespaces``  namespaces enforcement never denies (``[kube-system]``): an exception
                      for the validating half, as the chain handles every exception.

Choices where upstream does not apply:

* A Namespace that does not exist (or that offline ``--objects`` do not supply) is "not
  dedicated": the static map still applies. A lookup that cannot complete
  (``LookupFailure``) fails the request.
* Mutation is CREATE-only: the API server forbids changing a pod's affinity on UPDATE.
* It runs after every upstream mutator, so nothing it adds can change what those decide.
  With ``pod-toleration-restriction`` on, the group's toleration must be in the namespace's
  whitelist like any other toleration, as upstream's validating phase would require of a
  toleration a webhook adds.
* On UPDATE enforcement only judges tolerations the old pod did not have, so a pod created
  before a namespace lost its group can still have labels or finalizers changed.
* Mirror pods (the kubelet's copies of static pods) are neither pinned nor judged by
  enforcement: the static pod runs on its node whatever admission says.
* An empty nodeSelectorTerm matches no node, so it gets no requirement (that would widen
  it). A term that excludes the group while another term can match is warned about, not
  denied, and still gets the requirement, so every term reads "group nodes only".
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, Mutator, Plugin, Validator
from webhooks.core.result import UNCHANGED, Result, Violation
from webhooks.core.review import AdmissionRequest
from webhooks.k8s import affinity
from webhooks.k8s.excerpt import show
from webhooks.k8s.mapping import MAPPING
from webhooks.k8s.names import is_valid_label_value, qualified_name_errors, shown_name
from webhooks.k8s.namespaces import labels_of
from webhooks.k8s.podspec import is_mirror_pod, spec_at
from webhooks.k8s.tolerations import (
    EQUAL,
    EXISTS,
    Facts,
    describe,
    facts,
    identity,
    previous_identities,
    superset_facts,
    tolerations_of,
)

NAME = "dedicated-nodes"

WARNING_LIMIT = 120
_REQUIRED_FIELD = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"

Effect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


@dataclass(frozen=True, slots=True)
class Settings:
    """See the module docstring for each key; every value is checked at load."""

    namespace_label: str = "placement-webhooks.io/dedicated"
    namespaces: Mapping[str, str] = field(default_factory=dict)
    key: str = "dedicated"
    effect: Effect = "NoSchedule"
    enforce: bool = True

    def __post_init__(self) -> None:
        for name, value in (("namespaceLabel", self.namespace_label), ("key", self.key)):
            errors = qualified_name_errors(value)
            if errors:
                raise ValueError(f"{name}: {show(value)} is not a valid label key: {errors[0]}")
        for namespace, group in self.namespaces.items():
            if not group or not is_valid_label_value(group):
                raise ValueError(
                    f"namespaces: group {show(group)} of namespace {show(namespace)} must be a "
                    "non-empty label value"
                )

    def wanted_toleration(self, group: str) -> dict[str, Any]:
        """The toleration a pod of ``group`` gets: ``<key>=<group>:<effect>`` (Equal).

        Why Equal and not Exists: Exists on the key would tolerate every group's taint.
        """
        return _group_toleration(self.key, group, self.effect)


def _group_toleration(key: str, group: str, effect: str) -> dict[str, Any]:
    return {"key": key, "operator": EQUAL, "value": group, "effect": effect}


# --- the namespace's group --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Namespace:
    """What this plugin reads from one Namespace; built once per request half."""

    name: str
    group: str | None
    source: str


def read_namespace(name: str, obj: Mapping[str, Any] | None, settings: Settings) -> Namespace:
    """Group membership of namespace ``name`` (``obj`` may be missing).

    Why the static map wins: it is the cluster admin's config file, which an admin may use to
    override or replace labels that namespace owners can sometimes edit.
    """
    static = settings.namespaces.get(name)
    if static:
        return Namespace(name, static, f"config namespaces.{name}")
    value = labels_of(obj).get(settings.namespace_label)
    if isinstance(value, str) and value:
        return Namespace(name, value, f"namespace label {settings.namespace_label}")
    return Namespace(name, None, "")


def _lookup(request: AdmissionRequest, ctx: Context) -> Namespace:
    settings: Settings = ctx.settings
    return read_namespace(request.namespace, ctx.cluster.namespace(request.namespace), settings)


def _warning(text: str) -> str:
    """Prefix and cap one warning; why: the API server caps the warnings of a response in total."""
    text = f"{NAME}: {text}"
    return text if len(text) < WARNING_LIMIT else text[: WARNING_LIMIT - 4] + "..."


# --- mutation -------------------------------------------------------------------------------


def _why(ns: Namespace, settings: Settings) -> str:
    return (
        f"namespace {ns.name} is dedicated to group {ns.group} ({ns.source}), so its pods run "
        f"only on nodes labelled {settings.key}={ns.group}"
    )


#: Each live required term's conflict with the group: (term index, term, the first
#: expression no group node satisfies or ``None``).
Conflicts = list[tuple[int, Any, tuple[int, affinity.Expression] | None]]


def _conflicts(terms: list[Any] | None, group: str, settings: Settings) -> Conflicts:
    """Read once per call: the denial and the warnings both come from it."""
    return [
        (i, t, affinity.term_conflict(t, settings.key, group))
        for i, t in enumerate(terms or [])
        if not affinity.is_empty_term(t)
    ]


def _dedicated_conflict(
    spec: Mapping[str, Any], ns: Namespace, settings: Settings, conflicts: Conflicts
) -> Violation | None:
    """A denial when nodeSelector or every required term excludes the group's nodes.

    Why the words are built only for a denial: nearly every pod has none, and the text cost
    a tenth of the plugin's time on each review.
    """
    group = ns.group
    assert group is not None
    selector = spec.get("nodeSelector")
    if isinstance(selector, MAPPING) and selector.get(settings.key, group) != group:
        return Violation(
            f"pod nodeSelector {settings.key}={selector[settings.key]} can never match the "
            f"nodes of group {group}: {_why(ns, settings)}",
            f"spec.nodeSelector.{settings.key}",
        )
    if not conflicts or any(found is None for _, _, found in conflicts):
        return None
    index, _, found = conflicts[0]
    assert found is not None
    position, expr = found
    every = " (as does every other term)" if len(conflicts) > 1 else ""
    return Violation(
        f"pod required node affinity can never match the nodes of group {group}: "
        f"nodeSelectorTerms[{index}] has {affinity.describe_expression(expr)}{every}; "
        f"{_why(ns, settings)}",
        f"{_REQUIRED_FIELD}.nodeSelectorTerms[{index}].matchExpressions[{position}]",
    )


@functools.lru_cache(maxsize=256)
def _wanted(key: str, group: str, effect: str) -> tuple[Facts, str, str]:
    """The group's toleration read once (its facts, how notes name it and the affinity
    requirement): the same few groups recur on every review, and building these per review
    was a fifth of the plugin's cost. Bounded: groups are label values of the cluster."""
    toleration = _group_toleration(key, group, effect)
    expression = affinity.describe_expression(affinity.requirement(key, group))
    return facts(toleration), f"{key}={group}:{effect}", expression


def _pin_to_group(
    editor: Editor,
    spec: Mapping[str, Any],
    ns: Namespace,
    settings: Settings,
    terms: list[Any] | None,
    conflicts: Conflicts,
    notes: list[str],
) -> None:
    group = ns.group
    assert group is not None
    tolerations = tolerations_of(spec)
    wanted_facts, shown, expression = _wanted(settings.key, group, settings.effect)
    why = f"({ns.source})"
    # From the end: a pod that has the group's toleration nearly always got it from this
    # plugin, appended last, so a further pass finds it first rather than after every other.
    if tolerations is not None and not any(
        isinstance(t, MAPPING) and superset_facts(facts(t), wanted_facts)
        for t in reversed(tolerations)
    ):
        editor.set(("spec", "tolerations"), [*tolerations, settings.wanted_toleration(group)])
        notes.append(f"added toleration {shown} {why}")
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
    for index, _, found in conflicts:
        if found is not None:
            shown_expr = affinity.describe_expression(found[1])
            notes.append(f"nodeSelectorTerms[{index}] ({shown_expr}) can never match group {group}")


def mutate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> Result:
    """On CREATE: pin a dedicated namespace's pod to its group (toleration + node affinity).

    Why deny rather than pin a pod whose selector or affinity excludes the group: the result
    could never be scheduled, and a Pending pod explains itself far worse than a denial.
    """
    settings: Settings = ctx.settings
    spec = spec_at(pod)  # a missing spec is an empty one, as the API server decodes it
    if spec is None or is_mirror_pod(pod):
        return UNCHANGED
    ns = _lookup(request, ctx)
    if ns.group is None:
        return UNCHANGED
    terms = affinity.required_terms(spec)
    conflicts = _conflicts(terms, ns.group, settings)
    denial = _dedicated_conflict(spec, ns, settings, conflicts)
    if denial is not None:
        return Result(violations=(denial,))
    editor = Editor(pod)
    notes: list[str] = []
    _pin_to_group(editor, spec, ns, settings, terms, conflicts, notes)
    warnings = tuple(_warning(note) for note in notes)
    if not editor.changed:
        return Result(warnings=warnings) if warnings else UNCHANGED
    return Result(editor.obj, editor.patch, warnings, audit={NAME: "; ".join(notes)})


# --- validation -----------------------------------------------------------------------------


def _foreign(
    toleration: tuple[str, str, str, str], group: str | None, settings: Settings
) -> str | None:
    """How a toleration (its §1b identity) reaches another group's dedicated taint.

    Scheduler matching (§1d) against ``<key>=<h>:<effect>`` for every possible group h:
    ``"group"`` for Equal on another group, ``"key"`` for Exists on the key, ``"range"`` for
    Lt/Gt on it (numeric group names), ``"wildcard"`` for an empty key with Exists; ``None``
    when it tolerates no foreign group.
    """
    key, operator, value, effect = toleration
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
        # Any string is "another group" here; one longer than a label value is cut short.
        other = shown_name(identity(toleration)[2])
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


def validate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> list[Violation]:
    """With ``enforce``: deny tolerations that reach another group's dedicated taint.

    Why on UPDATE too, judging only new tolerations: a toleration added later lets the pod
    stay on, or be rescheduled onto, nodes it has no claim to.
    """
    settings: Settings = ctx.settings
    spec = spec_at(pod)
    if spec is None or not settings.enforce or is_mirror_pod(pod):
        return []
    tolerations = tolerations_of(spec) or []
    ns = _lookup(request, ctx)
    violations: list[Violation] = []
    old = previous_identities(request.operation, request.old_object)
    for index, toleration in enumerate(tolerations):
        if not isinstance(toleration, MAPPING):
            continue
        read = identity(toleration)
        if read in old:
            continue
        how = _foreign(read, ns.group, settings)
        if how is not None:
            message = _enforcement_message(toleration, how, ns, settings)
            violations.append(Violation(message, f"spec.tolerations[{index}]"))
    return violations


def enforcing(settings: Settings) -> bool:
    """Whether the validating half checks anything: only with ``enforce``.

    Why the chain asks: with enforcement off there is nothing for ``exemptNamespaces`` to
    exempt, so no exception may be reported as skipping this plugin.
    """
    return settings.enforce


PLUGIN = Plugin(
    name=NAME,
    summary="Pins dedicated namespaces' pods to their nodes and keeps other pods off them.",
    settings=Settings,
    mutate=Mutator(mutate, frozenset({PODS}), frozenset({"CREATE"})),
    validate=Validator(
        validate,
        frozenset({PODS}),
        frozenset({"CREATE", "UPDATE"}),
        active=enforcing,
        active_key="enforce",
    ),
    enabled_by_default=False,
    moved_settings={
        "clusterDefaultNodeSelector": "pod-node-selector",
        "nodeSelectorWhitelist": "pod-node-selector",
        "defaultTolerations": "pod-toleration-restriction",
        "tolerationsWhitelist": "pod-toleration-restriction",
        "memoryPressureToleration": "pod-toleration-restriction",
    },
    exempt_namespaces=("kube-system",),
)
