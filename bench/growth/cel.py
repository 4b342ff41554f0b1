"""CEL device selectors: the cost of matching grows with the devices, their attributes and the
expression, and a selector that builds ever larger values stops at the bound.

Why these four: ``explain`` evaluates every DeviceClass and claim selector against every
device, so the time per device must not depend on how many devices there are; a device's
attributes and the expression's length are the two inputs of one evaluation; and a chain
of ``map()`` calls that doubles a string at every step is the shape that grew without
bound before values were charged by size. That surface is flat once N passes the bound:
both sizes are refused at the same step.
"""

from __future__ import annotations

import itertools
from typing import Any

from bench.growth.measure import Surface, in_process
from webhooks.k8s.cel import CelError, Device, Selector

_DRIVER = "gpu.example.com"
_SELECTOR = (
    f'device.driver == "{_DRIVER}"'
    f' && device.attributes["{_DRIVER}"].model == "A100"'
    f' && device.capacity["{_DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'
)
_fresh = itertools.count()


def _device(i: int, attributes: int = 4) -> Device:
    attrs: dict[str, Any] = {"model": {"string": "A100"}, "index": {"int": i}}
    attrs.update({f"extra{j}": {"string": f"value-{j}"} for j in range(attributes - 2)})
    return Device(_DRIVER, attrs, {"memory": {"value": "80Gi"}})


def _match_all(pair: tuple[Selector, list[Device]]) -> int:
    selector, devices = pair
    return sum(selector.matches(device) for device in devices)


def _refused(pair: tuple[Selector, Device]) -> str:
    selector, device = pair
    try:
        selector.matches(device)
    except CelError as exc:
        return str(exc)
    return ""


def _devices(n: int) -> tuple[Selector, list[Device]]:
    return Selector(_SELECTOR), [_device(i) for i in range(n)]


def _attributes(n: int) -> tuple[Selector, list[Device]]:
    return Selector(_SELECTOR), [_device(next(_fresh), attributes=n)]


def _expression(n: int) -> str:
    # A flat list literal, so the length grows and the nesting does not; each one new, so
    # the compiled-selector cache never answers.
    items, size = [], 40
    while size < n:
        item = f'"m{next(_fresh):07d}"'
        items.append(item)
        size += len(item) + 2
    return f"device.driver in [{', '.join(items)}]"


def _compile_and_match(expression: str) -> bool:
    return Selector(expression).matches(_device(0))


def _doubling(n: int) -> tuple[Selector, Device]:
    return Selector("[device.driver]" + ".map(x, x + x)" * n + "[0].size() > 0"), _device(0)


def _failing_terms(n: int) -> tuple[Selector, Device]:
    # Each term fails (a string divided by a number); || keeps the first error, so the
    # answer is one error whatever n, not one wrapping every term's.
    return Selector(" || ".join(["(device.driver / 2) == 1"] * n)), _device(0)


SURFACES = [
    Surface("cel: one selector over N devices", "devices", 400, in_process(_devices, _match_all)),
    Surface(
        "cel: one selector over a device with N attributes",
        "attributes",
        20_000,
        in_process(_attributes, _match_all),
    ),
    Surface(
        "cel: an expression of N bytes (2N is the 10 KiB limit)",
        "bytes",
        5 * 1024,
        in_process(_expression, _compile_and_match),
    ),
    Surface(
        "cel: a map() chain doubling a string, N steps",
        "steps",
        20,
        in_process(_doubling, _refused),
    ),
    Surface(
        "cel: N failing terms joined by ||",
        "terms",
        40,
        in_process(_failing_terms, _refused),
    ),
]
