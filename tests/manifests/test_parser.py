"""The parser paths: libyaml's limit raised and never lowered, and when to read again."""

from __future__ import annotations

import importlib
import types
from typing import Any

import pytest
import yaml

from tests.manifests.conftest import LIBYAML_DEFAULT_LIMIT, limit_settable
from webhooks.manifests import parser
from webhooks.manifests.limits import MAX_DEPTH

settable = pytest.mark.skipif(not limit_settable(), reason="this libyaml has no limit to set")


def _events(loader: Any, text: str) -> int:
    events_of = loader(text)
    count = 0
    try:
        while events_of.check_event():
            events_of.get_event()
            count += 1
    finally:
        events_of.dispose()
    return count


@settable
def test_libyamls_limit_is_raised_above_the_readers_on_import() -> None:
    assert parser.raise_libyaml_limit() == parser.LIBYAML_NEST_LIMIT > MAX_DEPTH


@settable
def test_a_higher_limit_set_by_someone_else_is_never_lowered() -> None:
    binding: Any = importlib.import_module("yaml._yaml")
    binding._set_max_nest_level(3 * MAX_DEPTH)
    try:
        assert parser.raise_libyaml_limit() == 3 * MAX_DEPTH
    finally:
        binding._set_max_nest_level(parser.LIBYAML_NEST_LIMIT)


def test_a_binding_without_a_limit_setting_leaves_the_fallback_to_decide(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bare = types.ModuleType("yaml._yaml")
    monkeypatch.setattr(importlib, "import_module", lambda name: bare)
    assert parser.raise_libyaml_limit() is None


@settable
def test_libyaml_held_at_its_own_limit_falls_short_and_nothing_else_does() -> None:
    binding: Any = importlib.import_module("yaml._yaml")
    deep = "a: " + "[" * 1500 + "]" * 1500 + "\n"
    binding._set_max_nest_level(LIBYAML_DEFAULT_LIMIT)
    try:
        with pytest.raises(yaml.YAMLError) as stopped:
            _events(parser.FAST, deep)
    finally:
        binding._set_max_nest_level(parser.LIBYAML_NEST_LIMIT)
    assert parser.fell_short(stopped.value)
    with pytest.raises(yaml.YAMLError) as broken:
        _events(parser.FAST, "a: [\n")
    assert not parser.fell_short(broken.value)


TEXTS = [
    # PyYAML's own parser, the reference here, takes time quadratic in flow depth.
    pytest.param("a: " + "[" * 1200 + "]" * 1200 + "\n", id="deep flow sequences"),
    pytest.param("a: " + "{b: " * 800 + "1" + "}" * 800 + "\n", id="deep flow mappings"),
    pytest.param("- " * 2000 + "x\n", id="compact block sequences"),
    pytest.param(
        "a: [x, {b: [1, 2], c: &k d}, *k]\n? [1, 2]\n: v\n---\nq: !!str 1\n",
        id="anchors, complex keys, tags and two documents",
    ),
]


@pytest.mark.parametrize("text", TEXTS)
def test_the_linear_pure_python_parser_yields_pyyamls_own_events(text: str) -> None:
    def events(loader: Any) -> list[tuple[str, Any, int, int, int]]:
        events_of = loader(text)
        found = []
        while events_of.check_event():
            event = events_of.get_event()
            mark = event.start_mark
            found.append((type(event).__name__, getattr(event, "value", None), *mark_of(mark)))
        return found

    def mark_of(mark: Any) -> tuple[int, int, int]:
        return mark.line, mark.column, mark.index

    assert events(parser.PURE) == events(yaml.BaseLoader)


def test_a_simple_key_that_runs_past_its_line_is_refused_as_pyyaml_refuses_it() -> None:
    refusals = []
    for loader in (parser.PURE, yaml.BaseLoader):
        with pytest.raises(yaml.scanner.ScannerError) as refused:
            _events(loader, "a: 1\nb\n")
        refusals.append(str(refused.value))
    assert refusals[0] == refusals[1]
