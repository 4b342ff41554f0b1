"""What the chart says of settings some Kubernetes releases do not serve: the release table's
words, in the values schema and in NOTES.txt when the setting is on."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.charts.render import CHART, ROOT, notes
from webhooks.core.availability import declared, describe, first_on
from webhooks.plugins import REGISTRY

DECLARED = list(declared(REGISTRY))
IDS = [f"{setting} is described from the table" for setting, _ in DECLARED]


@pytest.mark.parametrize(("setting", "need"), DECLARED, ids=IDS)
def test_the_schema_describes_the_setting_from_the_table(setting: str, need: Any) -> None:
    schema = json.loads((CHART / "values.schema.json").read_text("utf-8"))
    _, plugin, key = setting.split(".")
    node = schema["properties"]["plugins"]["properties"][plugin]["allOf"][1]["properties"][key]
    assert node["description"] == describe(need)


@pytest.mark.parametrize(("setting", "need"), DECLARED, ids=IDS)
def test_notes_say_it_only_when_the_setting_is_on(setting: str, need: Any) -> None:
    _, plugin, key = setting.split(".")
    line = f"{setting}: {describe(need)}"
    assert line in notes({"plugins": {plugin: {"enabled": True, key: True}}}).splitlines()
    assert setting not in notes()


@pytest.mark.parametrize(("setting", "need"), DECLARED, ids=IDS)
def test_the_operations_guide_names_the_gate_and_the_first_release(setting: str, need: Any) -> None:
    text = (ROOT / "docs" / "operations.md").read_text("utf-8")
    section = text.split("\n## On older releases\n", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in section.splitlines() if line.startswith(f"| `{setting}` |"))
    first = first_on(need.gate)
    assert f"`{need.gate}`" in row
    assert (first.name if first else "no supported release") in row.rsplit("|", 2)[1]
