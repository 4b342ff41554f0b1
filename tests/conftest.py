"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakeapi import FakeApiServer, running
from webhooks.core.config import Config, load_config
from webhooks.plugins import REGISTRY


@pytest.fixture
def default_config() -> Config:
    """The built-in defaults, as with no config file."""
    return load_config(None, REGISTRY)


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    """A fake Kubernetes API server on 127.0.0.1 (:mod:`tests.fakeapi`), stopped afterwards."""
    with running() as server:
        yield server
