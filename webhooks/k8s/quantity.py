"""Kubernetes resource quantities (``100m``, ``120Mi``, ``1e3``) as exact decimal numbers.

Upstream compares resource lists numerically (apimachinery's semantic equality calls
``Quantity.Cmp``), so ``0.1`` equals ``100m`` and ``1000m`` equals ``1``. Floats would get
that wrong at the edges (``1Ei`` has more digits than a double holds), so values here are
:class:`~decimal.Decimal` objects built without rounding, and comparisons are exact.

The accepted grammar and the value rules are those of ``resource.ParseQuantity``:

- an optional sign, digits with an optional fractional part (``1.``, ``.5`` and even ``.``
  are accepted, as upstream accepts them), then one suffix: a decimal SI suffix
  (``n u m k M G T P E`` or none), a binary one (``Ki Mi Gi Ti Pi Ei``) or a decimal
  exponent (``e3``, ``E-2``, ``e+6``; the exponent must fit in a signed 32-bit scale);
- no whitespace inside the string;
- non-zero values are rounded *away from zero* to a whole number of nano units (``0.1n``
  is ``1n``, so asking for "some" of a resource never becomes zero);
- binary-suffixed values are capped at 2^63 − 1.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Context, Decimal
from typing import Any

from webhooks.k8s.excerpt import show, show_key

#: The expression quoted by upstream's "wrong format" error (its scanner is a little
#: stricter and a little looser than this expression; the message is what users see).
SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
FORMAT_WRONG = f"quantities must match the regular expression '{SPLIT_RE}'"
BAD_SUFFIX = "unable to parse quantity's suffix"
NOT_A_QUANTITY = "must be a string or a number"

#: The shape of a quantity, read in one forward pass: every quantifier is possessive
#: (``*+``, ``?+``) and there is no alternation, so the engine never gives back a character
#: it took and never tries a second way; the time is linear in the length. The greedy
#: expression this replaces retried every split of a digit run between the number and the
#: exponent before failing: ``"1" * 20_000 + "x"`` took 1.3 s, 150,000 digits over a
#: minute, where this takes 0.2 ms. Giving back never helped it either: what follows a
#: maximal run of digits, of suffix letters, or a sign starts with a character none of the
#: later parts can take unless it is the end, so the first (greedy) way was the only way
#: to match, and the accepted strings and the groups read are the same
#: (tests/k8s/test_quantity.py holds the old expression and compares the two).
_SHAPE = re.compile(
    r"(?P<sign>[+-]?+)(?P<whole>[0-9]*+)(?:\.(?P<fraction>[0-9]*+))?+"
    r"(?P<suffix>[eEinumkKMGTP]*+[+-]?+[0-9]*+)"
)
_DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SI = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_EXPONENT = re.compile(r"[eE](?P<exp>[+-]?[0-9]+)")
_MAX_SCALE = 2**31 - 1
_NANO = Decimal("1e-9")
_MAX_BINARY = Decimal(2**63 - 1)


#: The most decimal digits an integer quantity (a bare YAML or JSON number) may have: what
#: Python converts to text at all (``sys.int_info.default_max_str_digits``), past which
#: ``str`` refuses and below which its cost is already quadratic in the digits. The API
#: server's JSON decoding never gives one beyond 64 bits; only a YAML file can.
MAX_INTEGER_DIGITS = 4300
_INTEGER_LIMIT = 10**MAX_INTEGER_DIGITS
TOO_MANY_DIGITS = (
    f"an integer quantity may have at most {MAX_INTEGER_DIGITS} digits (write a longer one "
    "as a string)"
)


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity.

    ``reason`` is upstream's wording (what the API server would answer), ``value`` the
    offending input and ``resource`` the resource name when it came from a resource list,
    so callers can point at the exact field. The message quotes both cut short
    (:mod:`webhooks.k8s.excerpt`): a quantity of megabytes is a valid JSON string, and the
    message ends up in a denial, a log line or a report; ``value`` itself stays whole for
    callers that render it their way.
    """

    def __init__(self, value: Any, reason: str, resource: str = "") -> None:
        where = f"{show_key(resource)}: " if resource else ""
        super().__init__(f"{where}invalid quantity {show(value)}: {reason}")
        self.value = value
        self.reason = reason
        self.resource = resource


def _scale(suffix: str) -> tuple[int, int] | None:
    """(power of ten, power of two) a suffix multiplies by, or ``None`` when it is unknown."""
    if suffix in _DECIMAL_SI:
        return _DECIMAL_SI[suffix], 0
    if suffix in _BINARY_SI:
        return 0, _BINARY_SI[suffix]
    match = _EXPONENT.fullmatch(suffix)
    if match is None:
        return None
    # Recent upstream rejects exponents outside ±MaxInt32 instead of truncating them; the
    # length check keeps int() away from thousands of digits.
    if len(match["exp"].lstrip("+-").lstrip("0")) > 10:
        return None
    exponent = int(match["exp"])
    if abs(exponent) > _MAX_SCALE:
        return None
    return exponent, 0


def parse_quantity(text: str) -> Decimal:
    """Parse one quantity string exactly as ``resource.ParseQuantity`` reads it.

    Why a Decimal: equality must be exact (``100m == 0.1``), and Decimal keeps huge
    exponents such as ``1e2000`` compact where an integer or Fraction would expand them.
    Raises :class:`QuantityError` with upstream's reason for anything else. Values that
    parse are kept in a small cache (a Decimal is immutable): the same few (``250m``,
    ``120Mi``) recur in pod after pod, and parsing one exactly takes a decimal context.
    """
    if not isinstance(text, str):
        raise QuantityError(text, NOT_A_QUANTITY)
    if len(text) > _CACHED_LENGTH:
        return _parse_text(text)
    return _parse_cached(text)


#: The longest quantity whose value is kept in the cache: far more than any real one
#: (``9223372036854775807Ki`` is 21), and a bound of tens of KiB on what the cache holds
#: whatever requests carry.
_CACHED_LENGTH = 40


@functools.lru_cache(maxsize=1024)
def _parse_cached(text: str) -> Decimal:
    return _parse_text(text)


def _parse_text(text: str) -> Decimal:
    """:func:`parse_quantity` of a string; linear in its length (see :data:`_SHAPE`)."""
    match = _SHAPE.fullmatch(text) if text else None
    if match is None:
        raise QuantityError(text, FORMAT_WRONG)
    whole, fraction = match["whole"], match["fraction"] or ""
    scale = _scale(match["suffix"])
    if scale is None:
        raise QuantityError(text, BAD_SUFFIX)
    ten, two = scale
    digits = (whole + fraction).lstrip("0") or "0"
    magnitude = Decimal(f"{digits}E{ten - len(fraction)}")
    if magnitude.is_zero():
        return Decimal(0)
    # Enough precision that no operation below rounds, except the deliberate nano round-up.
    exact = Context(prec=len(digits) + 40, Emax=MAX_EMAX, Emin=MIN_EMIN)
    if two:
        # Exact, so the product keeps the exponent read above (2**two is an integer).
        magnitude = exact.multiply(magnitude, Decimal(2**two))
    if ten - len(fraction) < -9:  # the exponent, known without as_tuple()'s digit tuple
        magnitude = _round_up_to_nano(magnitude, exact)
    if two and magnitude > _MAX_BINARY:
        magnitude = _MAX_BINARY
    return -magnitude if match["sign"] == "-" else magnitude


def _round_up_to_nano(magnitude: Decimal, context: Context) -> Decimal:
    # Values far below a nano (``1e-2000000``) would need a huge quantize; they round to 1n.
    if magnitude < _NANO:
        return _NANO
    return magnitude.quantize(_NANO, rounding=ROUND_UP, context=context)


def quantity(value: Any) -> Decimal:
    """Read a quantity as it appears in a decoded JSON or YAML object.

    Why not just :func:`parse_quantity`: the API server's JSON decoder trims surrounding
    whitespace, accepts bare JSON numbers (``cpu: 1``) and reads ``null`` as zero, and
    objects given to the CLI come straight from YAML, so they are read the same way here.
    """
    if value is None:
        return Decimal(0)
    if isinstance(value, bool):
        raise QuantityError(value, NOT_A_QUANTITY)
    if isinstance(value, int):
        if abs(value) >= _INTEGER_LIMIT:
            raise QuantityError(value, TOO_MANY_DIGITS)
        return parse_quantity(str(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(value, FORMAT_WRONG)
        return parse_quantity(repr(value))
    if isinstance(value, str):
        return parse_quantity(value.strip())
    raise QuantityError(value, NOT_A_QUANTITY)


def parse_resource_list(resources: Mapping[str, Any] | None) -> dict[str, Decimal]:
    """Parse a ResourceList (``{cpu: 250m, memory: 120Mi}``) into exact values by name.

    Why: comparisons and error messages need every entry checked once, with the resource
    name attached to the error. ``None`` is an empty list, as a nil map is upstream.
    """
    if resources is None:
        return {}
    if not isinstance(resources, Mapping):
        raise ValueError(f"a resource list must be a mapping, got {type(resources).__name__}")
    parsed: dict[str, Decimal] = {}
    for name, value in resources.items():
        try:
            parsed[str(name)] = quantity(value)
        except QuantityError as exc:
            raise QuantityError(exc.value, exc.reason, str(name)) from None
    return parsed


def semantically_equal(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Whether two resource lists are equal the way apimachinery's semantic equality sees them.

    Why not ``==``: the same keys must be present on both sides, but values compare as
    numbers, so ``{cpu: 100m}`` equals ``{cpu: "0.1"}``; a nil list equals an empty one.
    Raises :class:`QuantityError` when either side holds something that is not a quantity.
    """
    return parse_resource_list(a) == parse_resource_list(b)
