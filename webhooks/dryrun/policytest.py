"""Declarative policy tests: suites of expectations about what admission does to manifests.

Why a library: ``placement-webhooks test`` only finds paths, prints and exits; loading
(:mod:`.suites`), admitting and judging (:mod:`.judging`) are here, on the same
:func:`~webhooks.dryrun.run.dry_run` as ``check``, so a suite cannot pass on an answer the
server would not give. This module runs them and collects the results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from webhooks.dryrun.judging import Verdict, index_of, verdict
from webhooks.dryrun.run import dry_run
from webhooks.dryrun.suites import Suite, discover, load_file
from webhooks.manifests.errors import ManifestError


@dataclass(slots=True)
class Results:
    """Every verdict in suite and expectation order, and every unusable input."""

    verdicts: list[Verdict] = field(default_factory=list)
    problems: list[ManifestError] = field(default_factory=list)
    suites: int = 0

    @property
    def failed(self) -> list[Verdict]:
        """The expectations that do not hold."""
        return [v for v in self.verdicts if not v.passed]

    def exit_code(self) -> int:
        """0 every expectation holds; 1 one does not; 2 some input was unusable.

        Why 2 wins: a suite that could not be read proves nothing, whatever the others say.
        """
        if self.problems:
            return 2
        return 1 if self.failed else 0


def run_suite(suite: Suite) -> tuple[list[Verdict], list[ManifestError]]:
    """Admit the suite's resources once and judge every expectation against the result.

    Why a suite whose resources could not all be admitted yields no verdicts: an answer
    about half the input is no answer.
    """
    report = dry_run(
        suite.resources.documents, suite.config, suite.cluster, files=suite.resources.files
    )
    if report.problems:
        return [], list(report.problems)
    index = index_of(report)
    verdicts: list[Verdict] = []
    for expectation in suite.expectations:
        try:
            verdicts.append(verdict(suite, expectation, index))
        except RecursionError:
            reason = "object: nested too deeply to compare"
            return [], [ManifestError(suite.path, expectation.line, reason)]
    return verdicts, []


def run_suites(paths: Sequence[str]) -> Results:
    """Find, load and run every suite under ``paths``; unusable ones are reported, not run.

    Why the others still run: one broken suite should not hide what the rest would say.
    """
    files, problems = discover(paths)
    results = Results(problems=problems)
    for path in files:
        suites, found = load_file(path)
        results.problems.extend(found)
        for suite in suites:
            verdicts, unusable = run_suite(suite)
            results.suites += 1
            results.verdicts.extend(verdicts)
            results.problems.extend(unusable)
    return results
