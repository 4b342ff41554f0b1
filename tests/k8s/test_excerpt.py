"""Bounded excerpts: what a message shows of a value, a key, or another layer's message."""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.k8s.excerpt import MESSAGE_CHARS, SHOWN, clip, show, show_key

VALUES: list[tuple[str, Any, str]] = [
    ("an integer too long for str is described", 10**5000, "(an integer of 16,610 bits)"),
    ("a wide integer prints its first digits", -(2**200), str(-(2**200))[:SHOWN] + "…"),
    ("a map keyed by numbers shows them as text", {1: 2}, '{"1":2}'),
    ("NaN as its name", float("nan"), "nan"),
    ("a string of a million characters is cut", "x" * 1_000_000, '"' + "x" * (SHOWN - 1) + "…"),
]


@pytest.mark.parametrize(("value", "text"), [v[1:] for v in VALUES], ids=[v[0] for v in VALUES])
def test_show_bounds_every_value(value: Any, text: str) -> None:
    assert show(value) == text


KEYS: list[tuple[str, Any, str]] = [
    ("a plugin name as written", "default-toleration-seconds", "default-toleration-seconds"),
    ("a domain-like key as written", "gpu.example.com/x", "gpu.example.com/x"),
    ("a key with a space is quoted", "bad key", '"bad key"'),
    ("a key with a newline is quoted on one line", "a\nb", '"a\\nb"'),
    ("an empty key is quoted", "", '""'),
    ("a long key is quoted and cut", "k" * 500, '"' + "k" * (SHOWN - 1) + "…"),
    ("a key that is no string is shown as JSON", 3, "3"),
]


@pytest.mark.parametrize(("key", "text"), [k[1:] for k in KEYS], ids=[k[0] for k in KEYS])
def test_show_key_keeps_plain_keys_and_quotes_the_rest(key: Any, text: str) -> None:
    assert show_key(key) == text


def test_clip_bounds_a_message_to_one_line() -> None:
    assert clip("short") == "short"
    clipped = clip("a\nb\r" + "x" * 10_000)
    assert clipped.startswith("a\\nb\\rxxx")
    assert "\n" not in clipped and "\r" not in clipped
    assert len(clipped) <= MESSAGE_CHARS + 8
