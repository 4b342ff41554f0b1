"""The release matrix's short suite names tests that exist, and releases come from the table."""

from __future__ import annotations

from pathlib import Path

import pytest

from controlplane.matrix import SHORT_SUITE

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("path", SHORT_SUITE, ids=lambda p: f"{p} is in the repository")
def test_every_path_of_the_short_suite_exists(path: str) -> None:
    """A renamed test file must not drop out of the matrix without a word."""
    assert (ROOT / path).exists()


def test_the_short_suite_is_real_control_plane_tests() -> None:
    assert all(path.startswith("tests/controlplane/") for path in SHORT_SUITE)
