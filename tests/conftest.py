"""Shared fixtures."""

from __future__ import annotations

import pytest

from webhooks.core.config import Config, load_config
from webhooks.plugins import REGISTRY


@pytest.fixture
def default_config() -> Config:
    """The built-in defaults, as with no config file."""
    return load_config(None, REGISTRY)
