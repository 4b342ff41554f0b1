"""Quantities parse to exact numbers as apimachinery's ParseQuantity reads them."""

from __future__ import annotations

import re
from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Context, Decimal
from re import _constants, _parser  # type: ignore[attr-defined]
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhooks.k8s.excerpt import SHOWN
from webhooks.k8s.quantity import (
    _SHAPE,
    BAD_SUFFIX,
    FORMAT_WRONG,
    MAX_INTEGER_DIGITS,
    NOT_A_QUANTITY,
    TOO_MANY_DIGITS,
    QuantityError,
    _parse_cached,
    parse_quantity,
    parse_resource_list,
    quantity,
    semantically_equal,
)

MAX_INT64 = Decimal(2**63 - 1)

PARSED: list[tuple[str, str, Decimal]] = [
    ("zero is zero", "0", Decimal(0)),
    ("zero with a suffix is zero", "0Ki", Decimal(0)),
    ("a bare integer", "1", Decimal(1)),
    ("nano", "5n", Decimal("5e-9")),
    ("micro", "4u", Decimal("4e-6")),
    ("milli", "3m", Decimal("0.003")),
    ("kilo is lower case", "8k", Decimal(8000)),
    ("mega", "7M", Decimal(7_000_000)),
    ("giga", "6G", Decimal(6 * 10**9)),
    ("tera", "5T", Decimal(5 * 10**12)),
    ("peta", "2P", Decimal(2 * 10**15)),
    ("exa", "1E", Decimal(10**18)),
    ("kibi", "1Ki", Decimal(1024)),
    ("mebi", "7Mi", Decimal(7 * 2**20)),
    ("gibi", "6Gi", Decimal(6 * 2**30)),
    ("tebi", "5Ti", Decimal(5 * 2**40)),
    ("pebi", "4Pi", Decimal(4 * 2**50)),
    ("exbi", "3Ei", Decimal(3 * 2**60)),
    ("a lower-case decimal exponent", "1e3", Decimal(1000)),
    ("an upper-case decimal exponent", "1E6", Decimal(10**6)),
    ("a negative exponent", "1E-3", Decimal("0.001")),
    ("an exponent with a plus sign", "1.3E+6", Decimal(1_300_000)),
    ("a fractional mantissa with an exponent", "0.5e-2", Decimal("0.005")),
    ("a fractional part", "0.1", Decimal("0.1")),
    ("a fractional part with no integer part", ".5", Decimal("0.5")),
    ("a fractional part with a suffix", "100.035k", Decimal(100035)),
    ("a fractional binary value", "100.035Ki", Decimal("102435.84")),
    ("half a mebibyte", "0.5Mi", Decimal(524288)),
    ("a trailing dot", "1.", Decimal(1)),
    ("a trailing dot before a suffix", "1.G", Decimal(10**9)),
    ("a lone dot is zero, as upstream accepts it", ".", Decimal(0)),
    ("a lone sign is zero, as upstream accepts it", "-", Decimal(0)),
    ("a leading plus", "+1.5", Decimal("1.5")),
    ("a negative value", "-100m", Decimal("-0.1")),
    ("leading zeros", "007", Decimal(7)),
    ("a value below a nano rounds up to one nano", "0.0000000001", Decimal("1e-9")),
    ("a fraction of a nano rounds up", "3.001n", Decimal("4e-9")),
    ("an exponent below nano rounds up", "1.1E-9", Decimal("2e-9")),
    ("sub-nano digits round up", "0.00000012354", Decimal("124e-9")),
    ("a tiny binary value rounds up to nanos", "0.000000000001Ki", Decimal("2e-9")),
    ("negative values round away from zero", "-3.001n", Decimal("-4e-9")),
    ("an absurdly small value is one nano", "1e-2147483647", Decimal("1e-9")),
    ("binary values are capped at 2^63-1", "9Ei", MAX_INT64),
    ("a huge binary value is capped too", "9223372036854775807Ki", MAX_INT64),
    ("decimal SI values are not capped", "12E", Decimal(12 * 10**18)),
    ("the largest exponent stays exact", "1e2147483647", Decimal("1e2147483647")),
    ("an exponent with leading zeros", "1e0000000000003", Decimal(1000)),
    ("thousands of digits stay exact", "1" * 5000 + "m", Decimal("1" * 5000 + "e-3")),
]


@pytest.mark.parametrize(
    ("text", "value"), [(t, v) for _, t, v in PARSED], ids=[i for i, _, _ in PARSED]
)
def test_a_quantity_parses_to_its_exact_value(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


INVALID: list[tuple[str, str, str]] = [
    ("the empty string", "", FORMAT_WRONG),
    ("two dots", "1.1.M", FORMAT_WRONG),
    ("a sign in the middle", "1+1.0M", FORMAT_WRONG),
    ("a binary milli suffix", "0.1mi", BAD_SUFFIX),
    ("a letter outside the suffix alphabet", "0.1am", FORMAT_WRONG),
    ("a word", "aoeu", FORMAT_WRONG),
    ("a bare i suffix", "1i", BAD_SUFFIX),
    ("a bare i suffix after a fraction", ".5i", BAD_SUFFIX),
    ("a negative bare i suffix", "-3.01i", BAD_SUFFIX),
    ("an exponent with no digits", "-3.01e-", BAD_SUFFIX),
    ("a lone lower-case e", "1e", BAD_SUFFIX),
    ("an upper-case K (only Ki is binary)", "1K", BAD_SUFFIX),
    ("an exponent beyond MaxInt32", "1e2147483648", BAD_SUFFIX),
    ("an exponent of MinInt32", "1e-2147483648", BAD_SUFFIX),
    ("an exponent that would wrap to 1 in 32 bits", "1e4294967297", BAD_SUFFIX),
    ("an exponent thousands of digits long", "1e" + "9" * 5000, BAD_SUFFIX),
    ("a fractional exponent", "1e3.5", FORMAT_WRONG),
    ("leading whitespace", " 1", FORMAT_WRONG),
    ("trailing whitespace", "1 ", FORMAT_WRONG),
    ("a trailing newline", "1\n", FORMAT_WRONG),
    ("non-ASCII digits", "١٢", FORMAT_WRONG),
]


@pytest.mark.parametrize(
    ("text", "reason"), [(t, r) for _, t, r in INVALID], ids=[i for i, _, _ in INVALID]
)
def test_an_invalid_quantity_is_a_value_error_with_upstreams_reason(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match="invalid quantity") as caught:
        parse_quantity(text)
    assert isinstance(caught.value, QuantityError)
    assert caught.value.reason == reason
    assert caught.value.value == text


def test_the_format_message_quotes_upstreams_expression() -> None:
    assert FORMAT_WRONG == (
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


JSON_VALUES: list[tuple[str, Any, Decimal]] = [
    ("a JSON integer", 2, Decimal(2)),
    ("a JSON float", 0.5, Decimal("0.5")),
    ("a JSON float in exponent form", 1e-07, Decimal("1e-7")),
    ("a string with surrounding whitespace is trimmed", "  250m\n", Decimal("0.25")),
    ("null is zero, as the API server decodes it", None, Decimal(0)),
]


@pytest.mark.parametrize(
    ("value", "expected"), [(v, e) for _, v, e in JSON_VALUES], ids=[i for i, _, _ in JSON_VALUES]
)
def test_decoded_json_values_read_as_the_api_server_reads_them(
    value: Any, expected: Decimal
) -> None:
    assert quantity(value) == expected


@pytest.mark.parametrize(
    "value",
    [True, [1], {"a": 1}, float("nan"), float("inf")],
    ids=["a boolean", "a list", "a mapping", "NaN", "infinity"],
)
def test_values_that_are_not_quantities_are_refused(value: Any) -> None:
    with pytest.raises(QuantityError):
        quantity(value)


def test_a_non_string_given_to_the_strict_parser_is_refused() -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(1)  # type: ignore[arg-type]
    assert caught.value.reason == NOT_A_QUANTITY


EQUAL: list[tuple[str, Any, Any, bool]] = [
    ("100m equals 0.1", {"cpu": "100m"}, {"cpu": "0.1"}, True),
    ("1000m equals 1", {"cpu": "1000m"}, {"cpu": "1"}, True),
    ("a string equals the same JSON number", {"cpu": "1"}, {"cpu": 1}, True),
    ("1Gi equals 1024Mi", {"memory": "1Gi"}, {"memory": "1024Mi"}, True),
    ("120Mi equals its byte count", {"memory": "120Mi"}, {"memory": "125829120"}, True),
    ("1e3 equals 1k", {"cpu": "1e3"}, {"cpu": "1k"}, True),
    ("1G is not 1Gi", {"memory": "1G"}, {"memory": "1Gi"}, False),
    ("10 is not 100m", {"cpu": "10"}, {"cpu": "100m"}, False),
    (
        "a resource missing on one side is unequal",
        {"cpu": "100m"},
        {"cpu": "100m", "memory": "1"},
        False,
    ),
    ("a resource only on the left is unequal", {"cpu": "1", "gpu": "0"}, {"cpu": "1"}, False),
    ("nil equals an empty list", None, {}, True),
    ("nil is not a non-empty list", None, {"cpu": "0"}, False),
    (
        "several resources compare one by one",
        {"cpu": "250m", "memory": "120Mi"},
        {"memory": "0.1171875Gi", "cpu": "0.25"},
        True,
    ),
]


@pytest.mark.parametrize(
    ("a", "b", "equal"), [(a, b, e) for _, a, b, e in EQUAL], ids=[i for i, *_ in EQUAL]
)
def test_resource_lists_compare_numerically(a: Any, b: Any, equal: bool) -> None:
    assert semantically_equal(a, b) is equal
    assert semantically_equal(b, a) is equal


def test_a_bad_entry_names_its_resource() -> None:
    with pytest.raises(QuantityError, match=r'^memory: invalid quantity "12 Mi"') as caught:
        semantically_equal({"cpu": "1", "memory": "12 Mi"}, {"cpu": "1"})
    assert caught.value.resource == "memory"


def test_a_resource_list_must_be_a_mapping() -> None:
    with pytest.raises(ValueError, match="must be a mapping"):
        parse_resource_list(["cpu"])  # type: ignore[arg-type]


# --- one linear pass: the same answers as the backtracking expression, on every input ---------

#: The expression quantities were read with before: greedy quantifiers that give back, so a
#: long digit run failing at its end was retried at every split (quadratic).
BACKTRACKING = re.compile(
    r"(?P<sign>[+-]?)(?P<whole>[0-9]*)(?:\.(?P<fraction>[0-9]*))?"
    r"(?P<suffix>[eEinumkKMGTP]*[+-]?[0-9]*)"
)


def _backtracking_parse(text: str) -> Decimal:
    """The parser as it was (the greedy expression), kept to compare answers with."""
    match = BACKTRACKING.fullmatch(text) if text else None
    if match is None:
        raise QuantityError(text, FORMAT_WRONG)
    whole, fraction = match["whole"], match["fraction"] or ""
    suffix = match["suffix"]
    ten, two = 0, 0
    binary = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
    decimal = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
    exponent = re.fullmatch(r"[eE](?P<exp>[+-]?[0-9]+)", suffix)
    if suffix in decimal:
        ten = decimal[suffix]
    elif suffix in binary:
        two = binary[suffix]
    elif (
        exponent is None
        or len(exponent["exp"].lstrip("+-").lstrip("0")) > 10
        or abs(int(exponent["exp"])) > 2**31 - 1
    ):
        raise QuantityError(text, BAD_SUFFIX)
    else:
        ten = int(exponent["exp"])
    digits = (whole + fraction).lstrip("0") or "0"
    magnitude = Decimal(f"{digits}E{ten - len(fraction)}")
    if magnitude.is_zero():
        return Decimal(0)
    exact = Context(prec=len(digits) + 40, Emax=MAX_EMAX, Emin=MIN_EMIN)
    if two:
        magnitude = exact.multiply(magnitude, Decimal(2**two))
    if int(magnitude.as_tuple().exponent) < -9:
        nano = Decimal("1e-9")
        magnitude = nano if magnitude < nano else magnitude.quantize(nano, ROUND_UP, context=exact)
    if two and magnitude > Decimal(2**63 - 1):
        magnitude = Decimal(2**63 - 1)
    return -magnitude if match["sign"] == "-" else magnitude


def _answer(parse: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", parse(text)
    except QuantityError as exc:
        return "refused", exc.reason


#: Strings shaped like quantities: every character the grammar reads, and a few it does not.
quantity_shaped = st.text(alphabet="0123456789.+-eEinumkKMGTPx ", max_size=24)


@settings(max_examples=2000, derandomize=True, deadline=None, database=None)
@given(quantity_shaped)
def test_every_string_gets_the_answer_the_backtracking_expression_gave(text: str) -> None:
    assert _answer(parse_quantity, text) == _answer(_backtracking_parse, text)
    shape, old = _SHAPE.fullmatch(text), BACKTRACKING.fullmatch(text)
    assert (shape and shape.groupdict()) == (old and old.groupdict())


@pytest.mark.parametrize(
    "text",
    [t for _, t, _ in PARSED] + [t for _, t, _ in INVALID],
    ids=[i for i, *_ in PARSED + INVALID],
)
def test_the_tables_get_the_answers_the_backtracking_expression_gave(text: str) -> None:
    assert _answer(parse_quantity, text) == _answer(_backtracking_parse, text)


#: The repeats of a parsed expression (their last argument is what they repeat).
_NESTING = (_constants.POSSESSIVE_REPEAT, _constants.MAX_REPEAT, _constants.MIN_REPEAT)


def _backtracking_nodes(pattern: Any) -> list[str]:
    """The parts of a parsed expression that can give back or try another way."""
    found = []
    for op, argument in pattern:
        if op in (_constants.MAX_REPEAT, _constants.MIN_REPEAT, _constants.BRANCH):
            found.append(str(op))
        if op in (*_NESTING, _constants.SUBPATTERN):
            found.extend(_backtracking_nodes(argument[-1]))
        elif op == _constants.ATOMIC_GROUP:
            found.extend(_backtracking_nodes(argument))
    return found


def test_the_shape_is_read_in_one_pass_with_nothing_to_give_back() -> None:
    # Every quantifier possessive and no alternation: the engine never backtracks, so the
    # time is linear in the length (the greedy form took 1.3 s on 20,000 digits and a "x").
    assert _backtracking_nodes(_parser.parse(_SHAPE.pattern)) == []


LONG: list[tuple[str, str, Decimal]] = [
    ("a hundred thousand digits", "7" * 100_000, Decimal("7" * 100_000)),
    ("a long fraction rounds up to the nano", "0." + "3" * 100_000, Decimal("0.333333334")),
    ("a long binary value is capped", "9" * 100_000 + "Ki", MAX_INT64),
    ("a long run of zeros before a digit", "0." + "0" * 100_000 + "1", Decimal("1e-9")),
    (
        "a long value with the largest exponent",
        "5" * 10_000 + "e2147483647",
        Decimal("5" * 10_000 + "e2147483647"),
    ),
]


@pytest.mark.parametrize(("text", "value"), [(t, v) for _, t, v in LONG], ids=[i for i, *_ in LONG])
def test_long_quantities_keep_their_exact_value(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


REFUSED_LONG: list[tuple[str, str, str]] = [
    ("digits then a letter outside the grammar", "1" * 150_000 + "x", FORMAT_WRONG),
    ("digits with a sign in the middle", "1" * 150_000 + "+" + "1" * 150_000 + "-", FORMAT_WRONG),
    ("an exponent of a hundred thousand digits", "1e" + "9" * 100_000, BAD_SUFFIX),
    ("a long run of suffix letters", "1" + "m" * 100_000, BAD_SUFFIX),
]


@pytest.mark.parametrize(
    ("text", "reason"), [(t, r) for _, t, r in REFUSED_LONG], ids=[i for i, *_ in REFUSED_LONG]
)
def test_a_long_refusal_quotes_a_bounded_excerpt_and_keeps_the_value(
    text: str, reason: str
) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert caught.value.reason == reason
    assert caught.value.value == text
    message = str(caught.value)
    assert len(message) <= SHOWN + len(reason) + 40, message
    assert message.startswith(f'invalid quantity "{text[: SHOWN // 2]}')
    assert "…" in message


def test_a_long_resource_name_is_cut_in_the_message_too() -> None:
    name = "example.com/" + "r" * 10_000
    with pytest.raises(QuantityError) as caught:
        parse_resource_list({name: "x" * 10_000})
    assert caught.value.resource == name
    assert len(str(caught.value)) < 400


def test_an_integer_too_long_to_print_is_refused_with_the_limit() -> None:
    with pytest.raises(QuantityError) as caught:
        quantity(10**MAX_INTEGER_DIGITS)
    assert caught.value.reason == TOO_MANY_DIGITS
    assert str(MAX_INTEGER_DIGITS) in str(caught.value)
    assert quantity(10 ** (MAX_INTEGER_DIGITS - 1)) == Decimal(10 ** (MAX_INTEGER_DIGITS - 1))


def test_long_quantities_are_parsed_but_not_kept() -> None:
    # A memo of 1024 values holding quantities of megabytes is gigabytes.
    before = _parse_cached.cache_info().currsize
    for i in range(20):
        parse_quantity(f"{i}" + "1" * 10_000)
    assert _parse_cached.cache_info().currsize == before
