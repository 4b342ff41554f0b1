"""The differential run's counts: how many cases, how many differences, by mode and plugin."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from tests.controlplane.differential.corpus import PLUGINS, Case, Observed

#: Every group's report of the session, printed at its end (``conftest.py``).
REPORTS: list[Report] = []


@dataclass(slots=True)
class Report:
    """One config group: cases compared per mode, and every difference with its verdict."""

    group: str
    cases: int
    #: How many cases in-tree refused (the rest it admitted and stored).
    refused: int = 0
    #: In-tree's refusals by reason (what the corpus reaches).
    refusals: Counter[str] = field(default_factory=Counter)
    compared: Counter[str] = field(default_factory=Counter)
    #: (mode, case id, fields, explanation or "", detail)
    differences: list[tuple[str, str, tuple[str, ...], str, str]] = field(default_factory=list)
    by_plugin: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)

    def add(
        self,
        mode: str,
        case: Case,
        fields: list[str],
        why: tuple[str, str],
        reference: Observed,
        other: Observed,
    ) -> None:
        """Count one comparison of ``case`` under ``mode``; ``why`` is (explanation, plugin).

        Each case counts once for every plugin it exercises; an explained difference is
        charged to the plugin its explanation names, an unexplained one to every plugin the
        case exercises (any of them may be the culprit).
        """
        explanation, culprit = why
        self.compared[mode] += 1
        for plugin in case.plugins:
            counts = self.by_plugin.setdefault((mode, plugin), Counter())
            counts["cases"] += 1
            if fields and not explanation:
                counts["unexplained"] += 1
        if fields and explanation:
            self.by_plugin.setdefault((mode, culprit), Counter())["explained"] += 1
        if fields:
            detail = _detail(case, reference, other)
            self.differences.append((mode, case.id, tuple(fields), explanation, detail))

    def unexplained(self) -> list[str]:
        """Each unexplained difference, described."""
        return [
            f"[{mode}] case {case_id}: {', '.join(fields)}\n{detail}"
            for mode, case_id, fields, why, detail in self.differences
            if not why
        ]

    def every_difference(self) -> list[str]:
        """Each difference, described, with its explanation when it has one."""
        return [
            f"[{self.group}/{mode}] case {case_id}: {', '.join(fields)} ({why or 'UNEXPLAINED'})"
            f"\n{detail}"
            for mode, case_id, fields, why, detail in self.differences
        ]

    def lines(self) -> list[str]:
        """The summary: totals per mode, then a table by plugin."""
        out = []
        for mode, compared in self.compared.items():
            found = [d for d in self.differences if d[0] == mode]
            explained = Counter(d[3] for d in found if d[3])
            unexplained = sum(1 for d in found if not d[3])
            why = ", ".join(f"{n} {name}" for name, n in explained.items()) or "none"
            out.append(
                f"differential {self.group} / {mode}: {compared} cases compared with in-tree "
                f"({self.cases - self.refused} admitted there, {self.refused} refused), "
                f"{len(found)} differences ({unexplained} unexplained; explained: {why})"
            )
        for reason, count in self.refusals.most_common(8):
            out.append(f"  in-tree refused {count:>4}: {reason}")
        head = ("mode", "plugin", "cases", "explained", "unexplained")
        out.append("  {:<9} {:<30} {:>6} {:>9} {:>11}".format(*head))
        order = [*PLUGINS, "(managed chain)"]
        for (mode, plugin), counts in sorted(
            self.by_plugin.items(), key=lambda i: (i[0][0], order.index(i[0][1]))
        ):
            out.append(
                f"  {mode:<9} {plugin:<30} {counts['cases']:>6} "
                f"{counts['explained']:>9} {counts['unexplained']:>11}"
            )
        return out


def _detail(case: Case, reference: Observed, other: Observed) -> str:
    return "\n".join(
        [
            f"  namespace: {json.dumps(case.namespace['metadata'].get('annotations', {}))}",
            f"  pod spec: {json.dumps(case.request.pod['spec'])}",
            f"  update: {json.dumps(case.request.update)}",
            f"  in-tree: {reference}",
            f"  other:   {other}",
        ]
    )
