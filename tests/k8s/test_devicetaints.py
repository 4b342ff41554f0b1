"""Device taints and claim tolerations (KEP-5055): allocation and eviction, as upstream."""

from __future__ import annotations

from typing import Any

import pytest

from tests import dra
from webhooks.k8s.devicetaints import (
    DeviceTaint,
    blocking_taint,
    eviction,
    parse_taint,
    rule_taint,
    selects,
    tolerates,
)

BROKEN = DeviceTaint("gpu.example.com/unhealthy", "ecc", "NoExecute")
DRAINING = DeviceTaint("gpu.example.com/draining", "", "NoSchedule")
NOTE = DeviceTaint("gpu.example.com/note", "", "None")
ODD = DeviceTaint("gpu.example.com/odd", "", "Sometime")


def t(**fields: Any) -> dict[str, Any]:
    return fields


TOLERATES: list[tuple[str, dict[str, Any], DeviceTaint, bool]] = [
    ("Exists on the key tolerates any value", t(key=BROKEN.key, operator="Exists"), BROKEN, True),
    ("Equal needs the value", t(key=BROKEN.key, operator="Equal", value="ecc"), BROKEN, True),
    ("an empty operator is Equal", t(key=BROKEN.key, value="other"), BROKEN, False),
    ("an empty key with Exists tolerates every taint", t(operator="Exists"), BROKEN, True),
    ("another effect does not match", t(operator="Exists", effect="NoSchedule"), BROKEN, False),
    ("Gt is not a device toleration operator", t(key=BROKEN.key, operator="Gt"), BROKEN, False),
]


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"), [c[1:] for c in TOLERATES], ids=[c[0] for c in TOLERATES]
)
def test_claim_tolerations_match_as_upstream(
    toleration: dict[str, Any], taint: DeviceTaint, expected: bool
) -> None:
    assert tolerates(toleration, taint) is expected


BLOCKING: list[tuple[str, list[DeviceTaint], list[dict[str, Any]], DeviceTaint | None]] = [
    ("an untolerated NoSchedule taint blocks", [DRAINING], [], DRAINING),
    ("an untolerated NoExecute taint blocks", [NOTE, BROKEN], [], BROKEN),
    ("a None taint never blocks", [NOTE], [], None),
    ("an unknown effect counts as None", [ODD], [], None),
    (
        "an empty-effect toleration lets the device be allocated",
        [BROKEN],
        [t(key=BROKEN.key, operator="Exists")],
        None,
    ),
]


@pytest.mark.parametrize(
    ("taints", "tolerations", "expected"), [c[1:] for c in BLOCKING], ids=[c[0] for c in BLOCKING]
)
def test_which_taint_keeps_a_device_from_a_request(
    taints: list[DeviceTaint], tolerations: list[dict[str, Any]], expected: DeviceTaint | None
) -> None:
    assert blocking_taint(taints, tolerations) == expected


EVICTIONS: list[tuple[str, list[dict[str, Any]], str, int | None]] = [
    ("no toleration evicts at once", [], "at-once", 0),
    (
        "a NoExecute toleration without seconds never evicts",
        [t(key=BROKEN.key, operator="Exists", effect="NoExecute")],
        "never",
        None,
    ),
    (
        "the smallest seconds of the matching tolerations count",
        [
            t(key=BROKEN.key, operator="Exists", effect="NoExecute", tolerationSeconds=600),
            t(operator="Exists", effect="NoExecute", tolerationSeconds=60),
        ],
        "after",
        60,
    ),
    (
        "negative seconds count as zero",
        [t(key=BROKEN.key, operator="Exists", effect="NoExecute", tolerationSeconds=-5)],
        "at-once",
        0,
    ),
    (
        "an empty-effect toleration does not delay the eviction, as the controller reads it",
        [t(key=BROKEN.key, operator="Exists", tolerationSeconds=600)],
        "at-once",
        0,
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "outcome", "seconds"), [c[1:] for c in EVICTIONS], ids=[c[0] for c in EVICTIONS]
)
def test_when_a_noexecute_device_taint_evicts(
    tolerations: list[dict[str, Any]], outcome: str, seconds: int | None
) -> None:
    found = eviction(BROKEN, tolerations)
    assert (found.outcome, found.seconds) == (outcome, seconds)


RULES: list[tuple[str, dict[str, Any], bool]] = [
    ("an empty selector selects every device", dra.device_taint_rule("r", "k", "NoSchedule"), True),
    (
        "driver, pool and device must all match",
        dra.device_taint_rule(
            "r", "k", "NoSchedule", driver="gpu.example.com", pool="node-1", device="gpu-0"
        ),
        True,
    ),
    (
        "another pool is not selected",
        dra.device_taint_rule("r", "k", "NoSchedule", pool="node-2"),
        False,
    ),
    (
        "a rule without a selector selects nothing",
        {"spec": {"taint": {"key": "k", "effect": "NoSchedule"}}},
        False,
    ),
]


@pytest.mark.parametrize(("rule", "expected"), [c[1:] for c in RULES], ids=[c[0] for c in RULES])
def test_which_devices_a_device_taint_rule_selects(rule: dict[str, Any], expected: bool) -> None:
    assert selects(rule, "gpu.example.com", "node-1", "gpu-0") is expected


def test_a_rules_taint_names_the_rule() -> None:
    taint = rule_taint(dra.device_taint_rule("maintenance", "m", "NoExecute", value="now"))
    assert taint == DeviceTaint("m", "now", "NoExecute", "DeviceTaintRule maintenance")
    assert str(taint) == "m=now:NoExecute"
    assert parse_taint({"value": "x"}) is None
