"""The report: what a dry run found, per object and in total.

Why a module of its own: the engine fills a :class:`Report`, and the renderers
(:mod:`.render`), the policy-test judging, ``explain`` and the audit only read one; they
import these data types, never the engine that makes them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from dataclasses import field as _field
from typing import Any, Final, Literal, NamedTuple

from webhooks.core.result import JsonPatch, Outcome
from webhooks.dryrun.expand import Role
from webhooks.k8s.podspec import GroupKind, kind_label
from webhooks.manifests.reader import Document, Problem

FindingType = Literal[
    "violation", "mutation", "convergence", "schema", "excepted", "expired", "monitored", "warning"
]
#: Findings that are information, never a failure: what an exception skipped, what a plugin
#: in monitor mode would have changed.
INFORMATION: Final = ("excepted", "monitored")
CONVERGENCE: Final = "convergence"
SCHEMA: Final = "schema"


class SchemaError(NamedTuple):
    """One schema finding about an object: where, what, and whether it fails the run.

    ``action`` is ``enforce`` for an error, ``warn`` for a finding that is reported and does
    not fail (an object no schema covers, under ``--missing-schemas warn``).
    """

    path: str
    message: str
    action: str = "enforce"


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing ``check`` reports about an object.

    ``rule`` is the plugin name, ``schema`` / ``convergence``, or for ``excepted`` and
    ``expired`` the exception's name; a ``warning`` is what a plugin told the user without
    refusing (the review's ``warnings``: a claim it could not resolve, say). ``field`` is
    the path in the manifest (a Pod path already mapped onto the template); ``target``
    says whether the object itself or the Pods its controller creates were admitted. A
    mutation lists the plugins that changed the object, one summary each, and the JSON
    Patch of the chain. ``action`` is what a violation does: ``enforce`` fails the run,
    ``warn`` and ``audit`` are warnings; an expired exception and a plugin's warning are
    warnings too.
    """

    type: FindingType
    rule: str
    message: str
    line: int
    field: str = ""
    target: Role = "object"
    plugins: tuple[str, ...] = ()
    summaries: tuple[str, ...] = ()
    patch: JsonPatch = _field(default_factory=list)
    action: str = "enforce"

    @property
    def level(self) -> Literal["error", "warning", "note"]:
        """``error`` fails a run; ``warning`` is reported and does not; ``note`` informs.

        Mutations are notes here; ``--fail-on-mutation`` raises them when rendering.
        """
        if self.type in ("mutation", *INFORMATION):
            return "note"
        if self.type in ("expired", "warning") or self.action != "enforce":
            return "warning"
        return "error"


@dataclass(slots=True)
class Checked:
    """One manifest object and what admission would do with it.

    ``kind`` is the kind's name and ``group`` its API group: a kind is the pair, and only
    the built-in of a group is admitted as one (:data:`~webhooks.dryrun.expand.KINDS`).
    """

    document: Document
    kind: str
    namespace: str
    name: str
    group: str = ""
    findings: list[Finding] = _field(default_factory=list)
    admitted: bool = True
    patches: dict[Role, JsonPatch] = _field(default_factory=dict)
    #: The object as admission would store it, per request (``explain`` reads the Pod).
    stored: dict[Role, dict[str, Any]] = _field(default_factory=dict)
    #: What the chain decided, per request that some enabled plugin handles. Findings are
    #: deduplicated across the object and its Pods for display; ``test`` must judge each
    #: request on its own, so it reads these.
    outcomes: dict[Role, Outcome] = _field(default_factory=dict)

    @property
    def key(self) -> GroupKind:
        """The kind as the API knows it: (group, kind)."""
        return (self.group, self.kind)

    @property
    def subject(self) -> str:
        """``Kind namespace/name`` (``Kind name`` when cluster-scoped), for messages; a kind
        of another group that takes a built-in's name is named with its group."""
        name = self.name or "<unnamed>"
        kind = kind_label(self.key)
        return f"{kind} {self.namespace}/{name}" if self.namespace else f"{kind} {name}"

    @property
    def failed(self) -> list[Finding]:
        """Enforced violations, schema errors and convergence failures: what fails a CI run."""
        return [f for f in self.findings if f.level == "error"]

    def excepted(self) -> list[tuple[str, str, Role]]:
        """(exception, plugin, target) for every plugin an exception skipped here."""
        return [(f.rule, f.plugins[0], f.target) for f in self.findings if f.type == "excepted"]


@dataclass(slots=True)
class Report:
    """Everything one ``check`` run found, in input order."""

    checked: list[Checked] = _field(default_factory=list)
    problems: list[Problem] = _field(default_factory=list)
    skipped: Counter[str] = _field(default_factory=Counter)
    #: Documents of a kind of another group that takes a built-in's name (an
    #: ``apps.kruise.io`` DaemonSet), each with why it was not admitted; counted in
    #: ``skipped`` too, and listed because the name alone reads as a checked built-in.
    foreign: list[tuple[Document, str]] = _field(default_factory=list)
    context: Counter[str] = _field(default_factory=Counter)
    files: int = 0

    def count(self, kind: FindingType, level: str | None = None) -> int:
        """How many findings of ``kind`` (at ``level``, if given); mutations once per plugin.

        Why per plugin: that is how the text report lists them, so the totals match the lines.
        """
        return sum(
            len(f.plugins) if kind == "mutation" else 1
            for c in self.checked
            for f in c.findings
            if f.type == kind and (level is None or f.level == level)
        )

    def warnings(self) -> int:
        """Findings reported as warnings: violations under warn or audit, expired exceptions."""
        return sum(f.level == "warning" for c in self.checked for f in c.findings)

    def exit_code(self, fail_on_mutation: bool = False) -> int:
        """0 clean; 1 enforced violations (and mutations when asked); 2 unusable input.

        Why 2 wins: a run that could not read part of its input proves nothing about it.
        Warnings never fail a run: the policy that produced them is not enforced yet.
        """
        if self.problems:
            return 2
        for checked in self.checked:
            for finding in checked.findings:
                if finding.level == "error" or (fail_on_mutation and finding.type == "mutation"):
                    return 1
        return 0
