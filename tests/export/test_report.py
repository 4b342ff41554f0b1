"""The export report never contradicts itself: no setting better than its plugin.

Checked on every config the suite uses (and the benchmarks' full config), whole and one
plugin at a time, with and without ``--hybrid``; then line by line on the cases that once
contradicted themselves (a plugin "not exported" above settings called "exact").
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.charts.render import values_file
from tests.export.report_consistency import contradictions, read
from webhooks.configfile import read_config
from webhooks.core.config import Config, load_config
from webhooks.export import EXACT, NOT_EXPORTED, Export, Line, export
from webhooks.plugins import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
CONFIG_FILES = sorted(
    [
        *(ROOT / "tests" / "controlplane" / "configs").glob("*.yaml"),
        ROOT / "bench" / "configs" / "full.yaml",
        ROOT / "examples" / "policy-tests" / "placement.yaml",
    ]
)


def _chart_values() -> Config:
    values = values_file()
    document: dict[str, Any] = {"plugins": values["plugins"]}
    if values.get("exceptions"):
        document["exceptions"] = values["exceptions"]
    return load_config(document, REGISTRY)


def _configs() -> list[Any]:
    every = {"plugins": {name: {"enabled": True} for name in REGISTRY.names}}
    found = [
        pytest.param(load_config(None, REGISTRY), id="the built-in defaults"),
        pytest.param(load_config(every, REGISTRY), id="every plugin enabled"),
        pytest.param(_chart_values(), id="the chart's default values"),
    ]
    for path in CONFIG_FILES:
        found.append(pytest.param(read_config(path), id=str(path.relative_to(ROOT))))
    return found


def test_the_suite_s_config_files_are_all_there() -> None:
    """The table below is only as good as its list: the full config and the native ones."""
    names = {p.name for p in CONFIG_FILES}
    assert {"full.yaml", "native-all.yaml", "native-rollout.yaml", "placement.yaml"} <= names


@pytest.mark.parametrize("hybrid", [False, True], ids=["the report", "the hybrid report"])
@pytest.mark.parametrize("config", _configs())
def test_no_setting_is_better_than_its_plugin_in_any_config_the_suite_uses(
    config: Config, hybrid: bool
) -> None:
    whole = export(config, REGISTRY, hybrid=hybrid)
    assert contradictions(whole, config, hybrid=hybrid) == []
    for plugin in REGISTRY.names:
        alone = export(config, REGISTRY, (plugin,), hybrid=hybrid)
        assert contradictions(alone, config, hybrid=hybrid) == [], plugin


def test_the_check_finds_the_contradiction_it_is_for() -> None:
    """The checker itself: the report this package once printed must fail it."""
    config = load_config({"plugins": {"pod-toleration-restriction": {"enabled": True}}}, REGISTRY)
    old = Export(
        (),
        (
            Line("plugins.pod-toleration-restriction", NOT_EXPORTED, "JSON"),
            Line("plugins.pod-toleration-restriction.mutation", EXACT),
        ),
    )
    found = contradictions(old, config, hybrid=False)
    assert "plugins.pod-toleration-restriction.mutation: exact under a plugin not exported" in found
    assert "plugins.pod-toleration-restriction.defaultTolerations: no line" in found


def _verdicts(document: Any, *only: str, hybrid: bool = False) -> dict[str, str]:
    result = export(load_config(document, REGISTRY), REGISTRY, only, hybrid=hybrid)
    return {read(text).subject: text.split(": ", 1)[1] for text in result.report()}


PTR = "plugins.pod-toleration-restriction"
#: ``enforce`` guarding one taint key (its own resource earns it).
GPU_GUARDED = {"guarded": [{"taintKey": "example.com/gpu"}]}
ERT_NAME = "extended-resource-toleration"
ERT = "plugins.extended-resource-toleration"
DTS = "plugins.default-toleration-seconds"


@pytest.mark.parametrize(
    ("document", "subject", "starts"),
    [
        pytest.param(
            {"plugins": {"pod-toleration-restriction": {"enabled": True}}},
            f"{PTR}.mutation",
            "not exported: its plugin is not exported: see " + PTR,
            id="the mutation of a plugin that is not exported is not exported",
        ),
        pytest.param(
            {"plugins": {"pod-toleration-restriction": {"enabled": True}}},
            f"{PTR}.action",
            "not exported: its plugin is not exported",
            id="the action of a plugin that is not exported is not exported",
        ),
        pytest.param(
            {"plugins": {"pod-toleration-restriction": {"enabled": True}}},
            f"{PTR}.tolerationsWhitelist",
            "not exported: its plugin is not exported",
            id="a plugin that is not exported still gets a line for each of its settings",
        ),
        pytest.param(
            None,
            "plugins.runtime-class.mutation",
            "exact except: exported exactly; its plugin's exceptions apply: "
            "see plugins.runtime-class",
            id="a setting of a plugin exported with exceptions is at most exact except",
        ),
        pytest.param(
            None,
            f"{ERT}.enforce",
            "exact",
            id="a plugin exported exactly keeps its settings exact",
        ),
        pytest.param(
            {"plugins": {"extended-resource-toleration": {"deviceClaims": True}}},
            ERT,
            "not exported: see deviceClaims, deviceClassTaints",
            id="deviceClaims alone leaves nothing of extended-resource-toleration exported",
        ),
        pytest.param(
            {"plugins": {"extended-resource-toleration": {"deviceClaims": True}}},
            f"{ERT}.enforce",
            "not exported: its plugin is not exported",
            id="enforce off under a plugin that is not exported is not exported either",
        ),
        pytest.param(
            {"plugins": {ERT_NAME: {"deviceClaims": True, "enforce": GPU_GUARDED}}},
            ERT,
            "exact except: see enforce, deviceClaims, deviceClassTaints",
            id="a plugin whose validating half is exported is not called not exported",
        ),
        pytest.param(
            {"plugins": {ERT_NAME: {"deviceClaims": True, "enforce": GPU_GUARDED}}},
            f"{ERT}.mutation",
            "not exported: the mutating half is not exported: see " + ERT,
            id="the mutation setting is no better than the mutating half",
        ),
        pytest.param(
            {"plugins": {ERT_NAME: {"deviceClaims": True, "enforce": GPU_GUARDED}}},
            f"{ERT}.deviceClaims",
            "not exported: a policy cannot look up",
            id="a setting may be worse than its plugin",
        ),
        pytest.param(
            {"plugins": {"default-toleration-seconds": {"mutation": "monitor"}}},
            f"{DTS}.namespaceOverrides",
            "not exported: its plugin is not exported",
            id="monitor on a plugin with only a mutating half leaves nothing exported",
        ),
        pytest.param(
            {"plugins": {"dedicated-nodes": {"enabled": True, "mutation": "monitor"}}},
            "plugins.dedicated-nodes",
            "exact except: the webhook warns about what it adds",
            id="monitor on one half of two leaves the plugin exported with exceptions",
        ),
        pytest.param(
            {
                "plugins": {"pod-toleration-restriction": {"enabled": True}},
                "exceptions": [
                    {"name": "ops", "plugins": ["pod-toleration-restriction"], "namespaces": ["a"]}
                ],
            },
            "exceptions[0] (ops)",
            "not exported: no plugin it covers is exported",
            id="an exception of a plugin that is not exported is not exported",
        ),
        pytest.param(
            {
                "plugins": {"pod-toleration-restriction": {"enabled": True}},
                "exceptions": [{"name": "ops", "plugins": ["*"], "namespaces": ["a"]}],
            },
            "exceptions[0] (ops)",
            "exact",
            id="an exception of every plugin is exact while one of them is exported",
        ),
    ],
)
def test_each_setting_s_line_says_what_its_plugin_allows(
    document: Any, subject: str, starts: str
) -> None:
    assert _verdicts(document)[subject].startswith(starts)


def test_a_plugin_with_a_reason_of_its_own_still_names_its_other_settings_that_differ() -> None:
    document = {"plugins": {"dedicated-nodes": {"enabled": True, "mutation": "monitor"}}}
    assert _verdicts(document)["plugins.dedicated-nodes"].endswith("; see mutation")


@pytest.mark.parametrize(
    ("document", "subject", "hybrid"),
    [
        pytest.param(
            {"plugins": {"pod-toleration-restriction": {"enabled": True}}},
            PTR,
            "the webhook keeps the whole plugin",
            id="a plugin that is not exported stays whole on the webhook",
        ),
        pytest.param(
            {"plugins": {"pod-toleration-restriction": {"enabled": True}}},
            f"{PTR}.mutation",
            "stays on the webhook",
            id="so do its settings",
        ),
        pytest.param(
            {"plugins": {"pod-toleration-restriction": {"enabled": True}}},
            ERT,
            "the webhook keeps the whole plugin (its mutation comes after one the webhook keeps",
            id="an exact mutation after one kept on the webhook stays there, and the report"
            " says why",
        ),
        pytest.param(
            None,
            "plugins.runtime-class",
            "the webhook keeps its validating half",
            id="a plugin split between the API server and the webhook says which half stays",
        ),
        pytest.param(
            None,
            "plugins.default-toleration-seconds",
            "",
            id="a plugin that runs natively whole has no hybrid note",
        ),
    ],
)
def test_the_hybrid_report_says_what_stays_on_the_webhook(
    document: Any, subject: str, hybrid: str
) -> None:
    text = _verdicts(document, hybrid=True)[subject]
    assert text.partition("; hybrid: ")[2].startswith(hybrid) and (hybrid or "hybrid" not in text)
    assert "; hybrid: " not in _verdicts(document)[subject]


def test_every_report_line_of_a_plugin_follows_the_plugin_s_own() -> None:
    subjects = list(_verdicts(None))
    plugins = [s for s in subjects if s.count(".") == 1]
    order = [s.split(".")[1] for s in subjects if s.startswith("plugins.")]
    assert order == sorted(order, key=[p.split(".")[1] for p in plugins].index)


def test_the_hybrid_report_example_in_the_docs_is_what_export_prints() -> None:
    """docs/native.md shows three lines of ``export --hybrid`` with pod-toleration-restriction
    on; ``...`` stands for text left out."""
    text = (ROOT / "docs" / "native.md").read_text(encoding="utf-8")
    block = text.split("`export --hybrid` prints:\n\n  ```\n", 1)[1].split("  ```", 1)[0]
    shown = [line.strip() for line in block.splitlines() if line.strip()]
    config = load_config({"plugins": {"pod-toleration-restriction": {"enabled": True}}}, REGISTRY)
    printed = export(config, REGISTRY, hybrid=True).report()
    assert len(shown) == 3
    for line in shown:
        pattern = ".*".join(re.escape(part) for part in line.split("..."))
        assert any(re.fullmatch(pattern, p) for p in printed), line
