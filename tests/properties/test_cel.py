"""Property tests over CEL device selectors: any expression, any device.

Expressions come from a small grammar over what a selector sees (the driver, attributes of
every kind, capacities, a domain the device lacks, a name it lacks), CEL's operators,
macros and functions and the Kubernetes quantity and semver libraries, with the shapes that
grow: ``map(x, x + x)`` and ``map(x, [x, x])`` chains. Whatever the expression, compiling
and evaluating it gives a bool or a :class:`CelError` whose message is one non-empty line,
never another exception, and the evaluation holds at most :data:`PEAK` at once.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from webhooks.k8s.cel import CelError, Device, Selector

DRIVER = "gpu.example.com"
#: The most one evaluation may hold at once, traced. The cost limit lets an evaluation
#: build ten million characters in all (0.1 per character concatenated) and copy a million
#: list elements (1 each); no single value holds over a million: a few MiB in practice,
#: 20 MiB at worst for ASCII text.
PEAK = 32 << 20

_ATTR = f'device.attributes["{DRIVER}"]'
_LEAVES = (
    "device.driver",
    f"{_ATTR}.model",
    f"{_ATTR}.index",
    f"{_ATTR}.fast",
    f"{_ATTR}.driverVersion",
    f"{_ATTR}.tags",
    f"{_ATTR}.nope",
    f"{_ATTR}.size()",
    'device.attributes["other.example.com"]',
    'device.attributes["other.example.com"].speed',
    f'device.capacity["{DRIVER}"].memory',
    'device.capacity["none.example.com"]',
    'quantity("40Gi")',
    'semver("1.2.3-rc.1")',
    "x",
    "true",
    "false",
    "null",
    "0",
    "1",
    "-7",
    "1.5",
    '""',
    '"A100"',
    "b'ab'",
    "[]",
    "[1, 2, 3]",
    '["a", "b"]',
    "{}",
    '{"a": 1}',
)


def _string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a CEL string literal


leaves = st.one_of(
    st.sampled_from(_LEAVES),
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8).map(_string),
)

_BINARY = ("+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "in")
_METHODS = (
    "matches",
    "startsWith",
    "endsWith",
    "contains",
    "compareTo",
    "isGreaterThan",
    "isLessThan",
    "add",
    "sub",
)
_MACROS = ("map", "filter", "exists", "all", "exists_one")
_FUNCTIONS = ("size", "string", "bytes", "int", "double", "quantity", "isQuantity", "semver")


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, st.sampled_from(_BINARY), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(("!", "-")), inner).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
        st.tuples(st.sampled_from(_FUNCTIONS), inner).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(inner, st.sampled_from(_METHODS), inner).map(lambda t: f"{t[0]}.{t[1]}({t[2]})"),
        st.tuples(inner, st.sampled_from(_MACROS), inner).map(
            lambda t: f"{t[0]}.{t[1]}(x, {t[2]})"
        ),
        st.tuples(inner, inner).map(lambda t: f"{t[0]}[{t[1]}]"),
        st.lists(inner, max_size=3).map(lambda items: f"[{', '.join(items)}]"),
        st.tuples(inner, inner).map(lambda t: f"{{{t[0]}: {t[1]}}}"),
        st.tuples(inner, st.integers(1, 40)).map(
            lambda t: f"[{t[0]}]" + ".map(x, x + x)" * t[1] + "[0]"
        ),
        st.tuples(inner, st.integers(1, 40)).map(
            lambda t: f"[{t[0]}]" + ".map(x, [x, x])" * t[1] + "[0]"
        ),
    )


expressions = st.recursive(leaves, _extend, max_leaves=12)
#: The shapes that grow, over what a device gives, compared with anything: the grammar
#: reaches them too, but seldom on a value that can grow.
growing = st.tuples(
    st.sampled_from(("device.driver", f"{_ATTR}.model", f"{_ATTR}.tags", '"A100"', "[1, 2]")),
    st.sampled_from(("x + x", "[x, x]")),
    st.integers(1, 40),
    expressions,
).map(lambda t: f"[{t[0]}]" + f".map(x, {t[1]})" * t[2] + f"[0] == {t[3]}")
selectors = st.one_of(expressions, growing)


@st.composite
def devices(draw: st.DrawFn) -> Device:
    """A device with attributes of every kind, a domain of its own and of another, and
    capacities, some of them long."""
    text = st.text(max_size=70) | st.sampled_from(["A100", "x" * 5_000])
    attributes: dict[str, Any] = {
        "model": {"string": draw(text)},
        "index": {"int": draw(st.integers(-(2**63), 2**63 - 1))},
        "fast": {"bool": draw(st.booleans())},
        "driverVersion": {"version": draw(st.sampled_from(["1.12.0", "0.0.1-rc.1+b", "2.0.0"]))},
        "tags": {"strings": draw(st.lists(text, max_size=4))},
        "other.example.com/speed": {"int": draw(st.integers(0, 400))},
    }
    memory = draw(st.sampled_from(["80Gi", "1", "0", "1.5Ki", "1e3", "9Ei"]))
    return Device(DRIVER, attributes, {"memory": {"value": memory}})


def _peak(call: Callable[[], object]) -> int:
    """Bytes ``call`` held at its peak (traced; no collection first, to stay cheap)."""
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - base


def _one_line(exc: CelError) -> None:
    text = str(exc)
    assert text and "\n" not in text and len(text) < 500, text


#: A quarter of the profile's examples: each traces memory, which slows an evaluation
#: tenfold, and half of them build values up to the size limit.
_EXAMPLES = max(50, settings.default.max_examples // 4)


@settings(max_examples=_EXAMPLES)
@given(selectors, devices())
def test_a_selector_gets_a_bool_or_an_error_that_says_why_within_the_memory_bound(
    expression: str, device: Device
) -> None:
    try:
        compiled = Selector(expression)
    except CelError as exc:
        _one_line(exc)
        return
    outcome: list[bool | CelError] = []

    def run() -> None:
        try:
            outcome.append(compiled.matches(device))
        except CelError as exc:
            outcome.append(exc)

    peak = _peak(run)
    assert peak < PEAK, (peak, expression)
    (answer,) = outcome
    if isinstance(answer, CelError):
        _one_line(answer)
    else:
        assert isinstance(answer, bool)
