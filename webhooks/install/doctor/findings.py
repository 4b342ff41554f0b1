"""What a check says: one line each, ok / warn / fail, the reason and the fix.

Why one type for every check: the CLI prints and orders them the same way, the exit code is
the worst of them, and a test can compare what a broken installation produces with what it
should, check by check, without parsing text.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final


class Status(enum.IntEnum):
    """How a check came out; ordered, so the worst of several is their ``max``."""

    OK = 0
    WARN = 1
    FAIL = 2


#: The process's exit code for the worst status. Why 3 for warnings: 1 is the CLI's
#: "findings" everywhere and a failing check is one; 2 stays "unusable input"; a pipeline
#: that tolerates warnings accepts 3 without also accepting failures.
EXIT_CODES: Final = {Status.OK: 0, Status.WARN: 3, Status.FAIL: 1}


@dataclass(frozen=True, slots=True)
class Finding:
    """One check's answer about one thing.

    ``check`` is the check's stable id (kebab-case, what a user greps for), ``reason`` one
    line saying what was seen, ``fix`` one line saying what to do (``""`` when ok).
    """

    check: str
    status: Status
    reason: str
    fix: str = ""

    def line(self) -> str:
        """The printed line: ``ok   check: reason`` and, when there is one, ``; fix: ...``."""
        text = f"{self.status.name.lower():<4} {self.check}: {self.reason}"
        return f"{text}; fix: {self.fix}" if self.fix else text


def worst(findings: Iterable[Finding]) -> Status:
    """The worst status among ``findings`` (``OK`` for none)."""
    return max((finding.status for finding in findings), default=Status.OK)


def exit_code(findings: Iterable[Finding]) -> int:
    """The exit code for ``findings``: :data:`EXIT_CODES` of the worst."""
    return EXIT_CODES[worst(findings)]
