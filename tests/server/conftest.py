"""Fixtures of the server tests: a certificate directory and the states a test builds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from webhooks.certs.pki import generate
from webhooks.server.app import ServerState


@pytest.fixture
def cert_dir(tmp_path: Path) -> Path:
    generate(tmp_path / "certs", hosts=["127.0.0.1"])
    return tmp_path / "certs"


@pytest.fixture
def states() -> Iterator[list[ServerState]]:
    """States built by a test; whatever they started stops afterwards."""
    built: list[ServerState] = []
    try:
        yield built
    finally:
        for state in built:
            state.close()
