"""Numbers of any length, bytes that are not text, and keys written twice, in the decoders.

A number's digits are read as go-yaml v2 and Go's ``encoding/json`` read them, without ever
asking Python for an integer of thousands of digits (refused past 4,300, and quadratic in
the digits below). The strict modes are those of a Kubernetes component reading its own
configuration file: bytes that are not UTF-8 refused at their line, and a key written
twice in one map refused at the second (config files use them; manifests do not).
"""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.manifests.decode import decode
from webhooks.manifests.encoding import text_of
from webhooks.manifests.errors import Refused
from webhooks.manifests.raw import Raw
from webhooks.manifests.yamlstream import read_yaml

DIGITS = "9" * 5000

NUMBERS: list[tuple[str, str, Any]] = [
    ("a plain 5,000-digit integer stays text, as go-yaml leaves it", f"a: {DIGITS}", DIGITS),
    ("a negative one too", f"a: -{DIGITS}", f"-{DIGITS}"),
    ("the largest uint64 is still a number", "a: 18446744073709551615", 2**64 - 1),
    (
        "one past it is a float64, sent as Go prints it",
        "a: 18446744073709551616",
        18446744073709552000,
    ),
    ("a 22-digit integer is a float64", "a: 1000000000000000000000", 1e21),
    ("a 5,000-digit hexadecimal integer stays text", f"a: 0x{DIGITS}", f"0x{DIGITS}"),
    (
        "a JSON integer past int64 is a float64, as Go decodes it",
        '{"a": 9223372036854775808}',
        9223372036854776000,
    ),
    ("a JSON integer inside int64 stays exact", '{"a": -9223372036854775808}', -(2**63)),
]


@pytest.mark.parametrize(("text", "value"), [n[1:] for n in NUMBERS], ids=[n[0] for n in NUMBERS])
def test_numbers_of_any_length_decode_as_go_decodes_them(text: str, value: Any) -> None:
    decoded = decode(text)
    assert decoded.error is None
    assert decoded.documents[0].value == {"a": value}


REFUSED_NUMBERS = [
    pytest.param(f'{{"a": {DIGITS}}}', "does not fit a float64", id="a 5,000-digit JSON integer"),
    pytest.param(f"a: !!int {DIGITS}", "as a !!int", id="a 5,000-digit integer tagged !!int"),
]


@pytest.mark.parametrize(("text", "reason"), REFUSED_NUMBERS)
def test_numbers_no_64_bit_value_holds_are_refused_where_go_refuses_them(
    text: str, reason: str
) -> None:
    decoded = decode(text)
    assert decoded.error is not None
    assert reason in decoded.error[1]
    assert len(decoded.error[1]) < 200


ENCODINGS = [
    pytest.param(b"a: 1\nb: caf\xe9\n", 2, "not UTF-8 text: byte 0xE9", id="Latin-1 on line 2"),
    pytest.param(b"\x80", 1, "not UTF-8 text: byte 0x80", id="a lone continuation byte"),
    pytest.param(b"ok: \xf0\x9f\x98", 1, "not UTF-8 text: bytes 0xF0 0x9F 0x98", id="a cut emoji"),
    pytest.param(b"\xff\xfea\x00\n\x00\x00\xd8", 2, "not UTF-16 text", id="a lone surrogate"),
]


@pytest.mark.parametrize(("data", "line", "reason"), ENCODINGS)
def test_strict_decoding_refuses_bytes_that_are_not_text_at_their_line(
    data: bytes, line: int, reason: str
) -> None:
    assert "\ufffd" in text_of(data)  # kubectl's reading replaces them
    with pytest.raises(Refused) as refused:
        text_of(data, strict=True)
    assert (refused.value.line, refused.value.reason[: len(reason)]) == (line, reason)


def _strict(text: str) -> list[Any]:
    found: list[Raw] = []
    read_yaml(text, 0, found.append, strict=True)
    return [raw.value for raw in found]


DUPLICATES = [
    pytest.param("a: 1\nb: 2\na: 3\n", 3, "a", id="a top-level key"),
    pytest.param("x:\n  - {k: 1, k: 2}\n", 2, "k", id="a key in a flow map in a list"),
    pytest.param("1: a\n1.0: b\n", 2, "1", id="two keys that become the same string"),
    pytest.param("y: a\ntrue: b\n", 2, "true", id="y and true, both the key true"),
    pytest.param('{"a": 1, "a": 2}', 1, "a", id="JSON is read as YAML"),
    pytest.param("a: 1\n<<: {a: 2}\n", 2, "a", id="a merge over a key written before it"),
    pytest.param(
        "b: &b {a: 1}\nx: {<<: *b, a: 2, a: 3}\n", 2, "a", id="a merged key written twice"
    ),
]


@pytest.mark.parametrize(("text", "line", "key"), DUPLICATES)
def test_strict_reading_refuses_a_key_written_twice_at_the_second(
    text: str, line: int, key: str
) -> None:
    with pytest.raises(Refused) as refused:
        _strict(text)
    assert (refused.value.line, refused.value.reason) == (line, f'key "{key}" already set in map')
    assert decode(text).error is None  # kubectl's reading keeps the last


def test_strict_reading_lets_a_written_key_override_a_merged_one() -> None:
    text = "base: &b {a: 1, c: 3}\nx:\n  <<: *b\n  a: 2\n"
    assert _strict(text) == [{"base": {"a": 1, "c": 3}, "x": {"a": 2, "c": 3}}]
