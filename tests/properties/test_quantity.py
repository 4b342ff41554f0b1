"""Property tests of quantities: any string or decoded value, any length.

Every input gets a value or a :class:`QuantityError` (never another exception), the same
answer the backtracking expression gave on strings it could finish, a message of bounded
size, and, for long inputs, an answer at all: the strategies build strings of up to a
hundred thousand characters from repeated runs, which the old expression took minutes on.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.k8s.test_quantity import _answer, _backtracking_parse
from webhooks.k8s.excerpt import SHOWN
from webhooks.k8s.quantity import QuantityError, parse_quantity, quantity

#: Every character the grammar reads, and a few it does not.
ALPHABET = "0123456789.+-eEinumkKMGTPx \n٣"
pieces = st.text(alphabet=ALPHABET, max_size=8)


@st.composite
def long_quantities(draw: st.DrawFn) -> str:
    """Short pieces around runs of one character repeated up to 100,000 times."""
    parts = [draw(pieces)]
    for _ in range(draw(st.integers(1, 3))):
        parts.append(draw(st.sampled_from(ALPHABET)) * draw(st.integers(0, 100_000)))
        parts.append(draw(pieces))
    return "".join(parts)


def _bounded(exc: QuantityError) -> None:
    assert len(str(exc)) <= 2 * SHOWN + 200, str(exc)[:300]


@given(st.text(alphabet=ALPHABET, max_size=40))
def test_a_short_string_gets_the_answer_the_backtracking_expression_gave(text: str) -> None:
    assert _answer(parse_quantity, text) == _answer(_backtracking_parse, text)


@given(long_quantities())
def test_a_long_string_gets_a_value_or_a_bounded_refusal(text: str) -> None:
    try:
        value = parse_quantity(text)
    except QuantityError as exc:
        assert exc.value == text
        _bounded(exc)
        return
    assert isinstance(value, Decimal)
    assert value.is_zero() or abs(value) >= Decimal("1e-9")


decoded = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**4000, max_value=10**4400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=ALPHABET, max_size=30),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


@given(decoded)
def test_any_decoded_value_is_a_quantity_or_a_bounded_refusal(value: Any) -> None:
    try:
        quantity(value)
    except QuantityError as exc:
        _bounded(exc)
