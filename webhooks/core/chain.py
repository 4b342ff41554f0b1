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
    LookupFailure,
    NoCluster,
    Phase,
    Plugin,
)
from webhooks.core.result import JsonPatch, Outcome, Violation, denial_message
from webhooks.core.review import AdmissionRequest


def _wrong_kind(plugin: Plugin, request: AdmissionRequest, obj: dict[str, Any]) -> Violation | None:
    """BadRequest when the object's kind contradicts its resource (spec §0)."""
    expected = RESOURCE_KINDS.get(request.group_resource)
    kind = obj.get("kind")
    if expected is None or kind is None or kind == expected or plugin.wrong_kind is None:
        return None
    return Violation(
        plugin.wrong_kind.format(kind=f"*core.{kind}", expected=expected),
        code=400,
        reason="BadRequest",
        plugin=plugin.name,
    )


def _skip(plugin: Plugin, request: AdmissionRequest, obj: dict[str, Any]) -> bool:
    expected = RESOURCE_KINDS.get(request.group_resource)
    kind = obj.get("kind")
    return plugin.wrong_kind is None and expected is not None and kind not in (None, expected)


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


def run_chain(
    request: AdmissionRequest,
    config: Config,
    phases: Iterable[tuple[Phase, Sequence[Plugin]]],
    cluster: ClusterView | None = None,
) -> Outcome:
    """Run ``phases`` (each a phase and its plugins, in order) over ``request``'s object.

    Mutators stop the chain at their first violation, as an in-tree admission error does;
    validators all run so one answer lists every problem. A :class:`LookupFailure` becomes
    an InternalError status (code 500 inside an HTTP 200), never an exception: the API
    server then applies the webhook's failurePolicy, which is the documented behaviour.
    """
    view = cluster if cluster is not None else NoCluster()
    obj = request.object
    patch: JsonPatch = []
    warnings: list[str] = []
    audit: dict[str, str] = {}
    changed_by: list[str] = []
    if obj is None:
        return Outcome()
    for phase, plugins in phases:
        violations: list[Violation] = []
        for plugin in plugins:
            half = plugin.half(phase)
            if half is None or not half.handles(request) or _skip(plugin, request, obj):
                continue
            bad_kind = _wrong_kind(plugin, request, obj)
            if bad_kind is not None:
                violations.append(bad_kind)
                break
            context = Context(settings=config.settings(plugin.name), cluster=view)
            try:
                if phase == "mutate":
                    result = half.run(request, obj, context)
                    found = list(result.violations)
                    warnings.extend(result.warnings)
                    audit.update(result.audit)
                    if result.obj is not None and result.patch and not found:
                        obj = result.obj
                        patch.extend(result.patch)
                        changed_by.append(plugin.name)
                else:
                    found = list(half.run(request, obj, context))
            except LookupFailure as exc:
                failure = Violation(
                    f"{plugin.name}: cluster lookup failed: {exc}",
                    code=500,
                    reason="InternalError",
                    plugin=plugin.name,
                )
                return _deny([failure], warnings=tuple(warnings), changed_by=tuple(changed_by))
            except Exception as exc:  # a plugin bug must not become an HTTP 500 or a hang
                failure = Violation(
                    f"{plugin.name}: internal error: {type(exc).__name__}: {exc}",
                    code=500,
                    reason="InternalError",
                    plugin=plugin.name,
                )
                return _deny([failure], warnings=tuple(warnings), changed_by=tuple(changed_by))
            violations.extend(
                v if v.plugin else Violation(v.message, v.field, v.code, v.reason, plugin.name)
                for v in found
            )
            if violations and phase == "mutate":
                break
        if violations:
            return _deny(
                violations,
                obj=obj,
                warnings=tuple(warnings),
                audit_annotations=audit,
                changed_by=tuple(changed_by),
            )
    return Outcome(
        allowed=True,
        patch=patch,
        obj=obj,
        warnings=tuple(warnings),
        audit_annotations=audit,
        changed_by=tuple(changed_by),
    )
