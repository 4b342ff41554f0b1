"""The reader's parser paths, forced one at a time, so every rule is tested on each.

Which parser reads a text depends on the platform (:mod:`webhooks.manifests.parser`), so
the tests that pin the reader's own rules (depth, wording) run on all three paths:
libyaml with its nesting limit raised, libyaml held at its own 1,000-level default (so
deep texts are read again by the pure-Python parser), and the pure-Python parser alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest

from webhooks.manifests import parser

#: libyaml's default nesting limit in the builds that have one (0.2.6 on).
LIBYAML_DEFAULT_LIMIT = 1000


def _binding() -> Any:
    try:
        return importlib.import_module("yaml._yaml")
    except ImportError:
        return None


def limit_settable() -> bool:
    """Whether this platform's libyaml binding has a nesting limit that can be set."""
    binding = _binding()
    return hasattr(binding, "_set_max_nest_level") and hasattr(binding, "_get_max_nest_level")


PATHS = [
    pytest.param("raised", id="libyaml with its nesting limit raised"),
    pytest.param("held", id="libyaml held at its own limit, then the pure-Python parser"),
    pytest.param("pure", id="the pure-Python parser alone"),
]


@pytest.fixture(params=PATHS)
def parser_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test with the reader on one parser path; restores libyaml's limit after."""
    path: str = request.param
    if path == "pure":
        monkeypatch.setattr(parser, "FAST", None)
        yield path
        return
    if parser.FAST is None:
        pytest.skip("PyYAML here has no libyaml binding")
    if path == "raised":
        yield path
        return
    if not limit_settable():
        pytest.skip("this libyaml has no nesting limit to hold")
    binding = _binding()
    before = binding._get_max_nest_level()
    binding._set_max_nest_level(LIBYAML_DEFAULT_LIMIT)
    try:
        yield path
    finally:
        binding._set_max_nest_level(before)
