"""What a translator returns: CEL pieces for the policies, and the verdicts for the report.

Why pieces and not finished objects: a MutatingAdmissionPolicy runs its mutations in order,
while the API server runs separate policies in no fixed order (it walks a Go map), so every
plugin's mutation must sit in one policy in chain order; the assembler
(:mod:`webhooks.export.assemble`) builds the objects, the translators only say what each
plugin does.

Words used throughout the package: a *verdict* is ``exact``, ``exact except`` or
``not exported``; a *line* is one verdict about one subject (a plugin, a setting, an
exception) with the reason; a *half* is a plugin's mutating or validating half.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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

    def render(self) -> str:
        """The report line; why one line: scripts grep the report."""
        return f"{self.subject}: {self.verdict}" + (f": {self.why}" if self.why else "")


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    """The worst verdict of ``verdicts`` (``exact`` for none)."""
    found: Verdict = EXACT
    for verdict in verdicts:
        if _RANK[verdict] > _RANK[found]:
            found = verdict
    return found


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
    still serve: every other half that checks anything under the settings.
    """

    objects: tuple[dict[str, object], ...]
    lines: tuple[Line, ...]
    native: frozenset[tuple[str, str]] = frozenset()
    webhook: frozenset[tuple[str, str]] = frozenset()
    plugins: tuple[str, ...] = field(default_factory=tuple)

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
