"""What a translator returns: CEL pieces for the policies, and the verdicts for the report.

Why pieces and not finished objects: a MutatingAdmissionPolicy runs its mutations in order,
while the API server runs separate policies in no fixed order (it walks a Go map), so every
plugin's mutation must sit in one policy in chain order; the assembler
(:mod:`webhooks.export.assemble`) builds the objects, the translators only say what each
plugin does.

Words used throughout the package: a *verdict* is ``exact``, ``exact except`` or
``not exported``; a *line* is one verdict about one subject (a plugin, a setting, an
exception) with the reason; a *half* is a plugin's mutating or validating half.

The report never contradicts itself, and :func:`plugin_lines` is the one place that sees to
it: a setting's line is never better than its plugin's (a setting of a plugin nothing of
which is exported is not exported; of a plugin exported with exceptions it is at most
``exact except``), nor ``.mutation``'s better than the mutating half's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

Verdict = Literal["exact", "exact except", "not exported"]
EXACT: Final = "exact"
EXCEPT: Final = "exact except"
NOT_EXPORTED: Final = "not exported"
#: Worst first: a plugin's verdict is the worst of its lines.
_RANK: Final = {EXACT: 0, EXCEPT: 1, NOT_EXPORTED: 2}

#: Where a mutation or validation applies: Pods, or DaemonSets (their pod template).
Target = Literal["pods", "daemonsets", "templates"]

#: A policy variable: (name, CEL expression).
Variable = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Line:
    """One verdict about one subject, e.g. ``plugins.runtime-class: exact except: <why>``."""

    subject: str
    verdict: Verdict
    why: str = ""
    #: In a hybrid installation's report: what of the subject the webhook keeps ("" for
    #: nothing, or outside a hybrid report).
    hybrid: str = ""

    def render(self) -> str:
        """The report line; why one line: scripts grep the report."""
        why = f": {self.why}" if self.why else ""
        hybrid = f"; hybrid: {self.hybrid}" if self.hybrid else ""
        return f"{self.subject}: {self.verdict}{why}{hybrid}"


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    """The worst verdict of ``verdicts`` (``exact`` for none)."""
    found: Verdict = EXACT
    for verdict in verdicts:
        if _RANK[verdict] > _RANK[found]:
            found = verdict
    return found


def better(verdict: Verdict, than: Verdict) -> bool:
    """Whether ``verdict`` promises more than ``than`` (``exact`` is better than the rest)."""
    return _RANK[verdict] < _RANK[than]


@dataclass(frozen=True, slots=True)
class Mutation:
    """One JSONPatch mutation of a plugin: a CEL expression returning a list of JSONPatch.

    ``runtime_class``: the expression reads ``params``, the pod's RuntimeClass, so it is
    part only of the policy whose param is that RuntimeClass. ``operations`` are the
    operations the plugin's half handles; the assembler guards the expression with them.
    """

    target: Target
    operations: frozenset[str]
    expression: str
    variables: tuple[Variable, ...] = ()
    runtime_class: bool = False


@dataclass(frozen=True, slots=True)
class Check:
    """One validation: ``expression`` is true for an object the plugin admits.

    ``message`` is CEL text for the denial (the plugin's own words); ``reason`` the status
    reason (``Forbidden`` answers 403, ``Invalid`` 422), as the webhook answers.
    """

    expression: str
    message: str
    reason: str = "Forbidden"


@dataclass(frozen=True, slots=True)
class Validating:
    """A ValidatingAdmissionPolicy's worth of checks for one plugin.

    ``suffix`` tells policies of one plugin apart (RuntimeClass has one with params and one
    without); ``runtime_class`` makes the RuntimeClasses its params, one evaluation each.
    ``conditions`` are (name, CEL) match conditions of the plugin's own. ``phase`` is the
    half the checks come from: a mutating half refuses too (a conflicting nodeSelector), and
    a policy can refuse only by validating, so those checks are validations that belong to
    the mutating half (its exceptions, its place in a hybrid installation).
    """

    targets: tuple[Target, ...]
    operations: frozenset[str]
    checks: tuple[Check, ...]
    variables: tuple[Variable, ...] = ()
    conditions: tuple[Variable, ...] = ()
    runtime_class: bool = False
    suffix: str = ""
    phase: Literal["mutate", "validate"] = "validate"


@dataclass(frozen=True, slots=True)
class Translation:
    """What a translator made of one plugin's settings.

    ``mutate`` and ``validate`` are the verdicts of the two halves (``None``: the plugin has
    no such half, or its settings switch it off); ``lines`` the report lines about its
    settings, in the settings' order. A half that is ``not exported`` contributes nothing.
    """

    plugin: str
    mutations: tuple[Mutation, ...] = ()
    validating: tuple[Validating, ...] = ()
    mutate: Verdict | None = None
    validate: Verdict | None = None
    lines: tuple[Line, ...] = ()


@dataclass(frozen=True, slots=True)
class Export:
    """The result: the objects (plain dicts, in apply order) and the report lines.

    ``native`` holds the (plugin, phase) halves a hybrid installation runs natively:
    exported exactly, and for mutations also a prefix of the chain (see
    :func:`webhooks.export.assemble.native_halves`); ``webhook`` the halves its webhooks
    still serve: every other half that checks anything under the settings; ``refused``
    those of them the release's CEL cannot express at all.
    """

    objects: tuple[dict[str, object], ...]
    lines: tuple[Line, ...]
    native: frozenset[tuple[str, str]] = frozenset()
    webhook: frozenset[tuple[str, str]] = frozenset()
    plugins: tuple[str, ...] = field(default_factory=tuple)
    #: The (plugin, phase) halves the release's CEL cannot express (the report says why).
    refused: frozenset[tuple[str, str]] = frozenset()

    @property
    def exact(self) -> bool:
        """Whether every plugin line says ``exact``: the exit status of ``export``."""
        return all(line.verdict == EXACT for line in self.lines)

    def report(self) -> list[str]:
        """The report, one rendered line per subject."""
        return [line.render() for line in self.lines]


def settings_lines(plugin: str, names: Sequence[str], *extra: Line) -> tuple[Line, ...]:
    """``exact`` lines for ``names`` (camelCase settings), except those given in ``extra``."""
    given = {line.subject for line in extra}
    lines = [Line(f"plugins.{plugin}.{n}", EXACT) for n in names]
    return tuple(line if line.subject not in given else _pick(line, extra) for line in lines)


def _pick(line: Line, extra: Sequence[Line]) -> Line:
    return next(e for e in extra if e.subject == line.subject)


#: Settings every plugin with a mutating half has that belong to that half alone: their
#: verdict is never better than the half's (``mutation: enforce`` is not exported when the
#: mutating half is not).
HALF_SETTINGS: Final = {"mutation": "mutate"}

_HALF_WORDS: Final = {"mutate": "mutating", "validate": "validating"}

#: The words of a hybrid report for the halves its webhook keeps.
_KEPT: Final = {
    "mutate": "the webhook keeps its mutating half",
    "validate": "the webhook keeps its validating half",
}
_KEPT_WHOLE: Final = "the webhook keeps the whole plugin"
_KEPT_AFTER: Final = " (its mutation comes after one the webhook keeps, so it stays there too)"


def plugin_verdict(halves: Mapping[str, Verdict | None], lines: Iterable[Line]) -> Verdict:
    """A plugin's verdict: ``not exported`` when nothing of it is (every half it has under
    its settings is not exported), ``exact`` when every half and line is, else ``exact
    except``.

    Why not simply the worst line: a plugin whose validating half is exported while one
    setting keeps its mutating half out (``deviceClaims``) has policies in the output, and
    calling the plugin "not exported" would then be false.
    """
    active = [v for v in halves.values() if v is not None]
    if active and all(v == NOT_EXPORTED for v in active):
        return NOT_EXPORTED
    found = worst([*active, *(line.verdict for line in lines)])
    if found == NOT_EXPORTED and not active:
        return NOT_EXPORTED
    return EXACT if found == EXACT else EXCEPT


def plugin_lines(
    plugin: str,
    halves: Mapping[str, Verdict | None],
    lines: Sequence[Line],
    settings: Sequence[str],
    kept: frozenset[str] | None = None,
) -> tuple[Line, ...]:
    """The plugin's line, then one line per setting, none better than the plugin's.

    ``halves`` maps ``mutate`` and ``validate`` to their verdicts (``None``: no such half
    under the settings); ``lines`` are what the translator and the assembler said, the
    plugin's own (``plugins.<name>``, with the reason) among them or not; ``settings`` the
    plugin's settings as spelt in the config, each of which gets a line (a plugin nothing
    of which is exported need not name them: they are not exported either). ``kept``: in a
    hybrid report, the halves the webhook keeps.

    Why here and not in each translator: "not exported" above "exact" lines is the kind of
    contradiction that comes back whenever a line is added somewhere; deciding every line's
    final verdict in one function keeps it from coming back.
    """
    key = f"plugins.{plugin}"
    own = next((line for line in lines if line.subject == key), None)
    given = [line for line in lines if line.subject != key]
    named = {line.subject for line in given}
    verdict = plugin_verdict(halves, lines)
    for name in settings:
        subject = f"{key}.{name}"
        if subject not in named:
            if verdict != NOT_EXPORTED:
                raise ValueError(f"{subject}: the translator gives this setting no verdict")
            given.append(Line(subject, NOT_EXPORTED, _NOT_EXPORTED_WHY.format(key=key)))
    worse = [line.subject.removeprefix(f"{key}.") for line in given if line.verdict != EXACT]
    see = "see " + ", ".join(worse) if worse else ""
    if own is not None and own.why:
        head = Line(
            key, verdict, f"{own.why}; {see}" if see and verdict != NOT_EXPORTED else own.why
        )
    else:
        head = Line(key, verdict, see if verdict != EXACT else "")
    body = [_capped(line, key, verdict, halves) for line in given]
    if kept:
        whole = kept >= {h for h, v in halves.items() if v is not None}
        where = _KEPT_WHOLE if whole else " and ".join(_KEPT[h] for h in sorted(kept))
        if "mutate" in kept and halves.get("mutate") == EXACT:
            where += _KEPT_AFTER
        if whole:
            body = [dataclasses.replace(line, hybrid="stays on the webhook") for line in body]
        head = dataclasses.replace(head, hybrid=where)
    return (head, *body)


_NOT_EXPORTED_WHY: Final = "its plugin is not exported: see {key}"


def _capped(line: Line, key: str, verdict: Verdict, halves: Mapping[str, Verdict | None]) -> Line:
    """``line`` no better than the plugin's ``verdict`` (and a half's setting than the half)."""
    if verdict == NOT_EXPORTED:
        if line.verdict == NOT_EXPORTED:
            return line
        return Line(line.subject, NOT_EXPORTED, _NOT_EXPORTED_WHY.format(key=key))
    half = HALF_SETTINGS.get(line.subject.removeprefix(f"{key}."))
    half_verdict = halves.get(half) if half else None
    if half and half_verdict is not None and better(line.verdict, half_verdict):
        words = _HALF_WORDS[half]
        if half_verdict == NOT_EXPORTED:
            return Line(line.subject, NOT_EXPORTED, f"the {words} half is not exported: see {key}")
        line = Line(line.subject, half_verdict, f"as the {words} half: see {key}")
    if not better(line.verdict, verdict):
        return line
    return Line(
        line.subject, verdict, f"exported exactly; its plugin's exceptions apply: see {key}"
    )


def exception_line(line: Line, covered: Sequence[Verdict]) -> Line:
    """An exception's line, ``not exported`` when every plugin it covers is not exported.

    Why: an exception is a match condition on the policies of its plugins; with none of
    them exported there is nothing for it to be a condition of.
    """
    if covered and all(v == NOT_EXPORTED for v in covered) and line.verdict != NOT_EXPORTED:
        return Line(line.subject, NOT_EXPORTED, "no plugin it covers is exported")
    return line
