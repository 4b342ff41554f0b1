"""extended-resource-toleration as a JSONPatch mutation, and ``enforce`` as a validation (spec §3).

How: the names under the containers' and init containers' requests and limits that are
extended resource names (not native, no ``requests.`` prefix, ``requests.<name>`` a
qualified name), de-duplicated and sorted byte-wise (CEL compares strings by their UTF-8
bytes, as Go does); each goes through AddOrUpdateTolerationInPodSpec (§1b): an entry with
the same identity loses its ``tolerationSeconds`` in place, a missing one is appended.

What a policy cannot do: look up ResourceClaims, ResourceClaimTemplates or DeviceClasses.
So ``deviceClaims`` is not exported, and ``enforce`` judges only pods that name no claim
and request no implicit device-class resource (the webhook resolves their claims first);
for the pods it judges, the guarded keys, earning names and prefixes are the webhook's
(``earnedBy.deviceClasses`` only ever earns through a claim).
"""

from __future__ import annotations

from webhooks.export import cel
from webhooks.export.model import (
    EXACT,
    EXCEPT,
    NOT_EXPORTED,
    Check,
    Line,
    Mutation,
    Translation,
    Validating,
    Verdict,
)
from webhooks.k8s.claims import DEVICE_CLASS_PREFIX
from webhooks.plugins.extended_resource_toleration import PLUGIN, Enforce, Settings

NAME = PLUGIN.name
_TOLERATIONS = "variables.ertTolerations"

#: Every resource name a container or init container requests or limits (through dyn():
#: the type checker's Pod schema has no Quantity maps).
_NAMES = (
    "(object.spec.containers + object.spec.?initContainers.orValue([]))"
    ".map(c, dyn(c).?resources.?requests.orValue({}).map(n, n)"
    " + dyn(c).?resources.?limits.orValue({}).map(n, n)).flatten()"
)


def _extended(name: str) -> str:
    """``is_extended_resource_name(name)`` (spec §3)."""
    return (
        f"({name}.contains('/') && !{name}.contains('kubernetes.io/')"
        f" && !{name}.startsWith('requests.') && {cel.qualified_name(repr_requests(name))})"
    )


def repr_requests(name: str) -> str:
    """CEL for ``'requests.' + name``."""
    return f"('requests.' + {name})"


def _wanted(t: str) -> str:
    """Whether toleration ``t`` has the identity of a wanted toleration."""
    return (
        f"({cel.text(t, 'key')} in variables.ertWanted && {cel.text(t, 'operator')} == 'Exists'"
        f" && {cel.text(t, 'value')} == '' && {cel.text(t, 'effect')} == 'NoSchedule')"
    )


def _mutation() -> Mutation:
    variables = (
        ("ertTolerations", "object.spec.?tolerations.orValue([])"),
        ("ertWanted", f"{_NAMES}.filter(n, {_extended('n')}).distinct().sort()"),
        (
            "ertMissing",
            f"variables.ertWanted.filter(n, !{_TOLERATIONS}.exists(t, "
            f"{cel.text('t', 'key')} == n && {cel.text('t', 'operator')} == 'Exists'"
            f" && {cel.text('t', 'value')} == '' && {cel.text('t', 'effect')} == 'NoSchedule'))"
            ".map(n, {'key': dyn(n), 'operator': dyn('Exists'), 'effect': dyn('NoSchedule')})",
        ),
    )
    # AddOrUpdate rewrites every matching entry with the new toleration: only the seconds
    # can differ (the identity is equal and the API stores no empty strings).
    rewrite = (
        f"lists.range(size({_TOLERATIONS})).filter(i, {_wanted(f'{_TOLERATIONS}[i]')}"
        f" && has({_TOLERATIONS}[i].tolerationSeconds)).map(i, JSONPatch{{op: 'remove',"
        " path: '/spec/tolerations/' + string(i) + '/tolerationSeconds'})"
    )
    append = cel.append("/spec/tolerations", "has(object.spec.tolerations)", "variables.ertMissing")
    expression = f"size(variables.ertWanted) == 0 ? [] : {rewrite} + {append}"
    return Mutation("pods", frozenset({"CREATE", "UPDATE"}), expression, variables)


def _earned(guards: Enforce) -> tuple[tuple[str, str], ...]:
    """The variables for the guarded keys the pod's requests earn: ``Earners.earned``
    without claims.

    Why a map from name to keys and a list of (prefix, key) pairs: each requested name is
    looked up once and tried against each prefix once, so the cost is names × prefixes
    (the prefixes are few, and fixed by the config), never names × keys × earners.
    """
    by_name: dict[str, list[str]] = {}
    prefixes: list[tuple[str, str]] = []
    for guard in guards.guarded:
        for name in dict.fromkeys((guard.taint_key, *guard.earned_by.resources)):
            by_name.setdefault(name, []).append(guard.taint_key)
        prefixes += [(p, guard.taint_key) for p in dict.fromkeys(guard.earned_by.resource_prefixes)]
    names = "{" + ", ".join(f"{cel.quote(n)}: {cel.strings(k)}" for n, k in by_name.items()) + "}"
    each = "(n in variables.ertByName ? variables.ertByName[n] : [])"
    if prefixes:
        pairs = "[" + ", ".join(cel.strings(pair) for pair in prefixes) + "]"
        each += f" + {pairs}.filter(e, n.startsWith(e[0])).map(e, e[1])"
    return (
        ("ertByName", names),
        ("ertEarned", f"variables.ertRequested.map(n, {each}).flatten()"),
    )


def _enforcement(guards: Enforce) -> Validating:
    """Deny tolerating a guarded taint key that nothing requested earns (new tolerations
    only); a key nobody named is never judged."""
    old = "(request.operation == 'UPDATE' ? oldObject.spec.?tolerations.orValue([]) : [])"
    variables = (
        ("ertRequested", _NAMES),
        ("ertGuarded", cel.string_map(guards.earners.described)),
        *_earned(guards),
        (
            "ertForeign",
            "object.spec.?tolerations.orValue([]).filter(t, "
            f"!{old}.exists(o, {cel.identity_equal('o', 't')})"
            f" && {cel.text('t', 'key')} in variables.ertGuarded"
            f" && !({cel.text('t', 'key')} in variables.ertEarned))",
        ),
    )
    key = cel.text("t", "key")
    message = (
        f"'toleration ' + {cel.describe('t')} + ' lets this pod onto nodes reserved for ' + {key}"
        f" + ', but nothing the pod requests or claims earns it (' + variables.ertGuarded[{key}]"
        " + '): request or claim one of those, or remove the toleration'"
    )
    messages = f"variables.ertForeign.map(t, {message})"
    check = Check(
        "size(variables.ertForeign) == 0",
        f"size({messages}) == 1 ? {messages}[0] : '[' + {messages}.join(', ') + ']'",
    )
    conditions = (
        (
            "skips-mirror-pods",
            "!('kubernetes.io/config.mirror' in object.metadata.?annotations.orValue({}))",
        ),
        (
            "no-device-claims",
            "size(object.spec.?resourceClaims.orValue([])) == 0 && !"
            f"{_NAMES}.exists(n, n.startsWith({cel.quote(DEVICE_CLASS_PREFIX)}))",
        ),
    )
    return Validating(("pods",), frozenset({"CREATE", "UPDATE"}), (check,), variables, conditions)


def translate(settings: Settings) -> Translation:
    """The mutation, and with ``enforce`` the validation; ``deviceClaims`` is not exported."""
    lines = [Line(f"plugins.{NAME}.enforce", EXACT)]
    mutate: Verdict = EXACT
    mutations: tuple[Mutation, ...] = (_mutation(),)
    if settings.device_claims:
        mutate, mutations = NOT_EXPORTED, ()
        lines.append(
            Line(
                f"plugins.{NAME}.deviceClaims",
                NOT_EXPORTED,
                "a policy cannot look up the ResourceClaims, ResourceClaimTemplates and "
                "DeviceClasses a pod's devices come from",
            )
        )
        lines.append(
            Line(
                f"plugins.{NAME}.deviceClassTaints",
                NOT_EXPORTED,
                "it names the taints of the device classes deviceClaims resolves",
            )
        )
    else:
        lines.append(Line(f"plugins.{NAME}.deviceClaims", EXACT))
        lines.append(Line(f"plugins.{NAME}.deviceClassTaints", EXACT))
    validate: Verdict | None = None
    validating: tuple[Validating, ...] = ()
    if isinstance(settings.enforce, Enforce):
        validate, validating = EXCEPT, (_enforcement(settings.enforce),)
        lines[0] = Line(
            f"plugins.{NAME}.enforce",
            EXCEPT,
            "a pod that names resource claims (or requests a device class by its implicit "
            "resource name) is not judged, so earnedBy.deviceClasses never applies "
            "natively: a policy cannot look its claims up, and the webhook refuses its "
            "unearned tolerations",
        )
    return Translation(
        NAME,
        mutations=mutations,
        validating=validating,
        mutate=mutate,
        validate=validate,
        lines=tuple(lines),
    )
