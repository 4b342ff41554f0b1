"""From translations to objects: the policies, their bindings, and the report.

Why the mutations of every plugin share one MutatingAdmissionPolicy: the API server orders
the policies it runs by walking a Go map, which is random, while mutations inside one
policy run in order, each on the previous one's output. So the chain order of
:data:`webhooks.plugins.ORDER` is kept by putting every Pod mutation into one policy, in
that order. RuntimeClass needs a param (the pod's RuntimeClass), and a policy with a param
kind runs once per param, so Pods that name a RuntimeClass get a second policy holding the
same mutations plus RuntimeClass's, keyed to the one RuntimeClass they name; the first
policy skips them on CREATE. DaemonSets get a policy of their own.

The DaemonSet defaults come first, as in the webhook's chain (``Plugin.precedes_admission``:
the DaemonSet controller writes them before admission, so every upstream rule sees them),
and like upstream's mutations they ask for no second pass. The webhook's chain runs again
when one of our other plugins changed a pod (dedicated-nodes' toleration, which the
RuntimeClass merge may then absorb); the Pod policies repeat their mutations in passes to
do the same (:func:`_passes`), and are ``reinvocationPolicy: Never``: the API server's
reinvocation would run them again after *any* change, which the webhook's chain does not.

Validations are order-free (they all judge the final object), so each plugin gets its own
ValidatingAdmissionPolicy, whose binding carries the plugin's action
(``validationActions``). The scoping is the webhooks' own (:mod:`webhooks.install.webhookconfig`:
the excluded namespaces, the match conditions), so a native policy judges exactly the
requests the webhook would have been sent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from webhooks.core.chain import MAX_PASSES
from webhooks.core.config import Config, camel
from webhooks.core.plugin import Plugin, Registry
from webhooks.core.policy import ACTIONS, Action, PolicyException
from webhooks.export import cel
from webhooks.export.model import (
    EXACT,
    EXCEPT,
    NOT_EXPORTED,
    Check,
    Export,
    Line,
    Mutation,
    Target,
    Translation,
    Validating,
    Variable,
    Verdict,
    exception_line,
    plugin_lines,
)
from webhooks.export.static import PARAMS_WHY, uses_params
from webhooks.export.translators import TRANSLATORS
from webhooks.install.webhookconfig import (
    API_VERSION,
    GROUP_VERSIONS,
    WebhookSettings,
    match_conditions,
    namespace_selector,
)
from webhooks.k8s.podspec import POD, TEMPLATE_RESOURCES
from webhooks.k8s.releases import NEWEST, RELEASES, Release

#: What each action does, as a binding's ``validationActions``: ``warn`` tells the user
#: and the audit log, ``audit`` only the audit log (:mod:`webhooks.core.policy`).
VALIDATION_ACTIONS: Mapping[Action, list[str]] = {
    "enforce": ["Deny"],
    "warn": ["Warn", "Audit"],
    "audit": ["Audit"],
}

RUNTIME_CLASS_PARAM = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass"}

MONITOR_WHY = (
    "monitor records the change the plugin would make without making it; a "
    "MutatingAdmissionPolicy records nothing (no audit annotations), so there is nothing "
    "to export"
)
EXPIRES_WHY = (
    "expires {when} is not applied: admission CEL has no clock, so natively the exception "
    "applies until it is removed from the config"
)


# --------------------------------------------------------------------------- resources


def _template_rules(operations: Sequence[str]) -> list[dict[str, Any]]:
    by_group: dict[str, list[str]] = {}
    for (group, resource), key in TEMPLATE_RESOURCES.items():
        if key != POD:
            by_group.setdefault(group, []).append(resource)
    return [
        {
            "apiGroups": [group],
            "apiVersions": [GROUP_VERSIONS[group]],
            "operations": operations,
            "resources": sorted(resources),
        }
        for group, resources in sorted(by_group.items())
    ]


def resource_rules(targets: Iterable[Target], operations: Iterable[str]) -> list[dict[str, Any]]:
    """``resourceRules`` for ``targets`` and ``operations`` (in the webhooks' order)."""
    ops = [op for op in ("CREATE", "UPDATE") if op in set(operations)]
    rules: list[dict[str, Any]] = []
    for target in dict.fromkeys(targets):
        if target == "pods":
            rules.append(
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ops, "resources": ["pods"]}
            )
        elif target == "daemonsets":
            rules.append(
                {
                    "apiGroups": ["apps"],
                    "apiVersions": ["v1"],
                    "operations": ops,
                    "resources": ["daemonsets"],
                }
            )
        else:
            rules.extend(_template_rules(ops))
    return rules


# --------------------------------------------------------------------------- exceptions


def _service_account(target: Target) -> str:
    """CEL for the ServiceAccount the object's pods run as (``service_account``)."""
    if target == "pods":
        spec = "object.spec"
    elif target == "daemonsets":
        spec = "object.spec.template.spec"
    else:
        spec = "(" + cel.by_template_kind(lambda path: "object." + ".".join(path)) + ")"
    return f"({spec}.?serviceAccountName.orValue('') == '' ? 'default' : {spec}.serviceAccountName)"


def exception_matches(exception: PolicyException, target: Target) -> str:
    """CEL that is true when ``exception`` matches the request and its object.

    Every matcher given must match (``PolicyException.matches``); none given matches all.
    """
    parts = []
    if exception.namespaces:
        parts.append(f"request.namespace in {cel.strings(exception.namespaces)}")
    if exception.object_selector is not None:
        parts.append(cel.selector_matches(exception.object_selector, cel.labels_of("object")))
    if exception.service_accounts:
        account = f"request.namespace + ':' + {_service_account(target)}"
        parts.append(f"({account}) in {cel.strings(exception.service_accounts)}")
    if exception.users:
        parts.append(f"request.userInfo.username in {cel.strings(exception.users)}")
    if exception.groups:
        parts.append(
            f"request.userInfo.?groups.orValue([]).exists(g, g in {cel.strings(exception.groups)})"
        )
    return "(" + " && ".join(parts) + ")" if parts else "true"


def _unexcepted(exceptions: Sequence[PolicyException], target: Target) -> str:
    """CEL: no exception of ``exceptions`` matches."""
    if not exceptions:
        return "true"
    return " && ".join(f"!{exception_matches(e, target)}" for e in exceptions)


# --------------------------------------------------------------------------- the plan


#: (plugin, phase) halves: where a hybrid installation runs each.
Halves = frozenset[tuple[str, str]]


@dataclasses.dataclass(frozen=True, slots=True)
class Planned:
    """One plugin as it will be exported: its translation, its exceptions and actions."""

    plugin: Plugin
    translation: Translation
    mutate_exceptions: tuple[PolicyException, ...]
    validate_exceptions: tuple[PolicyException, ...]
    action: Action
    overrides: tuple[tuple[Mapping[str, Any], Action], ...]
    mutate: Verdict | None
    validate: Verdict | None
    lines: tuple[Line, ...]
    #: The phases the release's CEL cannot express.
    refused: frozenset[str] = frozenset()


def _plan(plugin: Plugin, config: Config, release: Release, *, static: bool = False) -> Planned:
    rules = config.plugins[plugin.name]
    translated = TRANSLATORS[plugin.name](rules.settings)
    if static:
        translated = _without_params(translated)
    translation = _for_release(translated, release)
    refused = frozenset(
        phase
        for phase in ("mutate", "validate")
        if getattr(translation, phase) != getattr(translated, phase)
    )
    lines: list[Line] = list(translation.lines)
    mutate, validate = translation.mutate, translation.validate
    mutations = translation.mutations
    key = f"plugins.{plugin.name}"
    if plugin.mutate is not None:
        if rules.mutation == "monitor":
            mutate, mutations = NOT_EXPORTED, ()
            lines.append(Line(f"{key}.mutation", NOT_EXPORTED, MONITOR_WHY))
        else:
            lines.append(Line(f"{key}.mutation", EXACT))
    active = plugin.validate is not None and (
        plugin.validate.active is None or plugin.validate.active(rules.settings)
    )
    if not active:
        validate = None
    if plugin.validate is not None:
        lines.append(Line(f"{key}.action", EXACT))
        if rules.action_overrides:
            lines.append(Line(f"{key}.actionOverrides", EXACT))
    if plugin.exempt_namespaces is not None:
        lines.append(Line(f"{key}.exemptNamespaces", EXACT))
    covering = [e for e in config.exceptions if plugin.name in e.plugins or "*" in e.plugins]
    expiring = [e for e in covering if e.expires is not None]
    if expiring:
        names = ", ".join(e.name for e in expiring)
        why = f"exception {names} never expires natively (admission CEL has no clock)"
        if mutate == EXACT and any(e.covers(plugin.name, "mutate") for e in expiring):
            mutate = EXCEPT
            lines.append(Line(f"{key}.exceptions", EXCEPT, why))
        if validate == EXACT and any(e.covers(plugin.name, "validate") for e in expiring):
            validate = EXCEPT
            if not any(line.subject == f"{key}.exceptions" for line in lines):
                lines.append(Line(f"{key}.exceptions", EXCEPT, why))
    translation = dataclasses.replace(translation, mutations=mutations)
    return Planned(
        plugin=plugin,
        translation=translation,
        mutate_exceptions=tuple(e for e in covering if e.covers(plugin.name, "mutate")),
        validate_exceptions=tuple(e for e in covering if e.covers(plugin.name, "validate")),
        action=rules.action,
        overrides=tuple((o.namespace_selector, o.action) for o in rules.action_overrides),
        mutate=mutate if plugin.mutate is not None else None,
        validate=validate,
        lines=tuple(lines),
        refused=refused,
    )


# --------------------------------------------------------------------------- releases


def _half_expressions(translation: Translation, phase: str) -> Iterator[str]:
    """Every CEL expression of one half of ``translation`` (``mutate`` or ``validate``)."""
    if phase == "mutate":
        for mutation in translation.mutations:
            yield mutation.expression
            yield from (expression for _, expression in mutation.variables)
    for part in translation.validating:
        if part.phase != phase:
            continue
        for check in part.checks:
            yield from (check.expression, check.message)
        yield from (expression for _, expression in (*part.variables, *part.conditions))


def missing_libraries(
    translation: Translation, phase: str, release: Release
) -> dict[str, list[str]]:
    """The CEL libraries one half of ``translation`` calls that ``release`` does not offer to
    a new admission policy, each with the calls found."""
    missing: dict[str, list[str]] = {}
    for expression in _half_expressions(translation, phase):
        for library, calls in cel.library_calls(expression).items():
            if not release.cel_offers(library):
                missing.setdefault(library, [])
                missing[library] += [c for c in calls if c not in missing[library]]
    return missing


def _refusal(release: Release, halves: Sequence[str], missing: Mapping[str, Sequence[str]]) -> str:
    """Why ``release`` cannot run ``halves``: the library, the calls, where it comes from."""
    env = f"{release.cel_environment[0]}.{release.cel_environment[1]}"
    parts = []
    for library, calls in missing.items():
        first = next((r.name for r in RELEASES if r.cel_offers(library)), "")
        since = f"; Kubernetes {first} offers it" if first else ""
        parts.append(f"CEL's {library} library ({', '.join(calls)}{since})")
    words = " and ".join(_WORDS[h] for h in halves) + (" halves" if len(halves) > 1 else " half")
    return (
        f"on Kubernetes {release.name} its {words} need{'s' if len(halves) == 1 else ''} "
        f"{' and '.join(parts)}, which its API server refuses in a new admission policy "
        f"(new expressions compile against the {env} CEL environment)"
    )


_WORDS = {"mutate": "mutating", "validate": "validating"}


def _for_release(translation: Translation, release: Release) -> Translation:
    """``translation`` less the halves ``release``'s CEL cannot express, each refused with a
    line naming the missing library.

    Why a refusal rather than a policy: the API server refuses the whole object over one
    call it lacks, so sending it would fail the installation instead of one plugin.
    """
    halves = {"mutate": translation.mutate, "validate": translation.validate}
    missing: dict[str, list[str]] = {}
    refused = []
    for phase, verdict in halves.items():
        if verdict is None or verdict == NOT_EXPORTED:
            continue
        found = missing_libraries(translation, phase, release)
        if found:
            halves[phase] = NOT_EXPORTED
            refused.append(phase)
            for library, calls in found.items():
                known = missing.setdefault(library, [])
                known += [c for c in calls if c not in known]
    if not refused:
        return translation
    key = f"plugins.{translation.plugin}"
    own = [line for line in translation.lines if line.subject == key]
    why = "; ".join([*(line.why for line in own if line.why), _refusal(release, refused, missing)])
    lines = [Line(key, NOT_EXPORTED, why), *(line for line in translation.lines if line not in own)]
    return dataclasses.replace(
        translation,
        mutations=() if "mutate" in refused else translation.mutations,
        validating=tuple(p for p in translation.validating if p.phase not in refused),
        mutate=halves["mutate"],
        validate=halves["validate"],
        lines=tuple(lines),
    )


def _without_params(translation: Translation) -> Translation:
    """``translation`` with every half that needs a param not exported: static admission
    manifests (:mod:`webhooks.export.static`) allow none, and the API server refuses to
    start with one."""
    halves = uses_params(translation)
    if not halves:
        return translation
    key = f"plugins.{translation.plugin}"
    mutate = NOT_EXPORTED if "mutate" in halves else translation.mutate
    validate = NOT_EXPORTED if "validate" in halves else translation.validate
    whole = all(v in (None, NOT_EXPORTED) for v in (mutate, validate))
    own = Line(key, NOT_EXPORTED if whole else EXCEPT, PARAMS_WHY)
    return dataclasses.replace(
        translation,
        mutations=() if mutate == NOT_EXPORTED else translation.mutations,
        validating=tuple(
            p for p in translation.validating if p.phase not in halves and not p.runtime_class
        ),
        mutate=mutate,
        validate=validate,
        lines=(own, *(line for line in translation.lines if line.subject != key)),
    )


def _chain_order(plan: Sequence[Planned]) -> list[Planned]:
    """The mutators' order in the webhook's chain (:func:`webhooks.core.chain.resolve`): what
    a controller writes before admission first, then :data:`webhooks.plugins.ORDER`."""
    return sorted(plan, key=lambda planned: not planned.plugin.precedes_admission)


def native_halves(plan: Sequence[Planned]) -> Halves:
    """The halves a hybrid installation runs natively; the webhook runs the rest.

    A validating half goes native when it is exported exactly (validations are order-free).
    Mutating halves go native only as a prefix of the chain: the API server runs every
    mutating policy before any mutating webhook, so a mutation after one that stays with the
    webhook would otherwise run out of order.
    """
    native: set[tuple[str, str]] = set()
    prefix = True
    for planned in _chain_order(plan):
        if planned.mutate is not None:
            prefix = prefix and planned.mutate == EXACT
            if prefix:
                native.add((planned.plugin.name, "mutate"))
        if planned.validate == EXACT:
            native.add((planned.plugin.name, "validate"))
    return frozenset(native)


# --------------------------------------------------------------------------- objects


def _metadata(name: str, settings: WebhookSettings) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": settings.app_name, **settings.labels}
    metadata: dict[str, Any] = {"name": name, "labels": labels}
    if settings.annotations:
        metadata["annotations"] = dict(settings.annotations)
    return metadata


def _merge_variables(groups: Iterable[Iterable[Variable]]) -> list[dict[str, str]]:
    seen: dict[str, str] = {}
    for group in groups:
        for name, expression in group:
            if seen.setdefault(name, expression) != expression:
                raise ValueError(f"variable {name} is defined twice, differently")
    return [{"name": name, "expression": expression} for name, expression in seen.items()]


def _conditions(settings: WebhookSettings, extra: Iterable[Variable] = ()) -> list[dict[str, str]]:
    base = match_conditions(settings) if settings.match_conditions else []
    return [*base, *({"name": n, "expression": e} for n, e in extra)]


def _constraints(settings: WebhookSettings, rules: list[dict[str, Any]]) -> dict[str, Any]:
    constraints: dict[str, Any] = {
        "resourceRules": rules,
        "matchPolicy": "Equivalent",
        "namespaceSelector": namespace_selector(settings),
    }
    if settings.object_selector:
        constraints["objectSelector"] = dict(settings.object_selector)
    return constraints


#: The annotation a pass leaves when one of our own plugins changed the object (``-<n>``),
#: and how many passes run at most (:data:`webhooks.core.chain.MAX_PASSES`).
PASS_MARKER = "placement-webhooks.io/native-pass"


def _marker(n: int) -> str:
    return f"{PASS_MARKER}-{n}"


def _marked(n: int) -> str:
    """CEL: pass ``n`` left its marker (one of our plugins changed the object in it)."""
    return f"{cel.quote(_marker(n))} in object.metadata.?annotations.orValue({{}})"


def _mark(n: int) -> str:
    """CEL: the JSONPatch op that leaves pass ``n``'s marker."""
    escaped = _marker(n).replace("~", "~0").replace("/", "~1")
    return (
        f"has(object.metadata.annotations) ? JSONPatch{{op: 'add',"
        f" path: '/metadata/annotations/{escaped}', value: 'changed'}}"
        f" : JSONPatch{{op: 'add', path: '/metadata/annotations',"
        f" value: {{{cel.quote(_marker(n))}: 'changed'}}}}"
    )


def _guarded(entry: tuple[Planned, Mutation], n: int = 1) -> dict[str, Any]:
    """The mutation for pass ``n``: guarded by its operations, its exceptions and, after the
    first pass, by the previous pass's marker; one of our own plugins leaves the marker."""
    planned, mutation = entry
    guards = []
    if n > 1:
        guards.append(_marked(n - 1))
    if mutation.operations != frozenset({"CREATE", "UPDATE"}):
        ops = sorted(mutation.operations)
        guards.append(f"request.operation in {cel.strings(ops)}")
    if planned.mutate_exceptions:
        guards.append(_unexcepted(planned.mutate_exceptions, mutation.target))
    expression = mutation.expression
    if _asks_again(planned.plugin) and _reinvoking(mutation.target):
        expression = cel.bind(f"({expression})", "ops", f"size(ops) > 0 ? ops + [{_mark(n)}] : ops")
    if guards:
        expression = f"({' && '.join(guards)}) ? ({expression}) : []"
    return {"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}


def _asks_again(plugin: Plugin) -> bool:
    """Whether a change by ``plugin`` runs the chain again (:mod:`webhooks.core.chain`): one of
    ours, not upstream's and not one that stands for a controller's writes."""
    return not (plugin.upstream or plugin.precedes_admission)


def _reinvoking(target: Target) -> bool:
    """Whether a change by one of our plugins to ``target`` runs the chain again: only Pods
    have upstream mutations for it to affect."""
    return target == "pods"


def _passes(entries: Sequence[tuple[Planned, Mutation]], target: Target) -> list[dict[str, Any]]:
    """The mutations of every pass, then the markers' removal.

    Why passes, as the webhook's chain has them (:mod:`webhooks.core.chain`): when one of
    our own plugins changes a pod, the chain runs again on the result, up to
    ``MAX_PASSES`` times, so an upstream rule sees what ours added (dedicated-nodes'
    toleration, which a RuntimeClass's wildcard then absorbs). The
    API server's own reinvocation cannot say "only when ours changed it", so each pass
    leaves a marker when ours did, the next pass runs only behind it, and the markers go
    before the object is stored.
    """
    ours = any(_asks_again(planned.plugin) for planned, _ in entries)
    if not ours or not _reinvoking(target):
        return [_guarded(entry) for entry in entries]
    passes = [_guarded(entry, n) for n in range(1, MAX_PASSES + 1) for entry in entries]
    removals = " + ".join(
        f"({_marked(n)} ? [JSONPatch{{op: 'remove',"
        f" path: '/metadata/annotations/{_marker(n).replace('/', '~1')}'}}] : [])"
        for n in range(1, MAX_PASSES + 1)
    )
    return [*passes, {"patchType": "JSONPatch", "jsonPatch": {"expression": removals}}]


def _mutating(
    name: str,
    settings: WebhookSettings,
    entries: Sequence[tuple[Planned, Mutation]],
    target: Target,
    *,
    conditions: Iterable[Variable] = (),
    runtime_class: bool = False,
    reinvocation: str = "Never",
    release: Release = NEWEST,
) -> list[dict[str, Any]]:
    operations = {op for _, m in entries for op in m.operations}
    spec: dict[str, Any] = {}
    if runtime_class:
        spec["paramKind"] = dict(RUNTIME_CLASS_PARAM)
    spec["matchConstraints"] = _constraints(settings, resource_rules([target], operations))
    spec["matchConditions"] = _conditions(settings, conditions)
    spec["variables"] = _merge_variables(m.variables for _, m in entries)
    spec["mutations"] = _passes(entries, target)
    spec["failurePolicy"] = "Fail"
    spec["reinvocationPolicy"] = reinvocation
    binding: dict[str, Any] = {"policyName": name}
    if runtime_class:
        binding["paramRef"] = {"selector": {}, "parameterNotFoundAction": "Allow"}
    return [
        {
            "apiVersion": release.mutating_policy_api,
            "kind": "MutatingAdmissionPolicy",
            "metadata": _metadata(name, settings),
            "spec": spec,
        },
        {
            "apiVersion": release.mutating_policy_api,
            "kind": "MutatingAdmissionPolicyBinding",
            "metadata": _metadata(name, settings),
            "spec": binding,
        },
    ]


def _chosen_action(planned: Planned) -> str:
    """CEL naming the action for the request's namespace: the first override that matches."""
    labels = cel.labels_of("namespaceObject")
    expression = cel.quote(planned.action)
    for selector, action in reversed(planned.overrides):
        expression = (
            f"{cel.selector_matches(selector, labels)} ? {cel.quote(action)} : ({expression})"
        )
    return expression


def _validation(check: Check, action: str | None) -> dict[str, Any]:
    expression = check.expression
    if action is not None:
        expression = f"variables.action != {cel.quote(action)} || ({expression})"
    return {"expression": expression, "messageExpression": check.message, "reason": check.reason}


def _validating_conditions(planned: Planned, part: Validating) -> list[tuple[str, str]]:
    """A validating part's own match conditions, its param's (the pod's RuntimeClass) and
    the exceptions of its phase."""
    conditions = list(part.conditions)
    if part.runtime_class:
        conditions.append(
            (
                "the-pod-s-runtime-class",
                "has(object.spec.runtimeClassName)"
                " && object.spec.runtimeClassName == params.metadata.name",
            )
        )
    exceptions = (
        planned.mutate_exceptions if part.phase == "mutate" else planned.validate_exceptions
    )
    if exceptions:
        target: Target = part.targets[0] if len(part.targets) == 1 else "templates"
        conditions.append(("not-excepted", _unexcepted(exceptions, target)))
    return conditions


def _validating(
    base: str, settings: WebhookSettings, planned: Planned, part: Validating
) -> list[dict[str, Any]]:
    stem = f"{base}-{planned.plugin.name}" + (f"-{part.suffix}" if part.suffix else "")
    conditions = _validating_conditions(planned, part)
    if planned.overrides:
        actions = list(dict.fromkeys([planned.action, *(a for _, a in planned.overrides)]))
        variants: list[tuple[str, Action | None]] = [(f"{stem}-{a}", a) for a in actions]
    else:
        variants = [(stem, None)]
    objects: list[dict[str, Any]] = []
    for name, action in variants:
        variables = list(part.variables)
        if action is not None:
            variables.insert(0, ("action", _chosen_action(planned)))
        spec: dict[str, Any] = {}
        if part.runtime_class:
            spec["paramKind"] = dict(RUNTIME_CLASS_PARAM)
        spec["matchConstraints"] = _constraints(
            settings, resource_rules(part.targets, part.operations)
        )
        spec["matchConditions"] = _conditions(settings, conditions)
        if variables:
            spec["variables"] = _merge_variables([variables])
        spec["validations"] = [_validation(c, action) for c in part.checks]
        spec["failurePolicy"] = "Fail"
        binding: dict[str, Any] = {
            "policyName": name,
            "validationActions": VALIDATION_ACTIONS[action or planned.action],
        }
        if part.runtime_class:
            binding["paramRef"] = {"selector": {}, "parameterNotFoundAction": "Allow"}
        objects += [
            {
                "apiVersion": API_VERSION,
                "kind": "ValidatingAdmissionPolicy",
                "metadata": _metadata(name, settings),
                "spec": spec,
            },
            {
                "apiVersion": API_VERSION,
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": _metadata(name, settings),
                "spec": binding,
            },
        ]
    return objects


def _objects(
    plan: Sequence[Planned],
    settings: WebhookSettings,
    halves: frozenset[tuple[str, str]] | None,
    release: Release,
) -> list[dict[str, Any]]:
    def wanted(planned: Planned, phase: str, verdict: Verdict | None) -> bool:
        if verdict is None or verdict == NOT_EXPORTED:
            return False
        return halves is None or (planned.plugin.name, phase) in halves

    pods: list[tuple[Planned, Mutation]] = []
    daemonsets: list[tuple[Planned, Mutation]] = []
    for planned in _chain_order(plan):
        if not wanted(planned, "mutate", planned.mutate):
            continue
        for mutation in planned.translation.mutations:
            (pods if mutation.target == "pods" else daemonsets).append((planned, mutation))
    base = settings.name
    objects: list[dict[str, Any]] = []
    with_class = [e for e in pods if e[1].runtime_class]
    without_class = [e for e in pods if not e[1].runtime_class]
    if with_class:
        skip = (
            "not-a-runtime-class-pod",
            "request.operation != 'CREATE' || !has(object.spec.runtimeClassName)",
        )
        if without_class:
            objects += _mutating(
                base, settings, without_class, "pods", conditions=[skip], release=release
            )
        objects += _mutating(
            f"{base}-runtime-class",
            settings,
            pods,
            "pods",
            conditions=[
                (
                    "the-pod-s-runtime-class",
                    "request.operation == 'CREATE' && has(object.spec.runtimeClassName)"
                    " && object.spec.runtimeClassName == params.metadata.name",
                )
            ],
            runtime_class=True,
            release=release,
        )
    elif pods:
        objects += _mutating(base, settings, pods, "pods", release=release)
    if daemonsets:
        objects += _mutating(
            f"{base}-daemonsets", settings, daemonsets, "daemonsets", release=release
        )
    for planned in plan:
        for part in planned.translation.validating:
            verdict = planned.mutate if part.phase == "mutate" else planned.validate
            if wanted(planned, part.phase, verdict):
                objects += _validating(base, settings, planned, part)
    return objects


def _exception_lines(config: Config, plugins: Mapping[str, Verdict]) -> list[Line]:
    """One line per exception of ``plugins`` (their verdicts, by name)."""
    lines = []
    for index, exception in enumerate(config.exceptions):
        if exception.name.endswith(".exemptNamespaces"):
            continue
        covered = [v for name, v in plugins.items() if name in exception.plugins]
        if "*" in exception.plugins:
            covered = list(plugins.values())
        if not covered:
            continue
        subject = f"exceptions[{index}] ({exception.name})"
        if exception.expires is None:
            line = Line(subject, EXACT)
        else:
            when = exception.expires.strftime("%Y-%m-%dT%H:%M:%SZ")
            line = Line(subject, EXCEPT, EXPIRES_WHY.format(when=when))
        lines.append(exception_line(line, covered))
    return lines


def export(
    config: Config,
    registry: Registry,
    only: Sequence[str] = (),
    settings: WebhookSettings | None = None,
    *,
    hybrid: bool = False,
    release: Release = NEWEST,
    static: bool = False,
) -> Export:
    """The enabled plugins (or exactly ``only``) as native policies, and the report.

    ``settings`` scope the policies as the webhooks are scoped (their defaults are the
    chart's). With ``hybrid`` only the halves a hybrid installation runs natively are
    exported (:func:`native_halves`), and the report says what of each plugin its webhook
    keeps. ``release`` is the Kubernetes release the objects are for: the API version of
    its MutatingAdmissionPolicies, and the CEL its API server accepts (a half that needs
    more is refused, and a hybrid installation's webhook keeps it). With ``static`` only
    what static admission manifests can hold is exported (no params:
    :func:`webhooks.export.static.uses_params`), for
    :func:`webhooks.export.static.static_manifests` to lay out.
    """
    settings = settings or WebhookSettings()
    chosen = [p for p in registry if p.name in only] if only else config.chain(registry)
    plan = [_plan(plugin, config, release, static=static) for plugin in chosen]
    native = native_halves(plan)
    kept = _kept(plan, native)
    lines: list[Line] = []
    verdicts: dict[str, Verdict] = {}
    for planned in plan:
        name = planned.plugin.name
        halves = {"mutate": planned.mutate, "validate": planned.validate}
        where = frozenset(phase for plugin, phase in kept if plugin == name) if hybrid else None
        own = plugin_lines(name, halves, planned.lines, setting_names(planned.plugin), where)
        verdicts[name] = own[0].verdict
        lines += own
    lines += _exception_lines(config, verdicts)
    objects = _objects(plan, settings, native if hybrid else None, release)
    refused = frozenset((p.plugin.name, phase) for p in plan for phase in p.refused)
    return Export(tuple(objects), tuple(lines), native, kept, tuple(verdicts), refused)


def _kept(plan: Sequence[Planned], native: Halves) -> Halves:
    active = {(p.plugin.name, "mutate") for p in plan if p.mutate is not None} | {
        (p.plugin.name, "validate") for p in plan if p.validate is not None
    }
    return frozenset(active - native)


def webhook_halves(config: Config, registry: Registry, release: Release = NEWEST) -> Halves:
    """The (plugin, phase) halves of the enabled plugins a hybrid installation's webhook
    keeps on ``release``: :attr:`Export.webhook` of :func:`export`, without building any
    object.

    Why one function: ``webhook-config --native`` registers exactly these and ``serve
    --native`` runs exactly these, so the two cannot disagree about what runs where (given
    the same ``--kubernetes-version``).
    """
    plan = [_plan(plugin, config, release) for plugin in config.chain(registry)]
    return _kept(plan, native_halves(plan))


def setting_names(plugin: Plugin) -> list[str]:
    """The plugin's settings as they are spelt in the config (camelCase)."""
    return [camel(f.name) for f in dataclasses.fields(plugin.settings)]


__all__ = [
    "ACTIONS",
    "export",
    "missing_libraries",
    "native_halves",
    "setting_names",
    "webhook_halves",
]
