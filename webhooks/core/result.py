"""Values that plugins and the chain return: violations, plugin results, the chain outcome.

Denials are data (a :class:`Violation`), never exceptions: exceptions are kept for malformed
input and bugs, so a policy decision can never be confused with a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

JsonPatch = list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Violation:
    """One reason to refuse the operation.

    ``message`` is what the user reads (upstream's text where upstream has one); ``field``
    is the object path of the offending value (``spec.tolerations[2].key``) so offline tools
    can point at a line; ``code``/``reason`` become ``response.status`` when it is the first
    violation.
    """

    message: str
    field: str = ""
    code: int = 403
    reason: str = "Forbidden"
    plugin: str = ""


@dataclass(frozen=True, slots=True)
class Result:
    """What one plugin did to one object.

    ``obj`` is the changed object (``None`` when unchanged) and ``patch`` the JSON Patch
    operations that turn the plugin's input into it, built from the paths it touched.
    ``notices`` are decisions worth counting that are neither a change nor a denial (an
    unusable namespace annotation the plugin ignored, say): the chain records each as a
    decision of the plugin, which the metrics count.
    """

    obj: dict[str, Any] | None = None
    patch: JsonPatch = field(default_factory=list)
    warnings: tuple[str, ...] = ()
    violations: tuple[Violation, ...] = ()
    audit: Mapping[str, str] = field(default_factory=dict)
    notices: tuple[str, ...] = ()


UNCHANGED = Result()

#: What one call of a plugin half came to: it let the object through as it was, changed
#: it, refused it, computed a change it did not make (monitor mode), was skipped by a
#: policy exception, or failed (a lookup or a bug: an InternalError refusal).
HalfOutcome = Literal["allowed", "patched", "denied", "monitored", "skipped", "error"]


class HalfRun(NamedTuple):
    """One plugin half the chain came to for one request, when the caller asked for them.

    Why a record and not a callback: the core stays free of any log or trace library; the
    server turns these into log fields and spans after the review is answered. ``started``
    and ``ended`` are the caller's clock (nanoseconds) around the call, ``0`` when the
    caller gave no clock.
    """

    plugin: str
    phase: Literal["mutate", "validate"]
    outcome: HalfOutcome
    #: JSON Patch operations the call produced (kept or, in monitor mode, not).
    ops: int = 0
    started: int = 0
    ended: int = 0


@dataclass(slots=True)
class Outcome:
    """The answer of the whole chain for one request, independent of any wire format.

    Not frozen, though nothing changes it after the chain returns: one is built for every
    review, and a frozen dataclass costs three times as much to build.
    """

    allowed: bool = True
    patch: JsonPatch = field(default_factory=list)
    obj: dict[str, Any] | None = None
    warnings: tuple[str, ...] = ()
    audit_annotations: Mapping[str, str] = field(default_factory=dict)
    violations: tuple[Violation, ...] = ()
    changed_by: tuple[str, ...] = ()
    code: int = 200
    reason: str = ""
    message: str = ""
    #: Violations whose action was ``warn`` or ``audit``: (violation, action); admitted.
    advisories: tuple[tuple[Violation, str], ...] = ()
    #: What each plugin's answer did: (plugin, patched|denied|warned|audited|monitored, or a
    #: notice the plugin gave).
    decisions: tuple[tuple[str, str], ...] = ()
    #: Exceptions that skipped a plugin: (exception, plugin).
    excepted: tuple[tuple[str, str], ...] = ()
    #: Exceptions that matched but had expired, so did not apply: (exception, plugin).
    expired: tuple[tuple[str, str], ...] = ()
    #: Changes a plugin in monitor mode computed and did not make: (plugin, summary).
    monitored: tuple[tuple[str, str], ...] = ()
    #: The mutating chain made its second pass and it changed nothing: every in-tree
    #: mutator, run on ``obj`` itself, leaves it as it is (:mod:`webhooks.core.chain`).
    settled: bool = False
    #: Each half called, in call order (a second mutating pass adds its calls), when the
    #: caller asked for them (:class:`~webhooks.core.admission.Admission` ``record``).
    halves: tuple[HalfRun, ...] = ()

    @property
    def denied_by(self) -> tuple[str, ...]:
        """Plugins that refused the request, in chain order, without repeats."""
        return tuple(dict.fromkeys(v.plugin for v in self.violations))


def denial_message(violations: tuple[Violation, ...]) -> str:
    """Render violations the way apimachinery aggregates errors: one as-is, several as ``[a, b]``.

    Why: users and scripts already recognise this shape from the API server's own messages.
    """
    messages = list(dict.fromkeys(v.message for v in violations))
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"
