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
from webhooks.core.result import (
    UNCHANGED,
    JsonPatch,
    Outcome,
    Result,
    Violation,
    denial_message,
)
from webhooks.core.review import AdmissionRequest

#: At most this many mutating passes; why a bound: each pass after the first runs only when
#: the one before changed something, so still changing after this many is a plugin bug, and
#: the result so far is sent rather than looping.
MAX_MUTATION_PASSES = 4

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


class _Progress:
    """What the mutators have done so far: the patch, and what to report about it."""

    __slots__ = ("audit", "changed_by", "changes", "patch", "warnings")

    def __init__(self, warnings: list[str] | None = None) -> None:
        self.patch: JsonPatch = []
        self.warnings: list[str] = warnings if warnings is not None else []
        self.audit: dict[str, str] = {}
        self.changed_by: list[str] = []
        self.changes = 0  # one change never undoes itself: only several need comparing

    def take(self, name: str, result: Result) -> dict[str, Any] | None:
        """Record plugin ``name``'s result; the changed object, ``None`` when unchanged."""
        self.warnings.extend(result.warnings)
        for key, note in result.audit.items():
            earlier = self.audit.get(key)
            # A plugin acting again in a later pass adds to its note rather than losing it.
            self.audit[key] = note if earlier in (None, note) else f"{earlier}; {note}"
        if result.obj is None or not result.patch or result.violations:
            return None
        self.patch.extend(result.patch)
        self.changes += 1
        if name not in self.changed_by:
            self.changed_by.append(name)
        return result.obj

    def kept(self, *, audit: bool = True) -> dict[str, Any]:
        """The Outcome fields that carry over into any answer, denials included."""
        out: dict[str, Any] = {
            "warnings": tuple(self.warnings),
            "changed_by": tuple(self.changed_by),
        }
        if audit:
            out["audit_annotations"] = self.audit
        return out


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

    Mutators run in passes until the object stops changing, so the answer is a fixed point
    and a reinvocation by the API server changes nothing. A later mutator can make an
    earlier one's rule apply anew: the DaemonSet defaults make a user toleration redundant,
    which the RuntimeClass merge, earlier in the order, then collapses (as it does upstream,
    where the DaemonSet controller writes the defaults before admission). A further pass
    repeats only the plugins before the last one that changed something, since every plugin
    leaves its own output alone; so when only the first plugin changes the object, as for
    most pods, there is no second pass at all.
    """
    obj = request.object
    if obj is None:
        return Outcome()
    original = obj
    resource = request.group_resource
    sub, operation = request.sub_resource, request.operation
    expected = RESOURCE_KINDS.get(resource)
    kind = obj.get("kind")
    mismatch = expected is not None and kind is not None and kind != expected
    progress = _Progress()
    for phase, chain in phases:
        violations: list[Violation] = []
        horizon = len(chain)  # steps from here on are known to leave the object alone
        for _ in range(MAX_MUTATION_PASSES if phase == "mutate" else 1):
            last: int | None = None
            for index, (plugin, half, context) in enumerate(chain):
                if index >= horizon and last is None:
                    break
                # Scope (spec §0): no subresource, a declared operation and resource.
                if sub or operation not in half.operations or resource not in half.resources:
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
                        if result is not UNCHANGED:  # the common answer, shared: skip it fast
                            changed = progress.take(plugin.name, result)
                            if changed is not None:
                                obj, last = changed, index
                    else:
                        found = half.run(request, obj, context)
                except LookupFailure as exc:
                    failure = _internal(plugin, f"cluster lookup failed: {exc}")
                    return _deny([failure], **progress.kept(audit=False))
                except Exception as exc:  # a plugin bug must not become an HTTP 500 or a hang
                    failure = _internal(plugin, f"internal error: {type(exc).__name__}: {exc}")
                    return _deny([failure], **progress.kept(audit=False))
                if found:
                    violations.extend(
                        v
                        if v.plugin
                        else Violation(v.message, v.field, v.code, v.reason, plugin.name)
                        for v in found
                    )
                    if phase == "mutate":
                        break
            if violations or not last:  # a change by the first step alone needs no pass
                break
            horizon = last
        if violations:
            return _deny(violations, obj=obj, **progress.kept())
    if progress.changes > 1 and _same(obj, original):
        # Later mutators undid earlier ones (a RuntimeClass toleration that subsumes one
        # just added): no net change, so no patch, or every reinvocation would "mutate".
        progress = _Progress(warnings=progress.warnings)
    return Outcome(allowed=True, patch=progress.patch, obj=obj, **progress.kept())
