"""BestEffort is "no positive cpu or memory request or limit anywhere" (ComputePodQOS)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.reviews import container
from webhooks.k8s.qos import computed_best_effort, is_best_effort, is_positive_quantity

QUANTITIES: list[tuple[str, Any, bool]] = [
    ("one cpu", "1", True),
    ("millicores", "100m", True),
    ("binary suffix", "1Gi", True),
    ("exponent", "1e3", True),
    ("a fraction below one nano still rounds up", "0.0000000001", True),
    ("zero", "0", False),
    ("zero with a suffix", "0Mi", False),
    ("zero with decimals", "0.000", False),
    ("a negative quantity", "-1", False),
    ("a plain integer", 2, True),
    ("integer zero", 0, False),
    ("a boolean is not a quantity", True, False),
    ("text that is not a quantity", "lots", False),
    ("a missing value", None, False),
]


@pytest.mark.parametrize(
    ("value", "want"), [c[1:] for c in QUANTITIES], ids=[c[0] for c in QUANTITIES]
)
def test_is_positive_quantity(value: Any, want: bool) -> None:
    assert is_positive_quantity(value) is want


SPECS: list[tuple[str, dict[str, Any], bool]] = [
    ("no resources at all", {"containers": [container()]}, True),
    ("a zero cpu request", {"containers": [container(requests={"cpu": "0"})]}, True),
    (
        "only an extended resource",
        {"containers": [container(requests={"nvidia.com/gpu": "1"})]},
        True,
    ),
    ("a cpu request", {"containers": [container(requests={"cpu": "100m"})]}, False),
    ("a memory limit", {"containers": [container(resources={"limits": {"memory": "1Gi"}})]}, False),
    (
        "an init container request counts",
        {"containers": [container()], "initContainers": [container(requests={"memory": "1Mi"})]},
        False,
    ),
    (
        "pod-level resources count",
        {"containers": [container()], "resources": {"requests": {"cpu": "1"}}},
        False,
    ),
    (
        "pod-level resources, when present, replace the containers'",
        {"containers": [container(requests={"cpu": "1"})], "resources": {}},
        True,
    ),
    (
        "a null pod-level resources field is absent",
        {"containers": [container(requests={"cpu": "1"})], "resources": None},
        False,
    ),
]


@pytest.mark.parametrize(("spec", "want"), [c[1:] for c in SPECS], ids=[c[0] for c in SPECS])
def test_computed_best_effort(spec: dict[str, Any], want: bool) -> None:
    assert computed_best_effort(spec) is want
    assert is_best_effort({"spec": spec}) is want


CPU = {"containers": [container(requests={"cpu": "1"})]}
NONE = {"containers": [container()]}

RECORDED: list[tuple[str, Any, dict[str, Any], bool]] = [
    ("a recorded BestEffort wins over requests", "BestEffort", CPU, True),
    ("a recorded Burstable wins over an empty spec", "Burstable", NONE, False),
    ("a recorded Guaranteed is not BestEffort", "Guaranteed", NONE, False),
    ("an empty recorded class is computed", "", CPU, False),
    ("a recorded class that is not a string is computed", 7, NONE, True),
]


@pytest.mark.parametrize(
    ("recorded", "spec", "want"), [c[1:] for c in RECORDED], ids=[c[0] for c in RECORDED]
)
def test_the_recorded_class_decides_first(recorded: Any, spec: dict[str, Any], want: bool) -> None:
    assert is_best_effort({"spec": spec, "status": {"qosClass": recorded}}) is want
