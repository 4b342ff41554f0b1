"""The Kyverno policies' translation of a config: which configs it takes, and what it builds.

Whether Kyverno then stores the same pods as ``serve`` is proved on a real API server
(``tests/controlplane/test_kyverno_peer.py``); here only the translation's own rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.scale.kyverno_policies import FLEET, Untranslated, for_config

CONFIGS = Path(__file__).resolve().parents[1] / "bench" / "configs"


def _names(policies: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(p["kind"], p["metadata"]["name"]) for p in policies]


def _variables(policy: dict[str, Any]) -> list[str]:
    return [v["name"] for v in policy["spec"]["variables"]]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param(
            None,
            [("MutatingPolicy", "placement-mutations")],
            id="the defaults refuse nothing, so they need no ValidatingPolicy",
        ),
        pytest.param(
            FLEET,
            [
                ("MutatingPolicy", "placement-mutations"),
                ("ValidatingPolicy", "placement-validations-enforce"),
            ],
            id="the fleet config's two enforced checks share one ValidatingPolicy",
        ),
    ],
)
def test_each_config_gets_its_policies(config: Path | None, expected: list[Any]) -> None:
    assert _names(for_config(config)) == expected


def test_the_mutation_fails_open_and_the_validation_closed_as_serve_is_registered() -> None:
    mutating, validating = for_config(FLEET)
    assert mutating["spec"]["failurePolicy"] == "Ignore"
    assert validating["spec"]["failurePolicy"] == "Fail"
    assert validating["spec"]["validationActions"] == ["Deny"]


def test_namespace_seconds_and_groups_are_read_only_when_the_config_asks() -> None:
    default, fleet = for_config(None)[0], for_config(FLEET)[0]
    assert "group" not in _variables(default)
    assert "group" in _variables(fleet)
    seconds = {v["name"]: v["expression"] for v in default["spec"]["variables"]}
    assert seconds["notReadySeconds"] == "300"
    fleet_seconds = {v["name"]: v["expression"] for v in fleet["spec"]["variables"]}
    assert "placement-webhooks.io/not-ready-seconds" in fleet_seconds["notReadySeconds"]


def test_a_config_with_what_the_policies_cannot_do_is_refused_by_its_keys() -> None:
    with pytest.raises(Untranslated) as raised:
        for_config(CONFIGS / "full.yaml")
    message = str(raised.value)
    for key in (
        "plugins.pod-node-selector",
        "plugins.pod-toleration-restriction",
        "plugins.anti-affinity-topology",
        "plugins.dedicated-nodes.actionOverrides",
        "exceptions (dcgm-exporter)",
    ):
        assert key in message
