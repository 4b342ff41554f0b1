"""Waiting for something a background thread or another process does."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest


def eventually(predicate: Callable[[], Any], what: str, limit: float = 15.0) -> Any:
    """Poll ``predicate`` until it is truthy; fail naming ``what`` after ``limit`` seconds.

    Why a generous limit and no speed check: tests share a small machine, and what they
    assert is that something happens, not how fast.
    """
    deadline = time.monotonic() + limit
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for: {what}")
        time.sleep(0.01)
