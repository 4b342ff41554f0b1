"""docs/operations.md, "Input budgets": every test a row names exists, and every row names one.

Why: the table is the promise that each limit is held by a test; a renamed or deleted test
would otherwise leave a row pointing at nothing while still reading as a guarantee.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
#: A test named in a row: ``tests/<path>.py`` or ``tests/<path>.py::test_name``.
NAMED = re.compile(r"`(tests/[\w/]+\.py)(?:::(\w+))?`")


def _section() -> str:
    start = DOC.index("\n## Input budgets\n")
    return DOC[start : DOC.index("\n## ", start + 1)]


def _rows() -> list[str]:
    return [
        line
        for line in _section().splitlines()
        if line.startswith("| ") and not line.startswith("| limit |")
    ]


def _named() -> list[tuple[str, str | None]]:
    return sorted({m.groups() for row in _rows() for m in NAMED.finditer(row.split(" | ")[-1])})


def test_the_section_has_a_table_per_surface() -> None:
    headings = re.findall(r"^### (.+)$", _section(), re.M)
    assert len(headings) >= 6
    assert len(_rows()) >= 40


@pytest.mark.parametrize("row", _rows(), ids=lambda row: row[2:60])
def test_every_row_names_the_test_that_holds_it(row: str) -> None:
    assert NAMED.search(row.rsplit(" | ", maxsplit=1)[-1]), "the last column names no test"


@pytest.mark.parametrize(
    ("path", "name"), _named(), ids=[f"{p}::{n}" if n else p for p, n in _named()]
)
def test_every_named_test_exists(path: str, name: str | None) -> None:
    source = ROOT / path
    assert source.is_file(), f"{path} does not exist"
    if name is not None:
        assert re.search(rf"^(async )?def {name}\(", source.read_text(encoding="utf-8"), re.M)
