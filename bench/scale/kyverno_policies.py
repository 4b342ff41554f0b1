"""Kyverno policies that store the same pods as ``placement-webhooks serve`` does.

The scale bed compares what admission costs with each engine, so Kyverno must do the same
work: for the bed's workload (plain pods, pods requesting ``nvidia.com/gpu``, pods in
tenant namespaces) every pod it admits must be stored exactly as ``serve`` stores it, and
every pod ``serve`` refuses must be refused. ``tests/controlplane/test_kyverno_peer.py``
reads both back and diffs them field by field.

Written as Kyverno's CEL policies (``policies.kyverno.io/v1`` ``MutatingPolicy`` and
``ValidatingPolicy``), the same language as the native policies ``export`` prints, so the
three engines are compared on equal rules rather than on different policy languages.

What the policies cover, per plugin of the default config (:func:`default_policies`):

* ``default-toleration-seconds``: the not-ready and unreachable ``NoExecute`` tolerations
  (300 s) unless an entry already covers the taint (key equal or empty, effect
  ``NoExecute`` or empty), appended in that order, as upstream's plugin does;
* ``extended-resource-toleration``: an ``Exists``/``NoSchedule`` toleration for every
  extended resource a container or init container requests (or limits), byte-wise sorted,
  unless the same toleration is there;

and, for ``bench/configs/fleet.yaml`` (:func:`fleet_policies`), beside those:

* ``dedicated-nodes``: a pod of a namespace labelled with a group gets the group's
  ``Equal`` toleration (unless one at least as broad is there) and ``key In [group]`` ANDed
  into every non-empty required node-affinity term (or a new term); a pod that tolerates
  another group's taint (``Equal`` on another group, ``Exists`` on the key, the bare
  wildcard, ``Gt``/``Lt``) is refused;
* ``extended-resource-toleration`` enforcement: a toleration of ``nvidia.com/gpu`` is
  refused unless the pod requests a resource under ``nvidia.com/``.

All one mutation: the tolerations are computed from the pod as submitted and appended in
the chain's order (not-ready, unreachable, extended resources, the group's), so no step's
result depends on how Kyverno orders patches between policies.

Not covered, because the bed's workload never meets them: RuntimeClass overhead and
scheduling (no pod names a RuntimeClass), the DaemonSet defaults (the bed runs no
DaemonSet), the refusal of a pod whose node selector or affinity excludes its group, DRA
claims, and UPDATE (the bed only creates). Messages of refusals differ; only the refusal
is compared. Autogen is off (``serve`` does not mutate pod templates outside DaemonSets)
and so is background evaluation (only admission is compared).

Failure policies are ``serve``'s as ``webhook-config`` registers it: the mutation fails
open (``Ignore``), the validation closed (``Fail``); the harness starts Kyverno with
``serve``'s 5 s webhook timeout. So a fault hits both engines under the same rules.
"""

from __future__ import annotations

from typing import Any

API = "policies.kyverno.io/v1"
#: Namespaces neither engine is registered for (``webhook-config``'s exclusions).
EXCLUDED_NAMESPACES = ("kube-system", "kube-node-lease", "kyverno", "placement-webhooks")

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
#: dedicated-nodes' defaults (``plugins.dedicated-nodes`` in docs/configuration.md).
DEDICATED_LABEL = "placement-webhooks.io/dedicated"
DEDICATED_KEY = "dedicated"
DEDICATED_EFFECT = "NoSchedule"
#: The guarded GPU taint of fleet.yaml and what earns it.
GPU_KEY = "nvidia.com/gpu"
GPU_PREFIXES = ("nvidia.com/",)


def _cel_list(values: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


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
    "expression": ("!('kubernetes.io/config.mirror' in object.metadata.?annotations.orValue({}))"),
}

_TOLERATIONS = {"name": "tolerations", "expression": "object.spec.?tolerations.orValue([])"}


def _seconds_toleration(key: str, seconds: int) -> str:
    return (
        f"{{'key': dyn('{key}'), 'operator': dyn('Exists'), 'effect': dyn('NoExecute'),"
        f" 'tolerationSeconds': dyn({seconds})}}"
    )


def _default_seconds(not_ready: int, unreachable: int) -> dict[str, str]:
    """The DefaultTolerationSeconds tolerations no entry covers (upstream's loose test)."""
    parts = []
    for key, seconds in ((NOT_READY, not_ready), (UNREACHABLE, unreachable)):
        covered = (
            f"variables.tolerations.exists(t, t.?key.orValue('') in ['', '{key}']"
            " && t.?effect.orValue('') in ['', 'NoExecute'])"
        )
        parts.append(f"({covered} ? [] : [{_seconds_toleration(key, seconds)}])")
    return {"name": "defaultSeconds", "expression": " + ".join(parts)}


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

_GROUP = {
    "name": "group",
    "expression": f"namespaceObject.?metadata.?labels[?'{DEDICATED_LABEL}'].orValue('')",
}

#: The group's toleration unless one at least as broad is there (same or empty effect; the
#: bare wildcard, Exists on the key, or Equal on the group).
_GROUP_TOLERATION = {
    "name": "groupToleration",
    "expression": (
        "variables.group == '' || variables.tolerations.exists(t,"
        f" t.?effect.orValue('') in ['', '{DEDICATED_EFFECT}'] && ("
        " (t.?key.orValue('') == '' && t.?operator.orValue('') == 'Exists')"
        f" || (t.?key.orValue('') == '{DEDICATED_KEY}' && (t.?operator.orValue('') == 'Exists'"
        " || (t.?operator.orValue('') in ['', 'Equal']"
        " && t.?value.orValue('') == variables.group)))))"
        f" ? [] : [{{'key': dyn('{DEDICATED_KEY}'), 'operator': dyn('Equal'),"
        f" 'value': dyn(variables.group), 'effect': dyn('{DEDICATED_EFFECT}')}}]"
    ),
}

_REQUIRED = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"
_REQUIREMENT = (
    f"{{'key': dyn('{DEDICATED_KEY}'), 'operator': dyn('In'), 'values': dyn([variables.group])}}"
)


def _append_tolerations(variable: str) -> str:
    """JSON patches appending the list ``variable`` to the pod's tolerations."""
    return (
        f"(size({variable}) == 0 ? [] : has(object.spec.tolerations)"
        f" ? {variable}.map(t, JSONPatch{{op: 'add', path: '/spec/tolerations/-', value: t}})"
        f" : [JSONPatch{{op: 'add', path: '/spec/tolerations', value: {variable}}}])"
    )


#: JSON patches pinning a group's pod: a new required term when there is none (creating
#: what is missing above it), else the requirement ANDed into each non-empty term that
#: lacks it.
_PIN = (
    "(variables.group == '' ? [] :"
    " !has(object.spec.affinity) ? [JSONPatch{op: 'add', path: '/spec/affinity', value:"
    f" {{'nodeAffinity': {{'requiredDuringSchedulingIgnoredDuringExecution':"
    f" {{'nodeSelectorTerms': [{{'matchExpressions': [{_REQUIREMENT}]}}]}}}}}}}}]"
    " : !has(object.spec.affinity.nodeAffinity) ? [JSONPatch{op: 'add',"
    " path: '/spec/affinity/nodeAffinity', value:"
    f" {{'requiredDuringSchedulingIgnoredDuringExecution':"
    f" {{'nodeSelectorTerms': [{{'matchExpressions': [{_REQUIREMENT}]}}]}}}}}}]"
    " : !has(object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution)"
    f" ? [JSONPatch{{op: 'add', path: '{_REQUIRED}', value:"
    f" {{'nodeSelectorTerms': [{{'matchExpressions': [{_REQUIREMENT}]}}]}}}}]"
    " : lists.range(size(object.spec.affinity.nodeAffinity"
    ".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms)).filter(i,"
    " size(variables.terms[i].?matchExpressions.orValue([])) + size(variables.terms[i]"
    ".?matchFields.orValue([])) > 0 && !variables.terms[i].?matchExpressions.orValue([])"
    f".exists(e, e.key == '{DEDICATED_KEY}' && e.operator == 'In'"
    " && e.?values.orValue([]).all(v, v == variables.group)"
    " && size(e.?values.orValue([])) > 0))"
    ".map(i, has(variables.terms[i].matchExpressions)"
    f" ? JSONPatch{{op: 'add', path: '{_REQUIRED}/nodeSelectorTerms/' + string(i)"
    f" + '/matchExpressions/-', value: {_REQUIREMENT}}}"
    f" : JSONPatch{{op: 'add', path: '{_REQUIRED}/nodeSelectorTerms/' + string(i)"
    f" + '/matchExpressions', value: [{_REQUIREMENT}]}}))"
)

_TERMS = {
    "name": "terms",
    "expression": (
        "object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution"
        ".?nodeSelectorTerms.orValue([]).map(t, dyn(t))"
    ),
}


def _policy(kind: str, name: str, failure_policy: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": kind,
        "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "scale-bench"}},
        "spec": {
            "autogen": {"podControllers": {"controllers": []}},
            "evaluation": {"background": {"enabled": False}},
            "failurePolicy": failure_policy,
            **spec,
        },
    }


def mutating_policy(
    *, dedicated: bool, not_ready_seconds: int = 300, unreachable_seconds: int = 300
) -> dict[str, Any]:
    """The one MutatingPolicy: default tolerations, extended resources, and with
    ``dedicated`` the group's toleration and node affinity."""
    variables = [
        _TOLERATIONS,
        _default_seconds(not_ready_seconds, unreachable_seconds),
        _EXTENDED,
        _EXTENDED_TOLERATIONS,
    ]
    added = "variables.defaultSeconds + variables.extendedTolerations"
    patches = ""
    if dedicated:
        variables += [_GROUP, _GROUP_TOLERATION, _TERMS]
        added += " + variables.groupToleration"
        patches = f" + {_PIN}"
    variables.append({"name": "added", "expression": added})
    return _policy(
        "MutatingPolicy",
        "placement-mutations",
        "Ignore",
        {
            "matchConstraints": _match(("CREATE",)),
            "matchConditions": [_NOT_MIRROR],
            "reinvocationPolicy": "Never",
            "variables": variables,
            "mutations": [
                {
                    "patchType": "JSONPatch",
                    "jsonPatch": {"expression": _append_tolerations("variables.added") + patches},
                }
            ],
        },
    )


def _judged() -> dict[str, str]:
    """The pod's tolerations a refusal may name: on UPDATE only those the old pod lacked."""
    return {
        "name": "judged",
        "expression": (
            "request.operation != 'UPDATE' ? variables.tolerations :"
            " variables.tolerations.filter(t, !oldObject.spec.?tolerations.orValue([]).exists(o,"
            " o.?key.orValue('') == t.?key.orValue('') && o.?operator.orValue('') =="
            " t.?operator.orValue('') && o.?value.orValue('') == t.?value.orValue('')"
            " && o.?effect.orValue('') == t.?effect.orValue('')))"
        ),
    }


def validating_policy(
    *, guarded: str = GPU_KEY, earned_by_prefixes: tuple[str, ...] = GPU_PREFIXES
) -> dict[str, Any]:
    """The ValidatingPolicy of fleet.yaml: dedicated-nodes' and the GPU taint's enforcement."""
    foreign = (
        f"t.?effect.orValue('') in ['', '{DEDICATED_EFFECT}']"
        f" && t.?key.orValue('') in ['', '{DEDICATED_KEY}']"
        " && (t.?operator.orValue('') == 'Exists'"
        " || (t.?operator.orValue('') in ['', 'Equal']"
        " && t.?value.orValue('') != '' && t.?value.orValue('') != variables.group)"
        " || t.?operator.orValue('') in ['Gt', 'Lt'])"
    )
    earned = (
        f"variables.extended.exists(n, n == '{guarded}'"
        + "".join(f" || n.startsWith('{prefix}')" for prefix in earned_by_prefixes)
        + ")"
    )
    return _policy(
        "ValidatingPolicy",
        "placement-validations",
        "Fail",
        {
            "matchConstraints": _match(("CREATE", "UPDATE")),
            "matchConditions": [_NOT_MIRROR],
            "validationActions": ["Deny"],
            "variables": [_TOLERATIONS, _GROUP, _EXTENDED, _judged()],
            "validations": [
                {
                    "expression": f"!variables.judged.exists(t, {foreign})",
                    "messageExpression": (
                        "'a toleration lets this pod onto nodes dedicated to another group"
                        " than its namespace' + \"'\" + 's (' + variables.group + ')'"
                    ),
                    "reason": "Forbidden",
                },
                {
                    "expression": (
                        f"!variables.judged.exists(t, t.?key.orValue('') == '{guarded}')"
                        f" || {earned}"
                    ),
                    "message": (
                        f"a toleration of {guarded} lets this pod onto nodes reserved for it,"
                        " but nothing the pod requests earns it"
                    ),
                    "reason": "Forbidden",
                },
            ],
        },
    )


def default_policies() -> list[dict[str, Any]]:
    """What ``serve`` does with the built-in defaults, for the bed's workload."""
    return [mutating_policy(dedicated=False)]


def fleet_policies() -> list[dict[str, Any]]:
    """What ``serve`` does with ``bench/configs/fleet.yaml``: the defaults, dedicated
    tenant namespaces (enforced) and the guarded GPU taint."""
    return [mutating_policy(dedicated=True), validating_policy()]


#: Policies by the name the scale bench gives its configs.
POLICIES = {"default": default_policies, "fleet": fleet_policies}
