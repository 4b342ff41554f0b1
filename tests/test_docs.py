"""The configuration reference names every plugin and setting, with the code's defaults."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from webhooks.core.config import ClusterSettings, camel
from webhooks.plugins import REGISTRY

DOC = (Path(__file__).resolve().parent.parent / "docs" / "configuration.md").read_text()


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    return field.default_factory()  # type: ignore[misc]


def _yaml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '""' if value == "" else value
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{}" if not value else str(value)
    return str(value)


def _section(title: str) -> str:
    start = DOC.index(title)
    end = DOC.find("\n## ", start + 1)
    nxt = DOC.find("\n### ", start + 1)
    ends = [e for e in (end, nxt) if e != -1]
    return DOC[start : min(ends) if ends else len(DOC)]


SETTINGS = [
    (plugin.name, camel(f.name), _default(f))
    for plugin in REGISTRY
    for f in dataclasses.fields(plugin.settings)
]


def test_plugins_appear_in_chain_order() -> None:
    positions = [DOC.index(f"### `{name}`") for name in REGISTRY.names]
    assert positions == sorted(positions)


@pytest.mark.parametrize(
    ("plugin", "key", "default"), SETTINGS, ids=[f"{p} {k}" for p, k, _ in SETTINGS]
)
def test_every_setting_is_documented_with_its_default(plugin: str, key: str, default: Any) -> None:
    assert f"| `{key}` | `{_yaml(default)}` |" in _section(f"### `{plugin}`")


def test_disabled_by_default_is_said() -> None:
    for plugin in REGISTRY:
        expected = "`true`" if plugin.enabled_by_default else "`false`"
        section = _section(f"### `{plugin.name}`")
        assert f"| `enabled` | {expected} |" in section or f"(`{expected[1:-1]}`)" in section


@pytest.mark.parametrize("field", dataclasses.fields(ClusterSettings), ids=lambda f: f.name)
def test_every_cluster_setting_is_documented(field: dataclasses.Field[Any]) -> None:
    assert f"| `{camel(field.name)}` | `{_yaml(_default(field))}` |" in _section("## `cluster`")
