"""Which settings a release does not serve: the plugins' declared needs against the table."""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.core.availability import declared, first_on, unavailable
from webhooks.core.config import load_config
from webhooks.k8s.releases import (
    DRA_EXTENDED_RESOURCE,
    RELEASES,
    TOLERATION_COMPARISONS,
    release,
)
from webhooks.plugins import REGISTRY

DEVICE_CLAIMS = "plugins.extended-resource-toleration.deviceClaims"
COMPARISONS = "plugins.taint-toleration-rules.comparisonOperators"
ON = {
    "extended-resource-toleration": {"deviceClaims": True},
    "taint-toleration-rules": {"comparisonOperators": True},
}

CASES: list[Any] = [
    pytest.param({}, "1.34", [], id="the defaults use nothing any release lacks"),
    pytest.param(
        ON,
        "1.34",
        [(DEVICE_CLAIMS, DRA_EXTENDED_RESOURCE), (COMPARISONS, TOLERATION_COMPARISONS)],
        id="on 1.34 both the bridge and the comparison operators are missing",
    ),
    pytest.param(
        ON,
        "1.35",
        [(DEVICE_CLAIMS, DRA_EXTENDED_RESOURCE), (COMPARISONS, TOLERATION_COMPARISONS)],
        id="on 1.35 both gates exist but are off by default",
    ),
    pytest.param(
        ON,
        "1.36",
        [(COMPARISONS, TOLERATION_COMPARISONS)],
        id="from 1.36 the bridge is on by default and only the alpha operators are missing",
    ),
    pytest.param(
        ON, "1.37", [(COMPARISONS, TOLERATION_COMPARISONS)], id="on 1.37 the same as on 1.36"
    ),
    pytest.param(
        {"extended-resource-toleration": {"enabled": False, "deviceClaims": True}},
        "1.34",
        [],
        id="a setting of a disabled plugin is never said",
    ),
]


@pytest.mark.parametrize(("plugins", "name", "expected"), CASES)
def test_the_settings_a_release_does_not_serve(
    plugins: dict[str, Any], name: str, expected: list[tuple[str, str]]
) -> None:
    config = load_config({"plugins": plugins}, REGISTRY)
    found = unavailable(config, REGISTRY, release(name))
    assert [(u.setting, u.missing) for u in found] == expected


LINES: list[Any] = [
    pytest.param(
        "1.34",
        DEVICE_CLAIMS,
        "plugins.extended-resource-toleration.deviceClaims: needs DeviceClass "
        "spec.extendedResourceName (gate DRAExtendedResource, alpha, off by default on "
        "Kubernetes 1.34); a claim of a DeviceClass not named in deviceClassTaints gives its "
        "pod no toleration",
        id="a gate off by default is named with its stage and the release",
    ),
    pytest.param(
        "1.34",
        COMPARISONS,
        "plugins.taint-toleration-rules.comparisonOperators: needs tolerations with operator "
        "Lt or Gt (gate TaintTolerationComparisonOperators, absent from Kubernetes 1.34); the "
        "API server refuses them itself, whatever this setting accepts",
        id="a gate the release does not have is said to be absent",
    ),
]


@pytest.mark.parametrize(("name", "setting", "line"), LINES)
def test_each_setting_is_one_line_naming_the_key_the_gate_and_the_release(
    name: str, setting: str, line: str
) -> None:
    config = load_config({"plugins": ON}, REGISTRY)
    found = {u.setting: u.line for u in unavailable(config, REGISTRY, release(name))}
    assert found[setting] == line
    assert "\n" not in line


def test_every_declared_gate_is_a_column_of_the_release_table() -> None:
    gates = {gate for r in RELEASES for gate in r.gates}
    for setting, need in declared(REGISTRY):
        assert need.gate in gates, setting


@pytest.mark.parametrize(
    ("gate", "first"),
    [
        pytest.param(DRA_EXTENDED_RESOURCE, "1.36", id="the bridge is on by default from 1.36"),
        pytest.param(TOLERATION_COMPARISONS, None, id="the comparison operators nowhere yet"),
    ],
)
def test_the_first_release_with_a_gate_on(gate: str, first: str | None) -> None:
    found = first_on(gate)
    assert (found.name if found else None) == first
