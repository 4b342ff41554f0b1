"""CEL device selectors as the allocator evaluates them, with the Kubernetes quantity and
semver libraries, and bounded."""

from __future__ import annotations

import pytest

from webhooks.k8s.cel import BUDGET, MAX_LENGTH, CelError, Device, selector

GPU = Device(
    "gpu.example.com",
    {
        "model": {"string": "A100"},
        "gpu.example.com/index": {"int": 3},
        "driverVersion": {"version": "1.12.0"},
        "other.example.com/fast": {"bool": True},
    },
    {"memory": {"value": "80Gi"}},
)

MATCHES: list[tuple[str, str, bool]] = [
    ("the driver is a string", 'device.driver == "gpu.example.com"', True),
    (
        "an attribute without a domain is filed under the driver",
        'device.attributes["gpu.example.com"].model == "A100"',
        True,
    ),
    ("ints compare", 'device.attributes["gpu.example.com"].index > 2', True),
    ("bools are bools", 'device.attributes["other.example.com"].fast', True),
    (
        "capacity is a quantity compared by value",
        'device.capacity["gpu.example.com"].memory == quantity("81920Mi")',
        True,
    ),
    (
        "compareTo orders quantities",
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) > 0',
        True,
    ),
    (
        "isGreaterThan on quantities",
        'device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("100Gi"))',
        False,
    ),
    (
        "versions are semvers ordered by precedence, not as strings",
        'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.9.0"))',
        True,
    ),
    ("semver parts", 'device.attributes["gpu.example.com"].driverVersion.minor() == 12', True),
    (
        "a domain the device lacks is an empty map",
        'device.attributes["none.example.com"].size() == 0',
        True,
    ),
    (
        "macros work",
        '["A100", "H100"].exists(m, device.attributes["gpu.example.com"].model == m)',
        True,
    ),
    (
        "matches uses a regular expression",
        'device.attributes["gpu.example.com"].model.matches("^A[0-9]+$")',
        True,
    ),
]


@pytest.mark.parametrize(
    ("expression", "expected"), [c[1:] for c in MATCHES], ids=[c[0] for c in MATCHES]
)
def test_selectors_see_the_device_as_the_allocator_shows_it(
    expression: str, expected: bool
) -> None:
    assert selector(expression).matches(GPU) is expected


ERRORS: list[tuple[str, str, str]] = [
    (
        "an identifier the device lacks is an error",
        'device.attributes["gpu.example.com"].nope == 1',
        "runtime error: no such member in mapping: 'nope'",
    ),
    ("a result that is not a bool", "device.driver", "the result is not a bool"),
    ("a syntax error", "device.driver ==", "compilation failed"),
    (
        "an unknown function is named",
        "frobnicate(device.driver)",
        "undeclared reference to frobnicate",
    ),
    (
        "a bad quantity says why",
        'quantity("ten") == quantity("1")',
        "quantity: quantities must match",
    ),
    ("an empty expression", "  ", "the expression is empty"),
    ("longer than the API allows", "true || " * 1400 + "true", f"longer than {MAX_LENGTH} bytes"),
    (
        "nested comprehensions spend the budget",
        "["
        + ",".join(["1"] * 30)
        + "].all(a, ["
        + ",".join(["1"] * 30)
        + "].all(b, ["
        + ",".join(["1"] * 30)
        + "].all(c, a + b + c > 0)))",
        f"exceeded the budget of {BUDGET} steps",
    ),
    ("deep nesting is refused", "(" * 3000 + "true" + ")" * 3000, "nested too deeply"),
]


@pytest.mark.parametrize(
    ("expression", "message"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS]
)
def test_bad_selectors_get_a_clear_answer(expression: str, message: str) -> None:
    with pytest.raises(CelError, match=message.replace("(", r"\(").replace("[", r"\[")):
        selector(expression).matches(GPU)
