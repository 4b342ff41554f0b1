"""default-toleration-seconds as a JSONPatch mutation (spec §2).

How: append the not-ready, then the unreachable, NoExecute toleration when no entry covers
it by the loose §1a test (an empty key or effect is a wildcard); the whole list is added
when the pod has none. With ``namespaceOverrides`` the seconds come from the Namespace's
annotations when they are a non-negative integer, and on CREATE the first covering entry,
when it is exactly the cluster default, has its seconds replaced, as the webhook does.
Everything it reads (the pod's tolerations, the Namespace's annotations) is in reach of a
policy, so every setting is exported exactly.
"""

from __future__ import annotations

from webhooks.export import cel
from webhooks.export.model import EXACT, Line, Mutation, Translation, Variable
from webhooks.plugins.default_toleration_seconds import (
    NAME,
    NOT_READY,
    NOT_READY_ANNOTATION,
    UNREACHABLE,
    UNREACHABLE_ANNOTATION,
    Settings,
)

_TOLERATIONS = "variables.dtsTolerations"


def _seconds(annotation: str, default: int) -> str:
    """The Namespace's seconds for ``annotation`` when they are usable, else ``default``."""
    annotations = cel.annotations_of("namespaceObject")
    key = cel.quote(annotation)
    return (
        f"({key} in {annotations} && {annotations}[{key}].matches('^[0-9]{{1,18}}$'))"
        f" ? int({annotations}[{key}]) : {default}"
    )


def _toleration(key: str, seconds: str) -> str:
    return (
        f"{{'key': dyn({cel.quote(key)}), 'operator': dyn('Exists'), "
        f"'effect': dyn('NoExecute'), 'tolerationSeconds': dyn({seconds})}}"
    )


def _missing(settings: Settings, not_ready: str, unreachable: str) -> str:
    parts = []
    for key, seconds in ((NOT_READY, not_ready), (UNREACHABLE, unreachable)):
        covered = f"{_TOLERATIONS}.exists(t, {cel.covers_no_execute('t', key)})"
        parts.append(f"({covered} ? [] : [{_toleration(key, seconds)}])")
    return " + ".join(parts)


def _rewrite(key: str, default: int, seconds: str) -> str:
    """JSONPatch ops replacing the seconds of the first covering entry when it is the default."""
    covering = cel.covers_no_execute(f"{_TOLERATIONS}[i]", key)
    first = f"{_TOLERATIONS}.transformList(i, e, {covering}, i)"
    entry = f"{_TOLERATIONS}[{first}[0]]"
    is_default = (
        f"{cel.text(entry, 'key')} == {cel.quote(key)} && {cel.text(entry, 'operator')} == 'Exists'"
        f" && {cel.text(entry, 'value')} == '' && {cel.text(entry, 'effect')} == 'NoExecute'"
        f" && {entry}.?tolerationSeconds == optional.of({default})"
    )
    return (
        f"(request.operation == 'CREATE' && size({first}) > 0 && {seconds} != {default}"
        f" && {is_default}) ? [JSONPatch{{op: 'replace', path: '/spec/tolerations/' + "
        f"string({first}[0]) + '/tolerationSeconds', value: {seconds}}}] : []"
    )


def translate(settings: Settings) -> Translation:
    """The mutation for ``settings``; every setting is exact."""
    variables: list[Variable] = [("dtsTolerations", "object.spec.?tolerations.orValue([])")]
    not_ready, unreachable = str(settings.not_ready_seconds), str(settings.unreachable_seconds)
    if settings.namespace_overrides:
        variables += [
            ("dtsNotReady", _seconds(NOT_READY_ANNOTATION, settings.not_ready_seconds)),
            ("dtsUnreachable", _seconds(UNREACHABLE_ANNOTATION, settings.unreachable_seconds)),
        ]
        not_ready, unreachable = "variables.dtsNotReady", "variables.dtsUnreachable"
    variables.append(("dtsMissing", _missing(settings, not_ready, unreachable)))
    append = cel.append("/spec/tolerations", "has(object.spec.tolerations)", "variables.dtsMissing")
    expression = append
    if settings.namespace_overrides:
        rewrites = [
            _rewrite(NOT_READY, settings.not_ready_seconds, not_ready),
            _rewrite(UNREACHABLE, settings.unreachable_seconds, unreachable),
        ]
        expression = " + ".join(f"({part})" for part in [*rewrites, append])
    mutation = Mutation("pods", frozenset({"CREATE", "UPDATE"}), expression, tuple(variables))
    lines = tuple(
        Line(f"plugins.{NAME}.{name}", EXACT)
        for name in ("notReadySeconds", "unreachableSeconds", "namespaceOverrides")
    )
    return Translation(NAME, mutations=(mutation,), mutate=EXACT, lines=lines)
