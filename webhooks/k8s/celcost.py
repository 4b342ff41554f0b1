"""What one evaluation of a CEL selector may spend: the scheduler's cost, charged as the
scheduler charges it, the steps of the tree walk, and the size of every value it builds.

Why a meter of its own: the CEL library (cel-python) walks the expression and bounds
nothing. A selector of a few hundred bytes can build gigabytes: ``map(x, x + x)`` chained
doubles a string at every step, and ``map(x, [x, x])`` chained doubles what a comparison
must walk. The scheduler stops such a selector while it runs: cel-go charges every
operation a cost proportional to the sizes of its operands (``interpreter/runtimecost.go``
and the Kubernetes libraries' ``CallCost``) and cancels the evaluation once the total
passes ``resource.CELSelectorExpressionMaxCost``. :class:`Meter` charges the same units at
the same operations against the same limit, so a selector the scheduler refuses for cost
is refused here too; and it bounds two things the scheduler leaves to that cost, because
cel-python pays for them differently:

* **Steps** (:data:`STEP_BUDGET`): every node of the parse tree visited. cel-python spends
  about 13 µs on a node and visits about eight per operand, where upstream reckons its
  whole limit at roughly 0.1 s, so a cost of 1,000,000 in literals and comprehensions
  could take minutes here; ten thousand steps take about 0.1 s, and a realistic selector
  visits fewer than a hundred. Stricter than the scheduler: a selector whose
  comprehensions make thousands of iterations is refused here and may be accepted there.
* **Size** (:data:`MAX_VALUE_SIZE`): no string, byte string, list or map may hold more, so
  one value stays within a few MiB. The scheduler has no such cap; its cost lets a string
  grow to ten million characters (concatenation costs 0.1 per character). Stricter: a
  selector that builds a value of over a million characters or elements is refused here.

Together they bound the memory of an evaluation: the cost limit lets it concatenate ten
million characters and copy a million list elements in all, no value holds over a million,
and what it reads is the device (a few KiB).

Where the charges differ from cel-go's, each because cel-python works differently:

* A list concatenation is charged one unit per element copied (:data:`ELEMENT_COPY_COST`);
  cel-go charges 1, as it joins lists lazily, while cel-python copies both.
* Comparing, searching (``in``, ``contains``) or taking ``min()`` of a list or map is
  charged one unit per element and per character of the strings it holds, nested ones
  included (:meth:`Meter.size`); cel-go charges 0.1 per element of the outer list for a
  comparison. cel-python compares element by element in Python, about a hundred times
  slower, and a list can hold the same list twice, so its size doubles at every nesting.
  Strings and byte strings are charged exactly as cel-go charges them.
* ``&&`` and ``||`` are evaluated left to right and stop at a deciding left operand, and
  ``all()``/``exists()`` stop at a deciding element, as cel-go does (cel-python evaluates
  everything; the answer is the same, the cost is cel-go's). A macro's comprehension is
  charged what cel-go charges the loop it expands to (:data:`FOLD_SETUP` and the rest).
* Reading a variable that cel-go folds into an attribute costs 1 more here: an index by
  a variable (``m[k]``), a ternary whose branch is a variable, ``has(a.b)`` (the API
  server's presence test is free). ``in`` on a map is charged by the map's size
  (cel-python searches it element by element). ``string()`` and ``bytes()`` of a list or
  map are refused, as upstream has no such overload (cel-python prints the value, a text
  as large as its whole tree).

RE2, which cel-python uses for ``matches()``, runs in time linear in the text and the
pattern (and compiles a pattern within 8 MiB), so a pattern such as ``(a+)+$`` cannot
backtrack; ``matches()`` is charged as cel-go charges it, (0.1 × text length) × (0.25 ×
pattern length), and ``quantity()``, ``isQuantity()``, ``semver()`` and ``isSemver()`` 0.1
per character, as the Kubernetes libraries charge them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from webhooks.k8s.excerpt import SHOWN

#: Upstream's ``resource.CELSelectorExpressionMaxCost``: the runtime cost one selector may
#: spend on one device before the scheduler cancels it ("roughly 0.1 second", its comment).
COST_LIMIT: Final = 1_000_000
#: Nodes of the parse tree one evaluation may visit: about 0.1 s of cel-python.
STEP_BUDGET: Final = 10_000
#: Characters, bytes or elements one value may hold (nested ones and the characters of
#: the strings in a list or map included). A device carries at most 32 attributes and
#: capacities, a string attribute at most 64 bytes: a million is four orders of magnitude
#: above anything a selector reads, and a value this size takes 1 to 8 MiB.
MAX_VALUE_SIZE: Final = 1 << 20

#: cel-go's ``common.SelectAndIdentCost``: reading a variable or a field.
SELECT_AND_IDENT_COST: Final = 1
#: cel-go's ``common.ListCreateBaseCost``.
LIST_CREATE_COST: Final = 10
#: cel-go's ``common.MapCreateBaseCost``.
MAP_CREATE_COST: Final = 30
#: cel-go's ``common.StructCreateBaseCost`` (a message literal).
STRUCT_CREATE_COST: Final = 40
#: cel-go's ``CallCost``: a function or operator of fixed cost.
CALL_COST: Final = 1
#: cel-go's ``common.StringTraversalCostFactor``: per character of a string walked once.
STRING_TRAVERSAL_FACTOR: Final = 0.1
#: cel-go's ``common.RegexStringLengthCostFactor``: per character of a pattern.
REGEX_LENGTH_FACTOR: Final = 0.25
#: Per list element copied by ``+`` (ours: cel-go joins lists without copying them).
ELEMENT_COPY_COST: Final = 1

#: What the comprehension a macro expands to costs once (its accumulator's initial value
#: and its result), in cel-go: ``[]`` and ``__result__`` for map and filter,
#: ``__result__`` for all and exists, ``__result__ == 1`` for exists_one.
FOLD_SETUP: Final = {"map": 11, "filter": 11, "all": 1, "exists": 1, "exists_one": 2}
#: What one iteration costs beyond the macro's own expression: the loop condition and the
#: accumulator's step (``__result__ + [e]`` for map, ``@not_strictly_false(__result__)``
#: and ``__result__ && e`` for all, with ``!`` for exists).
FOLD_ITERATION: Final = {"map": 12, "filter": 1, "all": 3, "exists": 4, "exists_one": 1}
#: More, for an element that filter keeps (``__result__ + [x]``) or exists_one counts.
FOLD_KEPT: Final = {"filter": 12, "exists_one": 1}
#: The loop condition that ends all() or exists() early, once decided.
FOLD_STOP: Final = {"all": 2, "exists": 3}

#: Where a node is in the expression: its start and end offsets.
Span = tuple[int, int]
#: Longest excerpt of the expression a message quotes (as every message quotes input).
_EXCERPT: Final = SHOWN


class Exhausted(BaseException):
    """An evaluation went past one of its bounds; the message names the bound and where.

    A BaseException so that the CEL library's own handlers (macros and logical operators
    turn errors into values) cannot swallow it.
    """


def _sized(value: object) -> bool:
    return isinstance(value, str | bytes | list | dict)


def _kind(value: object) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bytes):
        return "a byte string"
    return "a list" if isinstance(value, list) else "a map"


def _traversal(length: int) -> int:
    return math.ceil(length * STRING_TRAVERSAL_FACTOR)


class Meter:
    """The steps, cost and value sizes of one evaluation, refused past their bounds.

    Why one per evaluation: the scheduler's cost limit applies to one selector on one
    device, and a device is evaluated on its own.
    """

    def __init__(self, expression: str, locate: Callable[[object], Span | None]) -> None:
        # ``locate`` says where a node of the library's parse tree is in ``expression``.
        self.expression = expression
        self.steps = STEP_BUDGET
        self.cost = 0
        self._locate = locate
        self._sizes: dict[int, tuple[object, int]] = {}
        self._nodes: list[object] = []

    # --- where ---------------------------------------------------------------------------

    def enter(self, node: object) -> None:
        """One more node of the parse tree visited; refused past :data:`STEP_BUDGET`.

        Why every node: the walk's time is what the steps bound, and the node entered is
        where a refusal says it stopped.
        """
        self._nodes.append(node)
        self.steps -= 1
        if self.steps < 0:
            self.refuse(f"evaluation exceeded the budget of {STEP_BUDGET} steps for one device")

    def leave(self) -> None:
        """The node entered last is done; why: the next refusal is about its parent."""
        self._nodes.pop()

    def excerpt(self, node: object = None) -> str:
        """The text of ``node`` (or of the innermost node being evaluated that has one), at
        most :data:`~webhooks.k8s.excerpt.SHOWN` characters.

        Why bounded: an expression may be 10 KiB, and a message is one line.
        """
        found = (self._locate(n) for n in ([node] if node is not None else reversed(self._nodes)))
        span = next((s for s in found if s is not None), None)
        if span is None:
            return "the expression"
        text = " ".join(self.expression[span[0] : span[1]].split())
        if len(text) > _EXCERPT:
            text = text[: _EXCERPT - 1] + "…"
        return f"`{text}`"

    def refuse(self, message: str) -> None:
        """Stop the evaluation with ``message``, followed by where it stopped.

        Why an exception: the library is in the middle of a node, and only unwinding the
        whole walk frees what it holds.
        """
        raise Exhausted(f"{message}, at {self.excerpt()}")

    # --- cost ----------------------------------------------------------------------------

    def charge(self, units: int) -> None:
        """Add ``units`` to the cost; refused past :data:`COST_LIMIT`, as the scheduler
        cancels an evaluation the moment its cost passes the limit."""
        self.cost += units
        if self.cost > COST_LIMIT:
            self.refuse(
                f"evaluation exceeded the cost limit of {COST_LIMIT} for one device"
                " (the scheduler's CELSelectorExpressionMaxCost)"
            )

    def operator(self, name: str, args: Sequence[Any]) -> int | None:
        """Charge operator ``name`` (``_+_``, ``_==_``, ...) on ``args`` before it runs.

        Why before: a ``+`` whose result would be over :data:`MAX_VALUE_SIZE` is refused
        unbuilt, so the memory is never taken. Returns the size of the list a ``+``
        builds, for :meth:`remember`.
        """
        if name == "_+_" and len(args) == 2:
            a, b = args
            if isinstance(a, str | bytes) and isinstance(b, str | bytes):
                self.charge(_traversal(len(a) + len(b)))
                self._fits(a, len(a) + len(b), "would build")
                return None
            if isinstance(a, list) and isinstance(b, list):
                self.charge(max(CALL_COST, ELEMENT_COPY_COST * (len(a) + len(b))))
                size = self.size(a) + self.size(b)
                self._fits(a, size, "would build")
                return size
        elif name in {"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"} and len(args) == 2:
            self.charge(self._compare(args[0], args[1]))
            return None
        elif name == "_in_" and len(args) == 2:
            self.charge(max(CALL_COST, self.size(args[1])) if _sized(args[1]) else CALL_COST)
            return None
        self.charge(CALL_COST)
        return None

    def remember(self, value: list[Any], size: int) -> None:
        """``value`` has ``size`` (a concatenation's: its operands' sizes added).

        Why: sizing it again would walk it, a second pass over every element copied.
        """
        self._sizes[id(value)] = (value, size)

    def call(self, name: str, args: Sequence[Any]) -> str | None:
        """Charge function ``name`` on ``args`` (the receiver first) before it runs; the
        reason it must not run, if so (``string()`` of a list or map).

        Why before: the cost of ``matches()`` or ``contains()`` is known from the operands,
        and past the limit the work is never done.
        """
        first = args[0] if args else None
        if name in {"startsWith", "endsWith", "quantity", "isQuantity", "semver", "isSemver"}:
            self.charge(_traversal(len(first)) if isinstance(first, str) else CALL_COST)
        elif name in {"string", "bytes"}:
            if isinstance(first, list | dict):
                return f"{name}: no such overload for {_kind(first)}"
            self.charge(_traversal(len(first)) if isinstance(first, str | bytes) else CALL_COST)
        elif name == "matches" and len(args) == 2 and isinstance(args[1], str):
            text = len(first) if isinstance(first, str) else 1
            self.charge(
                math.ceil((1.0 + text) * STRING_TRAVERSAL_FACTOR)
                * math.ceil(len(args[1]) * REGEX_LENGTH_FACTOR)
            )
        elif name == "contains" and len(args) == 2:
            if isinstance(first, str | bytes) and isinstance(args[1], str | bytes):
                self.charge(_traversal(len(first)) * _traversal(len(args[1])))
            else:
                self.charge(max(CALL_COST, self.size(first)))
        elif name == "min":
            self.charge(max(CALL_COST, self.size(first)))
        else:
            self.charge(CALL_COST)
        return None

    def _compare(self, a: Any, b: Any) -> int:
        if isinstance(a, str | bytes) and isinstance(b, str | bytes):
            return _traversal(min(len(a), len(b)))  # cel-go's, exactly
        if _sized(a) and _sized(b):
            return max(CALL_COST, min(self.size(a), self.size(b)))
        return CALL_COST

    # --- comprehensions ------------------------------------------------------------------

    def fold(self, macro: str) -> None:
        """Charge what the comprehension of ``macro`` costs once, before it iterates.

        Why these four: cel-go expands a macro into a loop with an accumulator, and
        charges its reads and steps like any other; :data:`FOLD_SETUP` and the rest
        count them.
        """
        self.charge(FOLD_SETUP.get(macro, 0))

    def iteration(self, macro: str) -> None:
        """Charge one iteration of ``macro`` beyond its own expression."""
        self.charge(FOLD_ITERATION.get(macro, 0))

    def kept(self, macro: str) -> None:
        """Charge an element that filter keeps or exists_one counts."""
        self.charge(FOLD_KEPT.get(macro, 0))

    def stopped(self, macro: str) -> None:
        """Charge the loop condition that ends all() or exists() once decided."""
        self.charge(FOLD_STOP.get(macro, 0))

    # --- sizes ---------------------------------------------------------------------------

    def size(self, value: object) -> int:
        """How much ``value`` holds: a string's characters, a byte string's bytes, 1 for
        any other scalar; for a list or map the sum over its elements (keys and values),
        each counted at least 1, nested ones included, each as often as it appears. A flat
        list's size is its length, as upstream's.

        Why counted as often as it appears: ``[x, x]`` holds ``x`` once in memory but a
        comparison walks it twice. Remembered per container for the whole evaluation,
        so sizing a new list costs its own length, never its elements' again; counting
        stops past :data:`MAX_VALUE_SIZE`, so sizing costs at most that.
        """
        if isinstance(value, str | bytes):
            return len(value)
        if not isinstance(value, list | dict):
            return 1
        known = self._sizes.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        items: Iterable[Any] = (
            value if isinstance(value, list) else itertools.chain.from_iterable(value.items())
        )
        total = 0
        for item in items:
            if isinstance(item, str | bytes):
                total += len(item) or 1
            elif isinstance(item, list | dict):
                total += self.size(item) or 1
            else:
                total += 1
            if total > MAX_VALUE_SIZE:
                break
        self._sizes[id(value)] = (value, total)  # the value kept, so its id is not reused
        return total

    def check(self, value: object) -> None:
        """Refuse a value over :data:`MAX_VALUE_SIZE` (a node's result, read or built).

        Why every node's: a value built by the library itself (``map()``'s list, a list
        literal) is seen first when its node returns it.
        """
        if _sized(value):
            self._fits(value, self.size(value), "built")

    def _fits(self, value: object, size: int, verb: str) -> None:
        if size <= MAX_VALUE_SIZE:
            return
        if isinstance(value, str | bytes):
            what = f"{size} {'characters' if isinstance(value, str) else 'bytes'}"
        else:  # counting stopped past the limit: a lower bound
            what = f"at least {size} elements and characters"
        self.refuse(
            f"evaluation {verb} {_kind(value)} of {what},"
            f" over the limit of {MAX_VALUE_SIZE} per value"
        )
