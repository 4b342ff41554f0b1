"""The collector's schedule: only full collections are made rarer, and every process gets it."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.command import ROOT
from webhooks import collector

#: CPython 3.11's own schedule, set before the test: a command run earlier in the same
#: process (the CLI's tests call ``main``) has already tuned it.
CPYTHON_THRESHOLD = (700, 10, 10)


@pytest.fixture
def kept_threshold() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(*CPYTHON_THRESHOLD)
    yield CPYTHON_THRESHOLD
    gc.set_threshold(*before)


def test_tune_keeps_the_young_generations_and_makes_full_collections_rarer(
    kept_threshold: tuple[int, int, int],
) -> None:
    collector.tune()
    assert gc.get_threshold() == (*kept_threshold[:2], collector.FULL_COLLECTION_EVERY)
    assert kept_threshold[2] < collector.FULL_COLLECTION_EVERY


def test_a_command_runs_with_the_tuned_schedule() -> None:
    # A process of its own: the entry point itself must set the schedule before any
    # command's work (here check's, which stops at --help after the group has run).
    script = (
        "import gc\n"
        "from webhooks.cli import main\n"
        "try:\n"
        "    main(['check', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(gc.get_threshold()[2])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.split()[-1] == str(collector.FULL_COLLECTION_EVERY)
