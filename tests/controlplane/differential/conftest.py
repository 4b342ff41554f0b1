"""Prints the differential counts at the end of a run that compared anything."""

from __future__ import annotations

from typing import Any

from tests.controlplane.differential.report import REPORTS


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Cases compared, differences found (explained or not), and the table by plugin."""
    for report in REPORTS:
        for line in report.lines():
            terminalreporter.write_line(line)
