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

Bounds, as the scheduler bounds selectors: an expression longer than 10 KiB
(``CELSelectorExpressionMaxLength``) is refused, nesting deeper than the interpreter can
follow is refused, and one evaluation is charged the scheduler's runtime cost, limited to
``CELSelectorExpressionMaxCost``, with the steps of the walk and the size of every value
bounded besides (:mod:`webhooks.k8s.celcost`, which says where the charges differ from
upstream's). So no selector costs more than a fixed amount of time and memory per device,
whatever it says. ``matches()`` uses RE2, which runs in linear time. Every refusal names
its limit and quotes where in the expression it happened, at most 60 characters of it.

The CEL library (``cel-python``) is the optional ``explain`` extra: the webhook server
never evaluates selectors. :func:`available` says whether it is installed.
"""

from __future__ import annotations

import re
import sys
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from webhooks.k8s.celcost import (
    LIST_CREATE_COST,
    MAP_CREATE_COST,
    SELECT_AND_IDENT_COST,
    STRUCT_CREATE_COST,
    Exhausted,
    Meter,
    Span,
)
from webhooks.k8s.quantity import QuantityError, parse_quantity

#: Upstream's ``CELSelectorExpressionMaxLength``.
MAX_LENGTH: Final = 10 * 1024
#: What to install when the library is missing.
EXTRA_HINT: Final = "pip install 'placement-webhooks[explain]'"

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: Digits a sum of quantities is written out in before it is written with an exponent.
_FIXED_DIGITS: Final = 64


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
    # Fixed-point text only for a modest exponent: ``1e999999999`` is a valid quantity.
    return Quantity(total, f"{total:f}" if abs(total.adjusted()) <= _FIXED_DIGITS else str(total))


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


_SHORTEN = re.compile(r"undeclared reference to '?([^' ]+)'?.*", re.S)
#: How much of a library message is read, and how much of it a message quotes.
_READ, _QUOTE = 2_000, 300


def _message(exc: BaseException) -> str:
    """One line saying what failed, never empty: the library's text, bounded, or the kind
    of failure when it has none (a MemoryError carries no text)."""
    text = str(exc.args[0]) if exc.args else str(exc)
    text = _SHORTEN.sub(r"undeclared reference to \1 (not supported here)", text[:_READ])
    text = " ".join(text.split())[:_QUOTE]
    return text or type(exc).__name__


def _span(node: object) -> Span | None:
    """Where a parse-tree node or token is in the expression, when the parser says."""
    meta = getattr(node, "meta", node)
    start, end = getattr(meta, "start_pos", None), getattr(meta, "end_pos", None)
    return (start, end) if isinstance(start, int) and isinstance(end, int) else None


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
        self._evaluator = _metered(Evaluator)

    def matches(self, device: Device) -> bool:
        """Whether ``device`` satisfies the expression; :class:`CelError` when it cannot be
        evaluated (a runtime error, a result that is not a bool, a bound passed: steps,
        cost or the size of a value, see :mod:`webhooks.k8s.celcost`)."""
        result, _ = self._evaluate(device)
        if not isinstance(result, bool):  # BoolType subclasses int, not bool
            if isinstance(result, self._types.BoolType):
                return bool(result)
            raise CelError(f"the result is not a bool but {type(result).__name__}")
        return result

    def cost(self, device: Device) -> int:
        """The runtime cost of evaluating the expression against ``device``, whatever its
        result, in the scheduler's units; :class:`CelError` as :meth:`matches`.

        Why: that cost decides whether the scheduler accepts the selector, so tests compare
        it with the figures cel-go's own tests give.
        """
        return self._evaluate(device)[1].cost

    def _evaluate(self, device: Device) -> tuple[Any, Meter]:
        meter = Meter(self.expression, _span)
        token = _METER.set(meter)
        try:
            evaluator = self._evaluator(self._ast, self._runner.new_activation(), meter)
            result = evaluator.evaluate({"device": self._device(device)})
        except Exhausted as exc:
            raise CelError(str(exc)) from None
        except RecursionError:
            raise CelError("the expression is nested too deeply to evaluate") from None
        except MemoryError:
            raise CelError(f"evaluation ran out of memory, at {meter.excerpt()}") from None
        except CelError:
            raise
        except Exception as exc:  # the library's CELEvalError and its kin
            where = getattr(exc, "tree", None) or getattr(exc, "token", None)
            at = f", at {meter.excerpt(where)}" if where is not None and _span(where) else ""
            raise CelError(f"runtime error: {_message(exc)}{at}") from None
        finally:
            _METER.reset(token)
        return result, meter

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


#: The meter of the evaluation under way. Why a context variable: the library calls an
#: operator with its operands only, and one compiled selector may be evaluated by two
#: threads at once.
_METER: ContextVar[Meter] = ContextVar("cel_meter")

#: The operators the library looks up by these names; ``&&``, ``||`` and ``?:`` cost nothing
#: of their own (cel-go charges only their operands).
_OPERATORS: Final = (
    "_+_", "_-_", "_*_", "_/_", "_%_", "_<_", "_<=_", "_>_", "_>=_", "_==_", "_!=_", "_in_",
    "_[_]", "!_", "-_",
)  # fmt: skip

#: What reading a node of these kinds costs, in cel-go's units (``primary`` by its child).
_NODE_COSTS: Final = {
    "ident": SELECT_AND_IDENT_COST,
    "dot_ident": SELECT_AND_IDENT_COST,
    "member_dot": SELECT_AND_IDENT_COST,
    "list_lit": LIST_CREATE_COST,
    "map_lit": MAP_CREATE_COST,
    "member_object": STRUCT_CREATE_COST,
}


def _node_cost(tree: Any) -> int:
    if tree.data == "primary":
        return _NODE_COSTS.get(getattr(tree.children[0], "data", ""), 0)
    return _NODE_COSTS.get(tree.data, 0)


def _operands(values: Any, error: type) -> list[Any] | None:
    """The evaluated arguments of a call, or None when one is an error (the library
    returns it unevaluated, and there is nothing to charge)."""
    if isinstance(values, error):
        return None
    found = list(values or [])
    return None if any(isinstance(v, error) for v in found) else found


def _metered(base: Any) -> Any:
    """cel-python's tree walker with the :class:`~webhooks.k8s.celcost.Meter` of the
    evaluation at every node, call and comprehension, and ``&&``, ``||``, ``all()`` and
    ``exists()`` stopping at a deciding operand as cel-go's do."""
    from celpy.celtypes import BoolType
    from celpy.evaluation import CELEvalError

    class Metered(base):  # type: ignore[misc]
        def __init__(self, ast: Any, activation: Any, meter: Meter) -> None:
            super().__init__(ast, activation)
            self.meter = meter

        def sub_evaluator(self, ast: Any) -> Any:
            return Metered(ast, self.activation, self.meter)

        def _visit_tree(self, tree: Any) -> Any:
            # Every node, the root and children alike, goes through here (lark).
            meter = self.meter
            meter.enter(tree)
            try:
                meter.charge(_node_cost(tree))
                value = super()._visit_tree(tree)
                meter.check(value)
            finally:
                meter.leave()
            return value

        def conditionaland(self, tree: Any) -> Any:
            return self._logical(tree, "_&&_", False)

        def conditionalor(self, tree: Any) -> Any:
            return self._logical(tree, "_||_", True)

        def _logical(self, tree: Any, name: str, decides: bool) -> Any:
            if len(tree.children) != 2:
                return self.visit(tree.children[0])
            left = self.visit(tree.children[0])
            if isinstance(left, BoolType) and bool(left) is decides:
                return left
            right = self.visit(tree.children[1])
            if isinstance(right, BoolType) and bool(right) is decides:
                return right
            # As cel-go: a deciding operand absorbs an error on the other side, and of two
            # errors the left one is the answer. (The library's own operator wraps both
            # errors and their descriptions in a new one, so a chain of k failing terms
            # built a message of 2^k descriptions: gigabytes from a 6 KB selector.)
            for operand in (left, right):
                if isinstance(operand, CELEvalError):
                    return operand
            if isinstance(left, BoolType) and isinstance(right, BoolType):
                return self.activation.resolve_function(name)(left, right)
            kinds = f"{type(left).__name__}, {type(right).__name__}"
            refused = f"no such overload: {name}({kinds})"
            return CELEvalError(refused, TypeError, (refused,))

        def member_dot_arg(self, tree: Any) -> Any:
            name = tree.children[1].value
            if name == "min":
                return self._min(tree)
            self.meter.fold(name)  # nothing unless a macro
            return super().member_dot_arg(tree)

        def _min(self, tree: Any) -> Any:
            values = self.visit(tree.children[0])
            if isinstance(values, CELEvalError):
                return values
            self.meter.call("min", [values])
            try:
                return min(values)
            except (ValueError, TypeError) as exc:
                return CELEvalError(f"min: {exc}", type(exc), exc.args, tree=tree)

        def build_macro_eval(self, child: Any) -> Any:
            each = super().build_macro_eval(child)
            macro, meter = child.children[1].value, self.meter

            def iteration(value: Any) -> Any:
                meter.iteration(macro)
                result = each(value)
                if macro != "map" and bool(result):  # what filter keeps, exists_one counts
                    meter.kept(macro)
                return result

            return iteration

        def build_ss_macro_eval(self, child: Any) -> Any:
            each = super().build_ss_macro_eval(child)
            macro, meter = child.children[1].value, self.meter
            decides = macro == "exists"
            state = ["open"]

            def iteration(value: Any) -> Any:
                if state[0] != "open":  # decided: cel-go's loop stops here
                    if state[0] == "decided":
                        meter.stopped(macro)
                        state[0] = "stopped"
                    return BoolType(decides)
                meter.iteration(macro)
                result = each(value)
                if isinstance(result, BoolType) and bool(result) is decides:
                    state[0] = "decided"
                return result

            return iteration

        def function_eval(self, name_token: Any, exprlist: Any = None) -> Any:
            args = _operands(exprlist, CELEvalError)
            if args is not None:
                refused = self.meter.call(name_token.value, args)
                if refused:
                    return CELEvalError(refused, TypeError, (refused,), token=name_token)
            return super().function_eval(name_token, exprlist)

        def method_eval(self, member: Any, method_ident: Any, exprlist: Any = None) -> Any:
            args = _operands(exprlist, CELEvalError)
            if args is not None and not isinstance(member, CELEvalError):
                refused = self.meter.call(method_ident.value, [member, *args])
                if refused:
                    return CELEvalError(refused, TypeError, (refused,), token=method_ident)
            return super().method_eval(member, method_ident, exprlist)

    return Metered


def _metered_operator(name: str, fn: Callable[..., Any], error: type) -> Callable[..., Any]:
    """``fn`` charged to the evaluation's meter before it runs."""

    def operate(*args: Any) -> Any:
        if any(isinstance(a, error) for a in args):
            return fn(*args)
        meter = _METER.get()
        size = meter.operator(name, args)
        result = fn(*args)
        if size is not None and isinstance(result, list):
            meter.remember(result, size)
        return result

    return operate


def _matches(text: Any, pattern: Any) -> bool:
    """``matches()`` with RE2 (linear time, as upstream's), its errors in the message
    instead of on stderr."""
    import re2  # type: ignore[import-untyped]  # a dependency of cel-python

    if not isinstance(text, str) or not isinstance(pattern, str):
        raise TypeError("matches a string against a string pattern")
    options = re2.Options()
    options.log_errors = False
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else ""
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise ValueError(f"invalid pattern: {detail}") from None
    return compiled.search(text) is not None


def _wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Convert a library function's Python result to a CEL value."""

    def call(*args: Any) -> Any:
        from celpy import celtypes
        from celpy.evaluation import CELEvalError

        try:
            return _cel_value(celtypes, fn(*args))
        except (ValueError, TypeError) as exc:  # the library would call both "overflow"
            return CELEvalError(f"{name}: {exc}", exc.__class__, exc.args)
        except ArithmeticError as exc:  # a sum of quantities past Decimal's exponents
            return CELEvalError(f"{name}: overflow", exc.__class__, exc.args)

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
    from celpy.evaluation import CELEvalError, base_functions

    raw["matches"] = _matches
    functions = {name: _wrap(name, fn) for name, fn in raw.items()}
    functions.update(
        {name: _metered_operator(name, base_functions[name], CELEvalError) for name in _OPERATORS}
    )
    return functions


#: Bytes of expression text the compiled-selector cache keeps. Why by bytes: a compiled
#: selector holds about 580 bytes of parse tree per byte of its text (5.8 MiB for one of
#: 10 KiB), so a bound on the count alone let 1,024 long selectors hold 6 GiB; 64 KiB is
#: about 37 MiB at most, and a few hundred selectors of usual length.
CACHE_BYTES: Final = 64 * 1024
_COMPILED: OrderedDict[str, Selector | CelError] = OrderedDict()
_cached = [0]  # bytes of the expressions in _COMPILED


def selector(expression: str) -> Selector:
    """The compiled selector for ``expression`` (cached); raises :class:`CelError`.

    Why cached, failures included: every device is matched against the same few
    expressions, and a broken one must not be parsed again for each device. The least
    recently used go first once the cache holds :data:`CACHE_BYTES` of text.
    """
    found = _COMPILED.get(expression)
    if found is not None:
        _COMPILED.move_to_end(expression)
    else:
        try:
            found = Selector(expression)
        except CelError as exc:
            found = exc
        size = len(expression)
        while _COMPILED and _cached[0] + size > CACHE_BYTES:
            _cached[0] -= len(_COMPILED.popitem(last=False)[0])
        if size <= CACHE_BYTES:
            _COMPILED[expression] = found
            _cached[0] += size
    if isinstance(found, CelError):
        raise found
    return found
