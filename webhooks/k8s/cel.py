"""CEL device selectors (``selectors[].cel.expression`` of DeviceClasses and claim requests),
evaluated as the scheduler's allocator evaluates them, with a budget.

Why here, beside the other upstream rules: whether a device matches a class decides where
a pod can run, and ``explain`` must answer it the way the scheduler does. The expression
sees one variable, ``device``, with ``driver`` (a string), ``attributes`` and ``capacity``:
maps from a domain to a map from an identifier to the value. An attribute or capacity
named without a domain (``model``) is filed under the device's driver; a domain the device
does not have reads as an empty map, while an identifier it does not have is an error
(``no such key``), as upstream. Attribute values are ints, bools, strings, or semantic
versions (the ``version`` type); capacities are quantities. Of the Kubernetes CEL
libraries the ones device selectors use are provided: ``quantity()``/``isQuantity()`` with
``compareTo``, ``isGreaterThan``, ``isLessThan``, ``add``, ``sub``, ``isInteger``,
``asInteger``, ``asApproximateFloat`` and ``sign``; ``semver()``/``isSemver()`` with
``major``, ``minor``, ``patch``, ``compareTo``, ``isGreaterThan`` and ``isLessThan``; the
standard CEL functions and macros come from the library. Anything else is an error that
names it, never a guess.

Bounds, as the API server bounds selectors: an expression longer than 10 KiB
(``CELSelectorExpressionMaxLength``) is refused, and one evaluation may visit at most
:data:`BUDGET` expression nodes (the API server's limit is a cost of 1,000,000 units,
which a tree walker in Python cannot afford per device: a realistic selector visits
fewer than a hundred nodes, and this budget is well under a second); nesting deeper than the
interpreter can follow is refused too. So no selector costs more than a fixed amount per
device, whatever it says. ``matches()`` uses RE2, which runs in linear time.

The CEL library (``cel-python``) is the optional ``explain`` extra: the webhook server
never evaluates selectors. :func:`available` says whether it is installed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from webhooks.k8s.quantity import QuantityError, parse_quantity

#: Upstream's ``CELSelectorExpressionMaxLength``.
MAX_LENGTH: Final = 10 * 1024
#: Expression nodes one evaluation may visit.
BUDGET: Final = 10_000
#: What to install when the library is missing.
EXTRA_HINT: Final = "pip install 'placement-webhooks[explain]'"

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class CelError(ValueError):
    """A selector that cannot be evaluated: the message says why, in one line."""


def available() -> bool:
    """Whether the CEL library is installed. Why: ``explain`` says so up front when not."""
    try:
        import celpy  # noqa: F401
    except ImportError:
        return False
    return True


# --- the Kubernetes CEL value types ----------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Quantity:
    """A Kubernetes quantity as a CEL value: compared by value, so ``1Gi == 1024Mi``."""

    value: Decimal
    text: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"quantity({self.text!r})"


_SEMVER = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
    r"(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


@dataclass(frozen=True, slots=True, eq=False)
class Semver:
    """A semantic version as a CEL value, ordered by semver precedence (build ignored)."""

    major: int
    minor: int
    patch: int
    pre: tuple[str, ...]
    text: str

    @classmethod
    def parse(cls, text: str) -> Semver:
        """A strict semantic version 2.0.0 (``1.2.3-rc.1+build``); ValueError otherwise."""
        match = _SEMVER.fullmatch(text)
        if match is None:
            raise ValueError(f"invalid semantic version {text!r}")
        pre = tuple(match[4].split(".")) if match[4] else ()
        return cls(int(match[1]), int(match[2]), int(match[3]), pre, text)

    def _key(self) -> tuple[Any, ...]:
        # A release sorts after its pre-releases; numeric identifiers before alphanumeric.
        ids = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, not self.pre, ids)

    def compare(self, other: Semver) -> int:
        """-1, 0 or 1 by semver precedence."""
        a, b = self._key(), other._key()
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"semver({self.text!r})"


# --- the library functions ---------------------------------------------------------------


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expects a string")
    return str(value)


def _quantity(text: Any) -> Quantity:
    raw = _string(text)
    try:
        return Quantity(parse_quantity(raw), raw)
    except QuantityError as exc:
        raise ValueError(exc.reason) from None


def _is_quantity(text: Any) -> bool:
    try:
        parse_quantity(_string(text))
    except QuantityError:
        return False
    return True


def _semver(text: Any) -> Semver:
    return Semver.parse(_string(text))


def _is_semver(text: Any, normalize: Any = False) -> bool:
    raw = _string(text)
    if normalize:
        raw = raw.removeprefix("v")
        parts = raw.split("-", 1)[0].split("+", 1)[0].split(".")
        if 1 <= len(parts) < 3:
            raw = raw.replace(".".join(parts), ".".join([*parts, *["0"] * (3 - len(parts))]), 1)
    return _SEMVER.fullmatch(raw) is not None


def _ordered(a: Any, b: Any) -> int:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return (a.value > b.value) - (a.value < b.value)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b)
    raise TypeError("compares two quantities or two semvers")


def _as_quantity(value: Any) -> Decimal:
    if isinstance(value, Quantity):
        return value.value
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(int(value))
    raise TypeError("adds a quantity or an int")


def _sum(a: Any, b: Any, sign: int) -> Quantity:
    if not isinstance(a, Quantity):
        raise TypeError("is a method of a quantity")
    total = a.value + sign * _as_quantity(b)
    return Quantity(total, f"{total:f}")


def _integer(q: Any) -> bool:
    if not isinstance(q, Quantity):
        raise TypeError("is a method of a quantity")
    return q.value == q.value.to_integral_value()


def _as_integer(q: Any) -> int:
    if not _integer(q) or not _INT64_MIN <= q.value <= _INT64_MAX:
        raise ValueError("cannot convert value to integer")
    return int(q.value)


def _as_float(q: Any) -> float:
    if not isinstance(q, Quantity):
        raise TypeError("is a method of a quantity")
    try:
        return float(q.value)
    except (OverflowError, InvalidOperation):  # pragma: no cover - Decimal gives inf instead
        return float("inf") if q.value > 0 else float("-inf")


def _sign(q: Any) -> int:
    if not isinstance(q, Quantity):
        raise TypeError("is a method of a quantity")
    return (q.value > 0) - (q.value < 0)


def _part(index: int) -> Callable[[Any], int]:
    def part(v: Any) -> int:
        if not isinstance(v, Semver):
            raise TypeError("is a method of a semver")
        return (v.major, v.minor, v.patch)[index]

    return part


# --- the device ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Device:
    """What a selector sees of a device: its driver, and its attributes and capacity as the
    ResourceSlice writes them (``{name: {"int": 1}}``, ``{name: {"value": "80Gi"}}``)."""

    driver: str
    attributes: Mapping[str, Any]
    capacity: Mapping[str, Any]


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


_SCALARS = ("int", "bool", "string", "version")
_LISTS = ("ints", "bools", "strings", "versions")


def _attribute(raw: Any) -> Any:
    """One attribute's value, as upstream's ``getAttributeValue`` picks it."""
    if not isinstance(raw, Mapping):
        raise CelError("an attribute is not a mapping")
    for field in _LISTS:
        if isinstance(raw.get(field), list):
            values = raw[field]
            return [Semver.parse(v) if field == "versions" else v for v in values]
    for field in _SCALARS:
        if field in raw and raw[field] is not None:
            value = raw[field]
            return Semver.parse(value) if field == "version" else value
    raise CelError("an attribute has no supported value")


# --- compiling and evaluating ------------------------------------------------------------------


class _OverBudget(BaseException):
    """An evaluation visited more than its budget of nodes.

    A BaseException so that the library's own handlers (macros turn errors into values)
    cannot swallow it.
    """


_SHORTEN = re.compile(r"undeclared reference to '?([^' ]+)'?.*", re.S)


def _message(exc: BaseException) -> str:
    text = str(exc.args[0]) if exc.args else str(exc)
    text = _SHORTEN.sub(r"undeclared reference to \1 (not supported here)", text)
    return " ".join(text.split())[:300]


class Selector:
    """One compiled selector expression, evaluated against devices.

    Why compiled once: a class's selectors are evaluated for every device in the
    inventory, and parsing is the costly part.
    """

    def __init__(self, expression: str) -> None:
        self.expression = expression
        if len(expression.encode()) > MAX_LENGTH:
            raise CelError(f"the expression is longer than {MAX_LENGTH} bytes")
        if not expression.strip():
            raise CelError("the expression is empty")
        try:
            import celpy
            from celpy import celtypes
            from celpy.evaluation import Evaluator
        except ImportError:  # pragma: no cover - the test extras install it
            raise CelError(f"evaluating CEL needs the cel-python library: {EXTRA_HINT}") from None
        self._types = celtypes
        limit = sys.getrecursionlimit()
        try:
            env = celpy.Environment()  # raises the recursion limit as a side effect
        finally:
            sys.setrecursionlimit(limit)
        try:
            self._ast = env.compile(expression)
        except celpy.celparser.CELParseError as exc:
            raise CelError(f"compilation failed: {_message(exc)}") from None
        except RecursionError:
            raise CelError("the expression is nested too deeply") from None
        self._runner = env.program(self._ast, functions=_functions())
        self._evaluator = Evaluator

    def matches(self, device: Device) -> bool:
        """Whether ``device`` satisfies the expression; :class:`CelError` when it cannot be
        evaluated (a runtime error, a result that is not a bool, the budget spent)."""
        budget = [BUDGET]
        evaluator = _bounded(self._evaluator, budget)(self._ast, self._runner.new_activation())
        try:
            result = evaluator.evaluate({"device": self._device(device)})
        except _OverBudget:
            raise CelError(
                f"evaluation exceeded the budget of {BUDGET} steps for one device"
            ) from None
        except RecursionError:
            raise CelError("the expression is nested too deeply to evaluate") from None
        except CelError:
            raise
        except Exception as exc:  # the library's CELEvalError and its kin
            raise CelError(f"runtime error: {_message(exc)}") from None
        if not isinstance(result, bool):  # BoolType subclasses int, not bool
            if isinstance(result, self._types.BoolType):
                return bool(result)
            raise CelError(f"the result is not a bool but {type(result).__name__}")
        return result

    def _device(self, device: Device) -> Any:
        t = self._types
        attributes: dict[str, dict[str, Any]] = {}
        for name, raw in device.attributes.items():
            domain, ident = _split(name, device.driver)
            attributes.setdefault(domain, {})[ident] = _attribute(raw)
        capacity: dict[str, dict[str, Any]] = {}
        for name, raw in device.capacity.items():
            value = raw.get("value") if isinstance(raw, Mapping) else None
            domain, ident = _split(name, device.driver)
            try:
                capacity.setdefault(domain, {})[ident] = Quantity(
                    parse_quantity(str(value)), str(value)
                )
            except QuantityError as exc:
                raise CelError(f"capacity {name}: {exc.reason}") from None
        return t.MapType(
            {
                t.StringType("driver"): t.StringType(device.driver),
                t.StringType("attributes"): _domains(t, attributes),
                t.StringType("capacity"): _domains(t, capacity),
            }
        )


def _cel_value(t: Any, value: Any) -> Any:
    if isinstance(value, bool):
        return t.BoolType(value)
    if isinstance(value, int):
        return t.IntType(value)
    if isinstance(value, str):
        return t.StringType(value)
    if isinstance(value, list):
        return t.ListType([_cel_value(t, v) for v in value])
    return value  # Quantity, Semver


def _domains(t: Any, by_domain: Mapping[str, Mapping[str, Any]]) -> Any:
    class Domains(t.MapType):  # type: ignore[misc]
        """A domain the device lacks reads as an empty map, as upstream's default map."""

        def __getitem__(self, key: Any) -> Any:
            try:
                return super().__getitem__(key)
            except KeyError:
                return t.MapType()

    return Domains(
        {
            t.StringType(domain): t.MapType(
                {t.StringType(k): _cel_value(t, v) for k, v in values.items()}
            )
            for domain, values in by_domain.items()
        }
    )


def _bounded(base: Any, budget: list[int]) -> Any:
    """An evaluator class that counts every node it visits against ``budget``, macro
    bodies included (they are evaluated by sub-evaluators of the same class)."""

    class Bounded(base):  # type: ignore[misc]
        def _visit_tree(self, tree: Any) -> Any:
            # Every node, the root and children alike, goes through here (lark).
            budget[0] -= 1
            if budget[0] < 0:
                raise _OverBudget
            return super()._visit_tree(tree)

        def sub_evaluator(self, ast: Any) -> Any:
            return Bounded(ast, activation=self.activation)

    return Bounded


def _wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Convert a library function's Python result to a CEL value."""

    def call(*args: Any) -> Any:
        from celpy import celtypes
        from celpy.evaluation import CELEvalError

        try:
            return _cel_value(celtypes, fn(*args))
        except (ValueError, TypeError) as exc:  # the library would call both "overflow"
            return CELEvalError(f"{name}: {exc}", exc.__class__, exc.args)

    return call


def _functions() -> dict[str, Callable[..., Any]]:
    raw: dict[str, Callable[..., Any]] = {
        "quantity": _quantity,
        "isQuantity": _is_quantity,
        "semver": _semver,
        "isSemver": _is_semver,
        "compareTo": _ordered,
        "isGreaterThan": lambda a, b: _ordered(a, b) > 0,
        "isLessThan": lambda a, b: _ordered(a, b) < 0,
        "add": lambda a, b: _sum(a, b, 1),
        "sub": lambda a, b: _sum(a, b, -1),
        "isInteger": _integer,
        "asInteger": _as_integer,
        "asApproximateFloat": _as_float,
        "sign": _sign,
        "major": _part(0),
        "minor": _part(1),
        "patch": _part(2),
    }
    return {name: _wrap(name, fn) for name, fn in raw.items()}


_COMPILED: dict[str, Selector | CelError] = {}
#: Distinct expressions kept compiled; why a bound: input decides how many there are.
_CACHE_SIZE: Final = 1024


def selector(expression: str) -> Selector:
    """The compiled selector for ``expression`` (cached); raises :class:`CelError`.

    Why cached, failures included: every device is matched against the same few
    expressions, and a broken one must not be parsed again for each device.
    """
    found = _COMPILED.get(expression)
    if found is None:
        try:
            found = Selector(expression)
        except CelError as exc:
            found = exc
        if len(_COMPILED) >= _CACHE_SIZE:
            _COMPILED.clear()
        _COMPILED[expression] = found
    if isinstance(found, CelError):
        raise found
    return found
