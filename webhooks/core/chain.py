"""Run plugins in chain order: the mutators in order, then validators on the result.

This is the whole admission decision, transport-free: the HTTP server, ``review``, ``check``
and the other offline commands all call :func:`run_chain`, so offline answers cannot drift
from the server's.

The chain is what kube-apiserver does with the in-tree plugins our plugins reimplement
(those with an ``upstream``) and our own plugins as a mutating webhook behind them. Upstream
runs the in-tree plugins once each, in ``AllOrderedPlugins`` order, then the webhooks; a
change by an in-tree plugin is simply seen by the ones after it. When a webhook changes
the object, the API server runs the whole mutating chain a second time (``reinvocation.go``
in k8s.io/apiserver): every in-tree plugin again, then each ``reinvocationPolicy:
IfNeeded`` webhook whose output was changed since its call, and then it stops, whatever
that second round changed. So here: one pass of every mutator; if one of ours (no
``upstream``) changed the object, one more pass: every in-tree plugin, and each of ours
only when the object it meets differs from the one it returned (what ``reinvocation.go``
asks of a webhook); no third pass (:data:`MAX_PASSES`). tests/controlplane's
``test_webhooks_managed.py`` shows the API server doing exactly this. A mutator that
stands for a controller's writes before admission (:attr:`Plugin.precedes_admission`: the
DaemonSet defaults) runs before all the others and asks for no second pass, as nothing
reinvokes a controller.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from webhooks.core.config import Config, PluginConfig
from webhooks.core.derived import Derived
from webhooks.core.plugin import (
    RESOURCE_KINDS,
    ClusterView,
    Context,
    LookupFailure,
    Mutator,
    NoCluster,
    Phase,
    Plugin,
    Validator,
)
from webhooks.core.policy import (
    ENFORCE,
    EXCEPTION_ANNOTATION,
    Action,
    PolicyException,
    choose_action,
    match_exceptions,
)
from webhooks.core.result import (
    UNCHANGED,
    HalfOutcome,
    HalfRun,
    JsonPatch,
    Outcome,
    Result,
    Violation,
    denial_message,
)
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.namespaces import labels_of
from webhooks.k8s.podspec import LEGACY_GROUPS, group_kind

#: Mutating passes at most: the first, and the one reinvocation the API server makes after
#: a webhook changed the object (module docstring); it never makes a third.
MAX_PASSES = 2

#: Exceptions that concern one half (the others need not be looked at per request).
Excepting = tuple[PolicyException, ...]
#: A mutating half ready to run: the plugin, its half, its context, what its answers do,
#: and the exceptions that may skip it.
MutateStep = tuple[Plugin, Mutator, Context, PluginConfig, Excepting]
#: A validating half ready to run.
ValidateStep = tuple[Plugin, Validator, Context, PluginConfig, Excepting]

#: The default rules: enforce, apply, no overrides (plugins built outside a config).
DEFAULT_RULES = PluginConfig(enabled=True, settings=None)

#: A clock in nanoseconds, for the times of recorded halves (:class:`HalfRun`).
Clock = Callable[[], int]


def _no_clock() -> int:
    return 0


@dataclass(frozen=True, slots=True)
class Steps:
    """The resolved halves of one chain, in order, and the exceptions; built once per config.

    Why resolved ahead: contexts (settings, cluster view) do not change between requests,
    so nothing is looked up per review.
    """

    mutators: tuple[MutateStep, ...] = ()
    validators: tuple[ValidateStep, ...] = ()


def _concerning(config: Config, plugin: Plugin, phase: Phase) -> Excepting:
    return tuple(e for e in config.exceptions if e.covers(plugin.name, phase))


def resolve(
    plugins: Iterable[Plugin],
    config: Config,
    cluster: ClusterView | None,
    derived: Derived | None = None,
    halves: Collection[tuple[str, str]] | None = None,
) -> Steps:
    """The mutating and validating halves of ``plugins``, each with its context and rules.

    A validating half its settings switch off (:attr:`Validator.active`) is left out. Why
    each half keeps only the exceptions about it: most halves have none, and then a request
    pays nothing for exceptions at all. Every context shares ``derived`` (a new cache when
    not given), so a value derived from a Namespace is derived once for the whole chain.
    ``halves``, when given, keeps only those ``(plugin, phase)`` halves, in the same order:
    a hybrid installation's webhook runs what native admission policies do not, as one
    chain with the chain's own pass rule (``serve --native``).
    """
    view = cluster if cluster is not None else NoCluster()
    derived = derived if derived is not None else Derived()
    mutators: list[MutateStep] = []
    validators: list[ValidateStep] = []
    # What a controller writes before admission comes first (Plugin.precedes_admission).
    plugins = sorted(plugins, key=lambda p: not (p.precedes_admission and p.mutate))
    for plugin in plugins:
        rules = config.plugins[plugin.name]
        context = Context(rules.settings, view, derived)
        if plugin.mutate is not None and (halves is None or (plugin.name, "mutate") in halves):
            excepting = _concerning(config, plugin, "mutate")
            mutators.append((plugin, plugin.mutate, context, rules, excepting))
        check = plugin.validate
        wanted = halves is None or (plugin.name, "validate") in halves
        if wanted and check is not None and (check.active is None or check.active(rules.settings)):
            excepting = _concerning(config, plugin, "validate")
            validators.append((plugin, check, context, rules, excepting))
    return Steps(tuple(mutators), tuple(validators))


class _Scope:
    """What a request is, for deciding which halves apply to it (spec §0)."""

    __slots__ = ("expected", "foreign", "kind", "mismatch", "operation", "resource", "sub")

    def __init__(self, request: AdmissionRequest, obj: dict[str, Any]) -> None:
        self.resource = request.group_resource
        self.sub = request.sub_resource
        self.operation = request.operation
        self.expected = RESOURCE_KINDS.get(self.resource)
        self.kind = obj.get("kind")
        self.foreign = self.expected is not None and _foreign(request, obj, self.expected)
        self.mismatch = self.expected is not None and self.kind is not None
        self.mismatch = self.mismatch and self.kind != self.expected

    def applies(self, half: Mutator | Validator) -> bool:
        """No subresource, an operation and resource the half declares, and the resource's
        own kind (not one of another group that takes its name)."""
        return (
            not self.sub
            and not self.foreign
            and self.operation in half.operations
            and self.resource in half.resources
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


def _foreign(request: AdmissionRequest, obj: dict[str, Any], expected: str) -> bool:
    """Whether the request's kind, or the object's, is ``expected`` of another API group.

    Why both: the API server sends ``request.kind`` and serialises the object in that
    version, so a custom resource named like a built-in kind (an ``apps.kruise.io``
    DaemonSet) that a too-wide rule sends here says so in either place; nothing of the
    built-in applies to it, so every plugin leaves it alone. A kind of another *name* is
    the wrong-kind case (BadRequest where upstream answers so), as before.
    """
    group = request.group_resource[0]
    kind_group = LEGACY_GROUPS.get((request.kind_group, request.kind), request.kind_group)
    if request.kind == expected and kind_group and kind_group != group:
        return True
    if obj.get("kind") != expected:
        return False
    found = group_kind(obj)
    return found is not None and "apiVersion" in obj and found[0] != group


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
    """What the chain has done so far: the object, the patch, and what to report.

    ``reinvoke`` says one of our own plugins changed the object in the current pass;
    ``returned`` holds the object each of ours returned at its last call, so a further pass
    reinvokes it only when something changed the object since; ``settled`` says a second
    pass ran and changed nothing.
    """

    __slots__ = (
        "_advised",
        "_noted",
        "_warned",
        "advisories",
        "audit",
        "changed_by",
        "clock",
        "decisions",
        "excepted",
        "expired",
        "halves",
        "monitored",
        "obj",
        "patch",
        "reinvoke",
        "returned",
        "settled",
        "warnings",
    )

    def __init__(
        self, obj: dict[str, Any], record: bool = False, clock: Clock | None = None
    ) -> None:
        self.obj = obj
        #: The halves called so far, when the caller asked for them (``None``: not kept).
        self.halves: list[HalfRun] | None = [] if record else None
        self.clock: Clock = clock or _no_clock
        self.patch: JsonPatch = []
        self.warnings: list[str] = []
        #: Audit annotations by key, as their parts (joined once, by :meth:`outcome`).
        self.audit: dict[str, list[str]] = {}
        self.changed_by: list[str] = []
        self.reinvoke = False
        self.returned: dict[str, dict[str, Any]] = {}
        self.settled = False
        self.advisories: list[tuple[Violation, str]] = []
        self.decisions: list[tuple[str, str]] = []
        self.excepted: list[tuple[str, str]] = []
        self.expired: list[tuple[str, str]] = []
        self.monitored: list[tuple[str, str]] = []
        # What the lists and annotations above hold, as sets: a plugin may give one
        # warning or violation per toleration or term, and looking each up in a list (or
        # splitting an annotation again) made n of them cost n².
        self._warned: set[str] = set()
        self._advised: set[tuple[Violation, str]] = set()
        self._noted: dict[str, set[str]] = {}

    def warn(self, text: str) -> None:
        """Add warning ``text``, once."""
        if text not in self._warned:
            self._warned.add(text)
            self.warnings.append(text)

    def note(self, key: str, text: str) -> None:
        """Add ``text`` to audit annotation ``key`` (parts joined by ``; ``), once."""
        parts = self._noted.get(key)
        if parts is None:
            self.audit[key] = [text]
            self._noted[key] = set(text.split("; "))
        elif text not in parts:
            self.audit[key].append(text)
            parts.update(text.split("; "))

    def ran(self, plugin: str, phase: Phase, outcome: HalfOutcome, ops: int, started: int) -> None:
        """Record one call of a half (only when the caller asked: ``halves`` is a list)."""
        if self.halves is not None:
            self.halves.append(HalfRun(plugin, phase, outcome, ops, started, self.clock()))

    def record_decision(self, plugin: str, decision: str) -> None:
        """Record what ``plugin``'s answer did, once per request (the metrics count these)."""
        if (plugin, decision) not in self.decisions:
            self.decisions.append((plugin, decision))

    def take(self, name: str, result: Result) -> None:
        """Record plugin ``name``'s result, a denying one's change included.

        Why a denial's change is kept: offline reports show what admission would have
        written even for an object it refuses, without running the chain a second time.
        """
        # A plugin run again on a further pass says the same things once.
        for warning in result.warnings:
            self.warn(warning)
        for key, text in result.audit.items():
            self.note(key, text)
        for notice in result.notices:
            self.record_decision(name, notice)
        if result.obj is not None and result.patch:
            self.obj = result.obj
            self.patch.extend(result.patch)
            if name not in self.changed_by:
                self.changed_by.append(name)
                self.record_decision(name, "patched")

    def undo(self, original: dict[str, Any]) -> None:
        """Forget every change: the mutators' changes cancelled out (see :func:`run_chain`)."""
        for name in self.changed_by:
            self.audit.pop(name, None)
            self._noted.pop(name, None)
        self.decisions = [d for d in self.decisions if d[1] != "patched"]
        self.obj, self.patch, self.changed_by = original, [], []

    def monitor(self, name: str, result: Result) -> None:
        """Record the change plugin ``name`` would have made, without making it."""
        summary = result.audit.get(name) or f"{len(result.patch)} JSON Patch operations"
        if (name, summary) not in self.monitored:
            self.monitored.append((name, summary))
        self.note(name, f"monitor, not applied: {summary}")
        self.record_decision(name, "monitored")

    def advise(self, plugin: str, violation: Violation, action: Action) -> None:
        """A violation that ``warn`` or ``audit`` admits: say it where its action says."""
        if (violation, action) in self._advised:
            return
        self._advised.add((violation, action))
        self.advisories.append((violation, action))
        if action == "warn":
            self.warn(f"{plugin}: {violation.message}")
        self.note(plugin, f"{action}: {violation.message}")
        self.record_decision(plugin, "warned" if action == "warn" else "audited")

    def outcome(self, violations: Sequence[Violation] = ()) -> Outcome:
        """The answer: allowed with the patch, or denied keeping what would have changed."""
        for v in violations:
            self.record_decision(v.plugin, "denied")
        common: dict[str, Any] = {
            "patch": self.patch,
            "obj": self.obj,
            "warnings": tuple(self.warnings),
            "changed_by": tuple(self.changed_by),
            "audit_annotations": {key: "; ".join(parts) for key, parts in self.audit.items()},
            "advisories": tuple(self.advisories),
            "decisions": tuple(self.decisions),
            "excepted": tuple(self.excepted),
            "expired": tuple(self.expired),
            "monitored": tuple(self.monitored),
            "settled": self.settled,
            "halves": tuple(self.halves) if self.halves else (),
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


#: The Namespace not looked up yet (``None`` is a Namespace that does not exist).
_UNREAD: Any = object()


class _Judge:
    """For one request: which exceptions skip a plugin, and what a violation does.

    Why per request and lazy: the clock is read, and the Namespace looked up, only when an
    exception or an action override needs them, so a chain without either costs nothing.
    """

    __slots__ = ("_namespace", "_now", "_now_fn", "request")

    def __init__(self, request: AdmissionRequest, now: Callable[[], dt.datetime]) -> None:
        self.request = request
        self._now_fn = now
        self._now: dt.datetime | None = None
        self._namespace: Any = _UNREAD

    def skips(
        self,
        plugin: Plugin,
        phase: Phase,
        exceptions: Excepting,
        obj: dict[str, Any],
        progress: _Progress,
    ) -> bool:
        """Whether one of ``exceptions`` skips ``plugin``'s ``phase`` for ``obj`` (recorded)."""
        if self._now is None:
            self._now = self._now_fn()
        found = match_exceptions(exceptions, plugin.name, phase, self.request, obj, self._now)
        for name in found.expired:
            if (name, plugin.name) not in progress.expired:
                progress.expired.append((name, plugin.name))
        if found.applied is None:
            return False
        if (found.applied, plugin.name) not in progress.excepted:
            progress.excepted.append((found.applied, plugin.name))
        progress.note(EXCEPTION_ANNOTATION, found.applied)
        return True

    def action(self, plugin: Plugin, rules: PluginConfig, context: Context) -> Action:
        """What a violation of this plugin does for this request's namespace.

        Chosen once per Namespace version and plugin (:mod:`webhooks.core.derived`): the
        overrides' selectors match the Namespace's labels, which change only with it.
        """
        if not rules.action_overrides:
            return rules.action
        if self._namespace is _UNREAD:
            self._namespace = context.cluster.namespace(self.request.namespace)

        def choose(namespace: Any) -> Action:
            return choose_action(rules.action, rules.action_overrides, labels_of(namespace))

        return context.derived.of("Namespace", self._namespace, f"{plugin.name}/action", choose)

    def enforced(
        self,
        plugin: Plugin,
        found: Iterable[Violation],
        rules: PluginConfig,
        context: Context,
        progress: _Progress,
    ) -> list[Violation]:
        """The violations that refuse the request; the others are advised as their action says.

        Why internal errors and wrong kinds always refuse: they say the request could not be
        judged, not that a policy found it wanting, and no action can make that right.
        """
        named = _named(plugin, found)
        policy = [v for v in named if v.code not in (400, 500)]
        if not policy:
            return named
        action = self.action(plugin, rules, context)
        if action == ENFORCE:
            return named
        for violation in policy:
            progress.advise(plugin.name, violation, action)
        return [v for v in named if v.code in (400, 500)]


def _same(obj: dict[str, Any], original: dict[str, Any]) -> bool:
    # Untouched branches are the input's own objects (copy-on-write), so this only walks
    # the edited paths; an edit deeper than the recursion limit just counts as a change.
    try:
        return obj == original
    except RecursionError:
        return False


def is_ours(plugin: Plugin) -> bool:
    """Whether the API server would call ``plugin`` as a webhook (reinvoked only if needed)."""
    return not (plugin.upstream or plugin.precedes_admission)


def _pass(
    request: AdmissionRequest,
    scope: _Scope,
    steps: Sequence[MutateStep],
    progress: _Progress,
    judge: _Judge,
    again: bool = False,
) -> list[Violation]:
    """Run each mutator once, in order, on the previous one's output; stop at a denial.

    ``again`` marks a further pass: one of ours whose returned object is still the current
    one is not called, as the API server reinvokes a webhook only when the object changed
    since its call (and running it would cost as much as its first call, to no effect).
    """
    progress.reinvoke = False
    recording = progress.halves is not None
    for plugin, half, context, rules, excepting in steps:
        if not scope.applies(half):
            continue
        ours = is_ours(plugin)
        if again and ours:
            returned = progress.returned.get(plugin.name)
            if returned is not None and _same(progress.obj, returned):
                continue
        started = progress.clock() if recording else 0
        if scope.mismatch:
            if plugin.wrong_kind is None:
                continue
            progress.ran(plugin.name, "mutate", "denied", 0, started)
            return [scope.wrong_kind(plugin)]
        try:
            if excepting and judge.skips(plugin, "mutate", excepting, progress.obj, progress):
                progress.ran(plugin.name, "mutate", "skipped", 0, started)
                continue
            result = half.run(request, progress.obj, context)
            if result is UNCHANGED:  # the common answer, shared: skip it fast
                if ours:
                    progress.returned[plugin.name] = progress.obj
                if recording:
                    progress.ran(plugin.name, "mutate", "allowed", 0, started)
                continue
            monitored = rules.mutation == "monitor" and bool(result.patch)
            if monitored:
                progress.monitor(plugin.name, result)
            else:
                progress.take(plugin.name, result)
                if result.patch and ours:
                    progress.reinvoke = True
            if ours:
                progress.returned[plugin.name] = progress.obj
            denial = []
            if result.violations:
                denial = judge.enforced(plugin, result.violations, rules, context, progress)
            if recording:
                done: HalfOutcome = "denied" if denial else "monitored" if monitored else "allowed"
                if done == "allowed" and result.patch:
                    done = "patched"
                progress.ran(plugin.name, "mutate", done, len(result.patch), started)
            if denial:
                return denial
        except Exception as exc:  # a plugin bug must not become an HTTP 500 or a hang
            progress.ran(plugin.name, "mutate", "error", 0, started)
            return [_failure(plugin, exc)]
    return []


def mutate(
    request: AdmissionRequest,
    scope: _Scope,
    steps: Sequence[MutateStep],
    progress: _Progress,
    judge: _Judge,
) -> list[Violation]:
    """One pass of the mutators, and one more if one of ours changed the object.

    A second pass that ends where the first ended (a namespace default merging away what a
    later plugin then appends again) leaves nothing more in the patch.
    """
    violations = _pass(request, scope, steps, progress, judge)
    for _ in range(MAX_PASSES - 1):
        if violations or not progress.reinvoke:
            break
        before, ops = progress.obj, len(progress.patch)
        violations = _pass(request._replace(object=before), scope, steps, progress, judge, True)
        if not violations and _same(progress.obj, before):
            progress.obj = before
            del progress.patch[ops:]
            progress.settled = True
            break
    return violations


#: The in-tree plugins in kube-apiserver's order (``AllOrderedPlugins``): its validating
#: phase runs them in this order, LimitPodHardAntiAffinityTopology first, before any webhook.
UPSTREAM_ORDER = (
    "LimitPodHardAntiAffinityTopology",
    "PodNodeSelector",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "ExtendedResourceToleration",
    "RuntimeClass",
)


def _upstream_first(steps: Sequence[ValidateStep]) -> list[ValidateStep]:
    """Upstream's validators in upstream's order, then ours in chain order."""

    def rank(step: ValidateStep) -> int:
        name = step[0].upstream
        if not name:
            return len(UPSTREAM_ORDER)
        return UPSTREAM_ORDER.index(name) if name in UPSTREAM_ORDER else len(UPSTREAM_ORDER) - 1

    return sorted(steps, key=rank)


def validate(
    request: AdmissionRequest,
    scope: _Scope,
    steps: Sequence[ValidateStep],
    progress: _Progress,
    judge: _Judge,
) -> list[Violation]:
    """Run the validators on the final object: upstream's first, in upstream's order, and
    the first of them that refuses is the answer; otherwise every one of ours, so one answer
    lists each of their problems.

    Why: kube-apiserver's validating phase stops at the first in-tree plugin that refuses,
    before any webhook runs, so a pod two upstream plugins refuse reads only the first's
    message there (tests/controlplane/differential shows it).
    """
    obj = progress.obj
    violations: list[Violation] = []
    recording = progress.halves is not None
    for plugin, half, context, rules, excepting in _upstream_first(steps):
        if not scope.applies(half):
            continue
        started = progress.clock() if recording else 0
        if scope.mismatch:
            if plugin.wrong_kind is None:
                continue
            violations.append(scope.wrong_kind(plugin))
            progress.ran(plugin.name, "validate", "denied", 0, started)
            break
        try:
            if excepting and judge.skips(plugin, "validate", excepting, obj, progress):
                progress.ran(plugin.name, "validate", "skipped", 0, started)
                continue
            found = half.run(request, obj, context)
            refused = judge.enforced(plugin, found, rules, context, progress) if found else []
            violations.extend(refused)
            if recording:
                progress.ran(
                    plugin.name, "validate", "denied" if refused else "allowed", 0, started
                )
        except Exception as exc:  # a plugin bug must not become an HTTP 500 or a hang
            progress.ran(plugin.name, "validate", "error", 0, started)
            return [*violations, _failure(plugin, exc)]
        if violations and plugin.upstream:
            break  # in tree, the first refusal ends the validating phase
    return violations


def utcnow() -> dt.datetime:
    """The current time, aware and in UTC; why a function: the clock is injected for tests."""
    return dt.datetime.now(dt.UTC)


def run_chain(
    request: AdmissionRequest,
    mutators: Sequence[MutateStep] = (),
    validators: Sequence[ValidateStep] = (),
    now: Callable[[], dt.datetime] = utcnow,
    record: bool = False,
    clock: Clock | None = None,
) -> Outcome:
    """Run ``mutators`` then ``validators`` over ``request``'s object.

    Mutators stop the chain at their first violation, as an in-tree admission error does;
    validators all run. A :class:`LookupFailure` or a plugin bug becomes an InternalError
    status (code 500 inside an HTTP 200), never an exception or an HTTP 500: the operation
    is refused with a message that says why, as upstream refuses it when its own lookup
    fails. A denial keeps the patch the mutators made, for offline reports; the wire
    response never carries it. With ``record`` the outcome lists each half called
    (:attr:`Outcome.halves`), timed by ``clock`` when one is given: what the server's
    logs and spans show, at no cost to a chain that does not ask.
    """
    obj = request.object
    if obj is None:
        return Outcome()
    scope = _Scope(request, obj)
    progress = _Progress(obj, record, clock)
    judge = _Judge(request, now)
    violations = mutate(request, scope, mutators, progress, judge)
    if not violations:
        violations = validate(request, scope, validators, progress, judge)
    if len(progress.changed_by) > 1 and _same(progress.obj, obj):
        # Later mutators undid earlier ones (a RuntimeClass toleration that subsumes one
        # just added): no net change, so no patch, or every reinvocation would "mutate";
        # a denial too keeps only what would have changed, and here nothing would.
        progress.undo(obj)
    return progress.outcome(violations)
