"""Kyverno policies that store the same pods as ``placement-webhooks serve`` does.

The scale bed compares what admission costs with each engine, so Kyverno must do the same
work: for the bed's workload (plain pods, pods requesting ``nvidia.com/gpu``, pods in
tenant namespaces) every pod it admits must be stored exactly as ``serve`` stores it, and
every pod ``serve`` refuses must be refused. ``tests/controlplane/test_kyverno_peer.py``
reads both back and diffs them field by field.

Written as Kyverno's CEL policies (``policies.kyverno.io/v1`` ``MutatingPolicy`` and
``ValidatingPolicy``), the same language as the native policies ``export`` prints, so the
engines are compared on equal rules rather than on different policy languages.
:func:`for_config` builds them from one of our config files, plugin by plugin:

* ``default-toleration-seconds``: the not-ready and unreachable ``NoExecute`` tolerations
  unless an entry already covers the taint (key equal or empty, effect ``NoExecute`` or
  empty), appended in that order; with ``namespaceOverrides`` the seconds come from the
  Namespace's annotations (a non-negative integer; anything else is ignored), and an entry
  exactly equal to the default that covers the taint first is rewritten to them, with its
  exact duplicates after it;
* ``extended-resource-toleration``: an ``Exists``/``NoSchedule`` toleration for every
  extended resource a container or init container requests (or limits), byte-wise sorted,
  unless the same toleration is there; with ``enforce``, a toleration of a guarded key is
  refused unless a request earns it (the key itself, ``resources``, ``resourcePrefixes``);
* ``dedicated-nodes``: a pod of a namespace with a group (the static ``namespaces`` map,
  else the label) gets the group's ``Equal`` toleration (unless one at least as broad is
  there) and ``key In [group]`` ANDed into every non-empty required node-affinity term (or
  a new term); with ``enforce``, a pod that tolerates another group's taint (``Equal`` on
  another group, ``Exists`` on the key, the bare wildcard, ``Gt``/``Lt``) is refused;
* ``exemptNamespaces`` exempt from the refusals, ``action`` ``warn``/``audit`` become
  Kyverno's ``Warn``/``Audit`` actions.

All one mutation: the tolerations are computed from the pod as submitted and appended in
the chain's order (not-ready, unreachable, extended resources, the group's), so no step's
result depends on how Kyverno orders patches between policies.

Not translated, because the bed's workload never meets them (a config that needs them is
refused by :func:`for_config` with :class:`Untranslated`, except the first two, which are on
by default and do nothing for that workload): RuntimeClass overhead and scheduling (no pod
names a RuntimeClass), the DaemonSet defaults (the bed's pods are not a DaemonSet's), DRA
claims (a pod with ``resourceClaims`` is not judged by the guarded-taint check when a guard
names device classes), the refusal of a pod whose node selector or affinity excludes its
group, UPDATE mutations (the bed only creates), ``pod-node-selector``,
``pod-toleration-restriction``, ``anti-affinity-topology``, ``actionOverrides`` and
exceptions other than ``exemptNamespaces``. Refusal messages differ; only the refusal is
compared. Autogen is off (``serve`` does not mutate pod templates outside DaemonSets) and so
is background evaluation (only admission is compared).

Failure policies are ``serve``'s as ``webhook-config`` registers it by default: the mutation
fails open (``Ignore``), the validation closed (``Fail``), both with ``serve``'s 5 s
timeout. So a fault hits both engines under the same rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controlplane.harness.admission import read

API = "policies.kyverno.io/v1"
#: Namespaces neither engine is registered for (``webhook-config``'s exclusions).
EXCLUDED_NAMESPACES = ("kube-system", "kube-node-lease", "kyverno", "placement-webhooks")
FLEET = Path(__file__).resolve().parents[1] / "configs" / "fleet.yaml"

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY_ANNOTATION = "placement-webhooks.io/not-ready-seconds"
UNREACHABLE_ANNOTATION = "placement-webhooks.io/unreachable-seconds"
#: Plugins on by default that the policies leave out: the bed's workload never meets them.
NOT_COVERED = ("runtime-class", "daemonset-tolerations")
#: Plugins the policies cannot stand for at all.
UNTRANSLATED = ("pod-node-selector", "pod-toleration-restriction", "anti-affinity-topology")
_ACTIONS = {"enforce": "Deny", "warn": "Warn", "audit": "Audit"}
#: ``webhook-config``'s ``timeoutSeconds``: Kyverno writes each policy's own into the
#: webhook it registers for it (10 s unless the policy says).
TIMEOUT_SECONDS = 5


class Untranslated(ValueError):
    """The config asks for something these policies do not do; names each such key."""


def _cel(value: Any) -> str:
    """A string or a list of strings as a CEL literal (JSON's quoting is CEL's)."""
    return json.dumps(value)


def _match(operations: tuple[str, ...]) -> dict[str, Any]:
    return {
        "resourceRules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": list(operations),
                "resources": ["pods"],
            }
        ],
        "namespaceSelector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": list(EXCLUDED_NAMESPACES),
                }
            ]
        },
    }


#: Mirror pods (the kubelet's copies of static pods) are never touched by ``serve``.
_NOT_MIRROR = {
    "name": "not-a-mirror-pod",
    "expression": "!('kubernetes.io/config.mirror' in object.metadata.?annotations.orValue({}))",
}

_TOLERATIONS = {"name": "tolerations", "expression": "object.spec.?tolerations.orValue([])"}

#: Extended resources requested or limited by any container, sorted and distinct: names
#: with a domain outside ``kubernetes.io`` that are not quota's ``requests.`` names.
_EXTENDED = {
    "name": "extended",
    "expression": (
        "(object.spec.containers + object.spec.?initContainers.orValue([]))"
        ".map(c, dyn(c).?resources.?requests.orValue({}).map(n, n)"
        " + dyn(c).?resources.?limits.orValue({}).map(n, n))"
        ".flatten().filter(n, n.contains('/') && !n.contains('kubernetes.io/')"
        " && !n.startsWith('requests.')).distinct().sort()"
    ),
}

_EXTENDED_TOLERATIONS = {
    "name": "extendedTolerations",
    "expression": (
        "variables.extended.filter(n, !variables.tolerations.exists(t,"
        " t.?key.orValue('') == n && t.?operator.orValue('') == 'Exists'"
        " && t.?value.orValue('') == '' && t.?effect.orValue('') == 'NoSchedule'))"
        ".map(n, {'key': dyn(n), 'operator': dyn('Exists'), 'effect': dyn('NoSchedule')})"
    ),
}


def _covers(key: str, t: str = "t") -> str:
    """Upstream's loose test: the toleration ``t`` covers ``key``'s NoExecute taint."""
    return (
        f"{t}.?key.orValue('') in ['', {_cel(key)}] && {t}.?effect.orValue('') in ['', 'NoExecute']"
    )


def _is_default(key: str, seconds: str, t: str) -> str:
    """``t`` is exactly the toleration DefaultTolerationSeconds adds for ``key``."""
    return (
        f"{t}.?key.orValue('') == {_cel(key)} && {t}.?operator.orValue('') == 'Exists'"
        f" && {t}.?value.orValue('') == '' && {t}.?effect.orValue('') == 'NoExecute'"
        f" && {t}.?tolerationSeconds.orValue(-1) == {seconds}"
    )


def _seconds_variables(name: str, annotation: str, default: int, overrides: bool) -> list[Any]:
    """``<name>Seconds``: the Namespace's seconds for one taint, else the default; and
    ``<name>First``: the index of the first entry covering the taint (a list of 0 or 1)."""
    if overrides:
        raw = f"namespaceObject.?metadata.?annotations[?{_cel(annotation)}].orValue('')"
        seconds = f"{raw}.matches('^[0-9]{{1,18}}$') ? int({raw}) : {default}"
    else:
        seconds = str(default)
    key = NOT_READY if name == "notReady" else UNREACHABLE
    return [
        {"name": f"{name}Seconds", "expression": seconds},
        {
            "name": f"{name}First",
            "expression": (
                "lists.range(size(variables.tolerations))"
                f".filter(i, {_covers(key, 'variables.tolerations[i]')})"
            ),
        },
    ]


def _default_seconds() -> dict[str, str]:
    """The DefaultTolerationSeconds tolerations no entry covers, with their seconds."""
    parts = []
    for name, key in (("notReady", NOT_READY), ("unreachable", UNREACHABLE)):
        toleration = (
            f"{{'key': dyn({_cel(key)}), 'operator': dyn('Exists'), 'effect': dyn('NoExecute'),"
            f" 'tolerationSeconds': dyn(variables.{name}Seconds)}}"
        )
        parts.append(f"(size(variables.{name}First) > 0 ? [] : [{toleration}])")
    return {"name": "defaultSeconds", "expression": " + ".join(parts)}


def _rewrites(not_ready: int, unreachable: int) -> str:
    """JSON patches setting a Namespace's seconds into the entries equal to the default."""
    parts = []
    for name, key, default in (
        ("notReady", NOT_READY, not_ready),
        ("unreachable", UNREACHABLE, unreachable),
    ):
        first = f"variables.{name}First"
        entry = "variables.tolerations[j]"
        parts.append(
            f"(size({first}) > 0 && variables.{name}Seconds != {default}"
            f" && {_is_default(key, str(default), f'variables.tolerations[{first}[0]]')}"
            f" ? lists.range(size(variables.tolerations)).filter(j, j >= {first}[0]"
            f" && {_is_default(key, str(default), entry)}).map(j, JSONPatch{{op: 'replace',"
            " path: '/spec/tolerations/' + string(j) + '/tolerationSeconds',"
            f" value: variables.{name}Seconds}}) : [])"
        )
    return " + ".join(parts)


def _group(settings: Any) -> dict[str, str]:
    """The namespace's group: the static map wins over the label ("" for none)."""
    label = f"namespaceObject.?metadata.?labels[?{_cel(settings.namespace_label)}].orValue('')"
    static = dict(settings.namespaces)
    expression = (
        f"request.namespace in {_cel(static)} ? {_cel(static)}[request.namespace] : {label}"
    )
    return {"name": "group", "expression": expression if static else label}


def _group_toleration(settings: Any) -> dict[str, str]:
    """The group's toleration unless one at least as broad is there (same or empty effect;
    the bare wildcard, Exists on the key, or Equal on the group)."""
    key, effect = _cel(settings.key), _cel(settings.effect)
    return {
        "name": "groupToleration",
        "expression": (
            "variables.group == '' || variables.tolerations.exists(t,"
            f" t.?effect.orValue('') in ['', {effect}] && ("
            " (t.?key.orValue('') == '' && t.?operator.orValue('') == 'Exists')"
            f" || (t.?key.orValue('') == {key} && (t.?operator.orValue('') == 'Exists'"
            " || (t.?operator.orValue('') in ['', 'Equal']"
            " && t.?value.orValue('') == variables.group)))))"
            f" ? [] : [{{'key': dyn({key}), 'operator': dyn('Equal'),"
            f" 'value': dyn(variables.group), 'effect': dyn({effect})}}]"
        ),
    }


_REQUIRED = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"
_TERMS = {
    "name": "terms",
    "expression": (
        "object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution"
        ".?nodeSelectorTerms.orValue([]).map(t, dyn(t))"
    ),
}


def _pin(settings: Any) -> str:
    """JSON patches pinning a group's pod: a new required term when there is none (creating
    what is missing above it), else the requirement ANDed into each non-empty term that
    lacks it."""
    key = _cel(settings.key)
    requirement = f"{{'key': dyn({key}), 'operator': dyn('In'), 'values': dyn([variables.group])}}"
    selector = f"{{'nodeSelectorTerms': [{{'matchExpressions': [{requirement}]}}]}}"
    term = "variables.terms[i]"
    return (
        "(variables.group == '' ? [] :"
        " !has(object.spec.affinity) ? [JSONPatch{op: 'add', path: '/spec/affinity', value:"
        f" {{'nodeAffinity': {{'requiredDuringSchedulingIgnoredDuringExecution': {selector}}}}}}}]"
        " : !has(object.spec.affinity.nodeAffinity) ? [JSONPatch{op: 'add',"
        " path: '/spec/affinity/nodeAffinity', value:"
        f" {{'requiredDuringSchedulingIgnoredDuringExecution': {selector}}}}}]"
        " : !has(object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution)"
        f" ? [JSONPatch{{op: 'add', path: '{_REQUIRED}', value: {selector}}}]"
        " : lists.range(size(variables.terms)).filter(i,"
        f" size({term}.?matchExpressions.orValue([])) + size({term}.?matchFields.orValue([])) > 0"
        f" && !{term}.?matchExpressions.orValue([]).exists(e, e.key == {key}"
        " && e.operator == 'In' && size(e.?values.orValue([])) > 0"
        " && e.?values.orValue([]).all(v, v == variables.group)))"
        f".map(i, has({term}.matchExpressions)"
        f" ? JSONPatch{{op: 'add', path: '{_REQUIRED}/nodeSelectorTerms/' + string(i)"
        f" + '/matchExpressions/-', value: {requirement}}}"
        f" : JSONPatch{{op: 'add', path: '{_REQUIRED}/nodeSelectorTerms/' + string(i)"
        f" + '/matchExpressions', value: [{requirement}]}}))"
    )


def _append_tolerations(variable: str) -> str:
    """JSON patches appending the list ``variable`` to the pod's tolerations."""
    return (
        f"(size({variable}) == 0 ? [] : has(object.spec.tolerations)"
        f" ? {variable}.map(t, JSONPatch{{op: 'add', path: '/spec/tolerations/-', value: t}})"
        f" : [JSONPatch{{op: 'add', path: '/spec/tolerations', value: {variable}}}])"
    )


def _policy(kind: str, name: str, failure_policy: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": kind,
        "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "scale-bench"}},
        "spec": {
            "autogen": {"podControllers": {"controllers": []}},
            "evaluation": {"background": {"enabled": False}},
            "failurePolicy": failure_policy,
            "webhookConfiguration": {"timeoutSeconds": TIMEOUT_SECONDS},
            **spec,
        },
    }


_JUDGED = {
    "name": "judged",
    "expression": (
        "request.operation != 'UPDATE' ? variables.tolerations :"
        " variables.tolerations.filter(t, !oldObject.spec.?tolerations.orValue([]).exists(o,"
        " o.?key.orValue('') == t.?key.orValue('') && o.?operator.orValue('') =="
        " t.?operator.orValue('') && o.?value.orValue('') == t.?value.orValue('')"
        " && o.?effect.orValue('') == t.?effect.orValue('')))"
    ),
}


def _exempt(exempt: tuple[str, ...]) -> str:
    return f"!(request.namespace in {_cel(list(exempt))})" if exempt else "true"


def _dedicated_validation(settings: Any, exempt: tuple[str, ...]) -> dict[str, Any]:
    key, effect = _cel(settings.key), _cel(settings.effect)
    foreign = (
        f"t.?effect.orValue('') in ['', {effect}] && t.?key.orValue('') in ['', {key}]"
        " && (t.?operator.orValue('') == 'Exists'"
        " || (t.?operator.orValue('') in ['', 'Equal']"
        " && t.?value.orValue('') != '' && t.?value.orValue('') != variables.group)"
        " || t.?operator.orValue('') in ['Gt', 'Lt'])"
    )
    return {
        "expression": f"!({_exempt(exempt)}) || !variables.judged.exists(t, {foreign})",
        "message": "dedicated-nodes: a toleration lets this pod onto another group's nodes",
        "reason": "Forbidden",
    }


def _guard_validation(guard: Any, exempt: tuple[str, ...]) -> dict[str, Any]:
    key = guard.taint_key
    names = [key, *guard.earned_by.resources]
    earned = f"variables.extended.exists(n, n in {_cel(names)}" + "".join(
        f" || n.startsWith({_cel(prefix)})" for prefix in guard.earned_by.resource_prefixes
    )
    earned += ")"
    if guard.earned_by.device_classes:
        earned += " || size(object.spec.?resourceClaims.orValue([])) > 0"
    return {
        "expression": (
            f"!({_exempt(exempt)}) || !variables.judged.exists(t, t.?key.orValue('') =="
            f" {_cel(key)}) || {earned}"
        ),
        "message": f"extended-resource-toleration: nothing the pod requests earns {key}",
        "reason": "Forbidden",
    }


def untranslated(config: Any) -> list[str]:
    """Every key of ``config`` these policies cannot stand for, as ``key: why``."""
    problems = []
    for name in UNTRANSLATED:
        if config.plugins[name].enabled:
            problems.append(f"plugins.{name}: not translated")
    for name, plugin in config.plugins.items():
        if not plugin.enabled:
            continue
        if plugin.action_overrides:
            problems.append(f"plugins.{name}.actionOverrides: not translated")
        if plugin.mutation != "apply":
            problems.append(f"plugins.{name}.mutation: {plugin.mutation} not translated")
    ert = config.settings("extended-resource-toleration")
    if ert.device_claims or ert.device_class_taints:
        problems.append("plugins.extended-resource-toleration: DRA claims are not translated")
    for exception in config.exceptions:
        if not exception.name.endswith(".exemptNamespaces"):
            problems.append(f"exceptions ({exception.name}): not translated")
    return problems


def for_config(path: Path | None) -> list[dict[str, Any]]:
    """The MutatingPolicy (and ValidatingPolicy, when a plugin refuses) that do what
    ``serve`` does with the config at ``path`` (``None``: the built-in defaults) for the
    bed's workload; :class:`Untranslated` names what they cannot do."""
    config = read(path)
    problems = untranslated(config)
    if problems:
        raise Untranslated("; ".join(problems))
    exempt = {
        exception.name.removesuffix(".exemptNamespaces"): exception.namespaces
        for exception in config.exceptions
    }
    variables: list[Any] = [_TOLERATIONS]
    added: list[str] = []
    patches: list[str] = []
    if config.plugins["default-toleration-seconds"].enabled:
        dts = config.settings("default-toleration-seconds")
        overrides = dts.namespace_overrides
        variables += _seconds_variables(
            "notReady", NOT_READY_ANNOTATION, dts.not_ready_seconds, overrides
        )
        variables += _seconds_variables(
            "unreachable", UNREACHABLE_ANNOTATION, dts.unreachable_seconds, overrides
        )
        variables.append(_default_seconds())
        added.append("variables.defaultSeconds")
        if overrides:
            patches.append(_rewrites(dts.not_ready_seconds, dts.unreachable_seconds))
    ert_plugin = config.plugins["extended-resource-toleration"]
    variables.append(_EXTENDED)
    if ert_plugin.enabled:
        variables.append(_EXTENDED_TOLERATIONS)
        added.append("variables.extendedTolerations")
    dedicated = config.plugins["dedicated-nodes"]
    if dedicated.enabled:
        variables += [_group(dedicated.settings), _group_toleration(dedicated.settings), _TERMS]
        added.append("variables.groupToleration")
    variables.append({"name": "added", "expression": " + ".join(added) or "[]"})
    patches.append(_append_tolerations("variables.added"))
    if dedicated.enabled:
        patches.append(_pin(dedicated.settings))
    policies = [
        _policy(
            "MutatingPolicy",
            "placement-mutations",
            "Ignore",
            {
                "matchConstraints": _match(("CREATE",)),
                "matchConditions": [_NOT_MIRROR],
                "reinvocationPolicy": "Never",
                "variables": variables,
                "mutations": [
                    {"patchType": "JSONPatch", "jsonPatch": {"expression": " + ".join(patches)}}
                ],
            },
        )
    ]
    refusals: list[tuple[str, dict[str, Any]]] = []
    if dedicated.enabled and dedicated.settings.enforce:
        validation = _dedicated_validation(dedicated.settings, exempt.get("dedicated-nodes", ()))
        refusals.append((dedicated.action, validation))
    guards = ert_plugin.settings.guards if ert_plugin.enabled else None
    if guards is not None:
        for guard in ert_plugin.settings.enforce.guarded:
            validation = _guard_validation(guard, exempt.get("extended-resource-toleration", ()))
            refusals.append((ert_plugin.action, validation))
    for action in sorted({action for action, _ in refusals}):
        checks = [validation for each, validation in refusals if each == action]
        validation_variables = [_TOLERATIONS, _EXTENDED, _JUDGED]
        if dedicated.enabled:
            validation_variables.insert(1, _group(dedicated.settings))
        policies.append(
            _policy(
                "ValidatingPolicy",
                f"placement-validations-{action}",
                "Fail",
                {
                    "matchConstraints": _match(("CREATE", "UPDATE")),
                    "matchConditions": [_NOT_MIRROR],
                    "validationActions": [_ACTIONS[action]],
                    "variables": validation_variables,
                    "validations": checks,
                },
            )
        )
    return policies


def default_policies() -> list[dict[str, Any]]:
    """What ``serve`` does with the built-in defaults, for the bed's workload."""
    return for_config(None)


def fleet_policies() -> list[dict[str, Any]]:
    """What ``serve`` does with ``bench/configs/fleet.yaml``: the defaults, namespaces'
    failover seconds, dedicated tenant namespaces and the guarded GPU taint."""
    return for_config(FLEET)
