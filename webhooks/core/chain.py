"""Run plugins in chain order: mutators on each other's output, then validators on the result.

This is the whole admission decision, transport-free: the HTTP server, ``review`` and
``check`` all call :func:`run_chain`, so offline answers cannot drift from the server's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from webhooks.core.config import Config
from webhooks.core.plugin import (
    RESOURCE_KINDS,
    ClusterView,
    Context,
    Half,
    LookupFailure,
    NoCluster,
    Phase,
    Plugin,
)
from webhooks.core.result import JsonPatch, Outcome, Violation, denial_message
from webhooks.core.review import AdmissionRequest

#: One plugin half ready to run: the plugin, the half for the phase, and its context.
Step = tuple[Plugin, Half, Context]


def steps(
    plugins: Iterable[Plugin], phase: Phase, config: Config, cluster: ClusterView | None
) -> list[Step]:
    """Resolve plugins into steps once; why: contexts do not change between requests."""
    view = cluster if cluster is not None else NoCluster()
    out: list[Step] = []
    for plugin in plugins:
        half = plugin.half(phase)
        if half is not None:
            out.append((plugin, half, Context(config.settings(plugin.name), view)))
    return out


def _wrong_kind(plugin: Plugin, kind: str, expected: str) -> Violation:
    """BadRequest when the object's kind contradicts its resource (spec §0)."""
    assert plugin.wrong_kind is not None
    return Violation(
        plugin.wrong_kind.format(kind=f"*core.{kind}", expected=expected),
        code=400,
        reason="BadRequest",
        plugin=plugin.name,
    )


def _internal(plugin: Plugin, what: str) -> Violation:
    return Violation(f"{plugin.name}: {what}", code=500, reason="InternalError", plugin=plugin.name)


def _deny(violations: Sequence[Violation], **kept: Any) -> Outcome:
    first = violations[0]
    return Outcome(
        allowed=False,
        violations=tuple(violations),
        code=first.code,
        reason=first.reason,
        message=denial_message(tuple(violations)),
        **kept,
    )


def _same(obj: dict[str, Any], original: dict[str, Any]) -> bool:
    # Untouched branches are the input's own objects (copy-on-write), so this only walks
    # the edited paths; an edit deeper than the recursion limit just counts as a change.
    try:
        return obj == original
    except RecursionError:
        return False


def run_chain(request: AdmissionRequest, phases: Iterable[tuple[Phase, Sequence[Step]]]) -> Outcome:
    """Run ``phases`` (each a phase and its steps, in order) over ``request``'s object.

    Mutators stop the chain at their first violation, as an in-tree admission error does;
    validators all run so one answer lists every problem. A :class:`LookupFailure` or a
    plugin bug becomes an InternalError status (code 500 inside an HTTP 200), never an
    exception or an HTTP 500: the operation is refused with a message that says why, as
    upstream refuses it when its own lookup fails.
    """
    obj = request.object
    if obj is None:
        return Outcome()
    original = obj
    expected = RESOURCE_KINDS.get(request.group_resource)
    kind = obj.get("kind")
    mismatch = expected is not None and kind is not None and kind != expected
    patch: JsonPatch = []
    warnings: list[str] = []
    audit: dict[str, str] = {}
    changed_by: list[str] = []
    for phase, chain in phases:
        violations: list[Violation] = []
        for plugin, half, context in chain:
            if not half.handles(request):
                continue
            if mismatch:
                if plugin.wrong_kind is None:
                    continue
                violations.append(_wrong_kind(plugin, str(kind), str(expected)))
                break
            try:
                if phase == "mutate":
                    result = half.run(request, obj, context)
                    found = result.violations
                    if result.warnings:
                        warnings.extend(result.warnings)
                    if result.audit:
                        audit.update(result.audit)
                    if result.obj is not None and result.patch and not found:
                        obj = result.obj
                        patch.extend(result.patch)
                        changed_by.append(plugin.name)
                else:
                    found = half.run(request, obj, context)
            except LookupFailure as exc:
                failure = _internal(plugin, f"cluster lookup failed: {exc}")
                return _deny([failure], warnings=tuple(warnings), changed_by=tuple(changed_by))
            except Exception as exc:  # a plugin bug must not become an HTTP 500 or a hang
                failure = _internal(plugin, f"internal error: {type(exc).__name__}: {exc}")
                return _deny([failure], warnings=tuple(warnings), changed_by=tuple(changed_by))
            if found:
                violations.extend(
                    v if v.plugin else Violation(v.message, v.field, v.code, v.reason, plugin.name)
                    for v in found
                )
                if phase == "mutate":
                    break
        if violations:
            return _deny(
                violations,
                obj=obj,
                warnings=tuple(warnings),
                audit_annotations=audit,
                changed_by=tuple(changed_by),
            )
    if patch and _same(obj, original):
        # Later mutators undid earlier ones (a RuntimeClass toleration that subsumes one
        # just added): no net change, so no patch, or every reinvocation would "mutate".
        patch, changed_by, audit = [], [], {}
    return Outcome(
        allowed=True,
        patch=patch,
        obj=obj,
        warnings=tuple(warnings),
        audit_annotations=audit,
        changed_by=tuple(changed_by),
    )
