"""Run plugins in chain order: the mutators once each, in order, then validators on the result.

This is the whole admission decision, transport-free: the HTTP server, ``review``, ``check``
and the other offline commands all call :func:`run_chain`, so offline answers cannot drift
from the server's.

Upstream runs every in-tree admission plugin once, in ``AllOrderedPlugins`` order; a later
plugin's change (an extended-resource toleration appended after a namespace default merged
everything into a wildcard) is part of the answer, so the mutators run once each too. Our
own plugins (those with no ``upstream``) come after upstream's and stand where upstream has
a webhook: when a webhook changes the object, the API server reinvokes the chain, in-tree
plugins included, and so a change by one of ours runs the mutating chain again on the
result, until it stops changing (at most :data:`MAX_PASSES`). The DaemonSet defaults, for
one, can make a pod's own toleration redundant, which the RuntimeClass merge then removes.
The answer is therefore what the API server would store, and reinvoking the webhook on it
changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from webhooks.core.config import Config
from webhooks.core.plugin import (
    RESOURCE_KINDS,
    ClusterView,
    Context,
    LookupFailure,
    Mutator,
    NoCluster,
    Plugin,
    Validator,
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

#: Mutating passes at most; why a bound: a further pass runs only when one of our plugins
#: changed the object, so still changing after this many is a bug, and the result so far
#: is sent rather than looping.
MAX_PASSES = 3

#: A mutating half ready to run: the plugin, its half and its context.
MutateStep = tuple[Plugin, Mutator, Context]
#: A validating half ready to run.
ValidateStep = tuple[Plugin, Validator, Context]


@dataclass(frozen=True, slots=True)
class Steps:
    """The resolved halves of one chain, in order; built once per configuration.

    Why resolved ahead: contexts (settings, cluster view) do not change between requests,
    so nothing is looked up per review.
    """

    mutators: tuple[MutateStep, ...] = ()
    validators: tuple[ValidateStep, ...] = ()


def resolve(plugins: Iterable[Plugin], config: Config, cluster: ClusterView | None) -> Steps:
    """The mutating and validating halves of ``plugins``, each with its context."""
    view = cluster if cluster is not None else NoCluster()
    mutators: list[MutateStep] = []
    validators: list[ValidateStep] = []
    for plugin in plugins:
        context = Context(config.settings(plugin.name), view)
        if plugin.mutate is not None:
            mutators.append((plugin, plugin.mutate, context))
        if plugin.validate is not None:
            validators.append((plugin, plugin.validate, context))
    return Steps(tuple(mutators), tuple(validators))


class _Scope:
    """What a request is, for deciding which halves apply to it (spec §0)."""

    __slots__ = ("expected", "kind", "mismatch", "operation", "resource", "sub")

    def __init__(self, request: AdmissionRequest, obj: dict[str, Any]) -> None:
        self.resource = request.group_resource
        self.sub = request.sub_resource
        self.operation = request.operation
        self.expected = RESOURCE_KINDS.get(self.resource)
        self.kind = obj.get("kind")
        self.mismatch = self.expected is not None and self.kind is not None
        self.mismatch = self.mismatch and self.kind != self.expected

    def applies(self, half: Mutator | Validator) -> bool:
        """No subresource, and an operation and resource the half declares."""
        return (
            not self.sub and self.operation in half.operations and self.resource in half.resources
        )

    def wrong_kind(self, plugin: Plugin) -> Violation:
        """BadRequest when the object's kind contradicts its resource and the plugin says so."""
        assert plugin.wrong_kind is not None
        return Violation(
            plugin.wrong_kind.format(kind=f"*core.{self.kind}", expected=self.expected),
            code=400,
            reason="BadRequest",
            plugin=plugin.name,
        )


def _internal(plugin: Plugin, what: str) -> Violation:
    return Violation(f"{plugin.name}: {what}", code=500, reason="InternalError", plugin=plugin.name)


def _failure(plugin: Plugin, exc: Exception) -> Violation:
    """An InternalError for a lookup that could not complete or a plugin bug."""
    if isinstance(exc, LookupFailure):
        return _internal(plugin, f"cluster lookup failed: {exc}")
    return _internal(plugin, f"internal error: {type(exc).__name__}: {exc}")


def _named(plugin: Plugin, found: Iterable[Violation]) -> list[Violation]:
    return [
        v if v.plugin else Violation(v.message, v.field, v.code, v.reason, plugin.name)
        for v in found
    ]


class _Progress:
    """What the mutators have done so far: the object, the patch, and what to report.

    ``reinvoke`` says one of our own plugins changed the object in the current pass.
    """

    __slots__ = ("audit", "changed_by", "obj", "patch", "reinvoke", "warnings")

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self.patch: JsonPatch = []
        self.warnings: list[str] = []
        self.audit: dict[str, str] = {}
        self.changed_by: list[str] = []
        self.reinvoke = False

    def take(self, name: str, result: Result) -> None:
        """Record plugin ``name``'s result, a denying one's change included.

        Why a denial's change is kept: offline reports show what admission would have
        written even for an object it refuses, without running the chain a second time.
        """
        # A plugin run again on a further pass says the same things once.
        self.warnings.extend(w for w in result.warnings if w not in self.warnings)
        self.audit.update(result.audit)
        if result.obj is not None and result.patch:
            self.obj = result.obj
            self.patch.extend(result.patch)
            if name not in self.changed_by:
                self.changed_by.append(name)

    def outcome(self, violations: Sequence[Violation] = ()) -> Outcome:
        """The answer: allowed with the patch, or denied keeping what would have changed."""
        common: dict[str, Any] = {
            "patch": self.patch,
            "obj": self.obj,
            "warnings": tuple(self.warnings),
            "changed_by": tuple(self.changed_by),
            "audit_annotations": self.audit,
        }
        if not violations:
            return Outcome(allowed=True, **common)
        first = violations[0]
        return Outcome(
            allowed=False,
            violations=tuple(violations),
            code=first.code,
            reason=first.reason,
            message=denial_message(tuple(violations)),
            **common,
        )


def _same(obj: dict[str, Any], original: dict[str, Any]) -> bool:
    # Untouched branches are the input's own objects (copy-on-write), so this only walks
    # the edited paths; an edit deeper than the recursion limit just counts as a change.
    try:
        return obj == original
    except RecursionError:
        return False


def _pass(
    request: AdmissionRequest, scope: _Scope, steps: Sequence[MutateStep], progress: _Progress
) -> list[Violation]:
    """Run each mutator once, in order, on the previous one's output; stop at a denial."""
    progress.reinvoke = False
    for plugin, half, context in steps:
        if not scope.applies(half):
            continue
        if scope.mismatch:
            if plugin.wrong_kind is None:
                continue
            return [scope.wrong_kind(plugin)]
        try:
            result = half.run(request, progress.obj, context)
        except Exception as exc:  # a plugin bug must not become an HTTP 500 or a hang
            return [_failure(plugin, exc)]
        if result is UNCHANGED:  # the common answer, shared: skip it fast
            continue
        progress.take(plugin.name, result)
        if result.violations:
            return _named(plugin, result.violations)
        if result.patch and not plugin.upstream:
            progress.reinvoke = True
    return []


def mutate(
    request: AdmissionRequest, scope: _Scope, steps: Sequence[MutateStep], progress: _Progress
) -> list[Violation]:
    """One pass of the mutators, and more while one of ours keeps changing the object.

    A further pass that ends where the one before it ended (a namespace default merging
    away what a later plugin then appends again) leaves nothing in the patch.
    """
    violations = _pass(request, scope, steps, progress)
    for _ in range(MAX_PASSES - 1):
        if violations or not progress.reinvoke:
            break
        before, ops = progress.obj, len(progress.patch)
        violations = _pass(request._replace(object=before), scope, steps, progress)
        if not violations and _same(progress.obj, before):
            progress.obj = before
            del progress.patch[ops:]
            break
    return violations


def validate(
    request: AdmissionRequest, scope: _Scope, steps: Sequence[ValidateStep], obj: dict[str, Any]
) -> list[Violation]:
    """Run every validator on the final object, so one answer lists every problem."""
    violations: list[Violation] = []
    for plugin, half, context in steps:
        if not scope.applies(half):
            continue
        if scope.mismatch:
            if plugin.wrong_kind is None:
                continue
            violations.append(scope.wrong_kind(plugin))
            break
        try:
            found = half.run(request, obj, context)
        except Exception as exc:  # a plugin bug must not become an HTTP 500 or a hang
            return [*violations, _failure(plugin, exc)]
        if found:
            violations.extend(_named(plugin, found))
    return violations


def run_chain(
    request: AdmissionRequest,
    mutators: Sequence[MutateStep] = (),
    validators: Sequence[ValidateStep] = (),
) -> Outcome:
    """Run ``mutators`` then ``validators`` over ``request``'s object.

    Mutators stop the chain at their first violation, as an in-tree admission error does;
    validators all run. A :class:`LookupFailure` or a plugin bug becomes an InternalError
    status (code 500 inside an HTTP 200), never an exception or an HTTP 500: the operation
    is refused with a message that says why, as upstream refuses it when its own lookup
    fails. A denial keeps the patch the mutators made, for offline reports; the wire
    response never carries it.
    """
    obj = request.object
    if obj is None:
        return Outcome()
    scope = _Scope(request, obj)
    progress = _Progress(obj)
    violations = mutate(request, scope, mutators, progress)
    if not violations:
        violations = validate(request, scope, validators, progress.obj)
    if not violations and len(progress.changed_by) > 1 and _same(progress.obj, obj):
        # Later mutators undid earlier ones (a RuntimeClass toleration that subsumes one
        # just added): no net change, so no patch, or every reinvocation would "mutate".
        unchanged = _Progress(obj)
        unchanged.warnings = progress.warnings
        progress = unchanged
    return progress.outcome(violations)
