"""Manifest text read as kubectl reads it.

Every expected value in these tables is what ``kubectl label --local -f FILE x=y -o json``
(kubectl v1.37, which reads files exactly as ``create``/``apply`` do) printed for the same
text, and every refusal is one kubectl refuses too.
"""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.manifests import parser, yamlstream
from webhooks.manifests.decode import decode
from webhooks.manifests.limits import MAX_DEPTH
from webhooks.manifests.scalars import json_number, resolve_plain
from webhooks.manifests.tree import copy_tree, depth

HEAD = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: a\n"


def spec(body: str) -> Any:
    """The ``spec`` of a Widget whose spec is ``body`` (indented by the caller)."""
    decoded = decode(HEAD + "spec:\n" + body)
    assert decoded.error is None, decoded.error
    (raw,) = decoded.documents
    return raw.value["spec"]


def refusal(text: str) -> tuple[int, str]:
    decoded = decode(text)
    assert decoded.error is not None, [raw.value for raw in decoded.documents]
    return decoded.error


SCALARS = [
    ("a leading zero with an 8 or 9 is a float, so 09 is 9", "09", 9),
    ("0o is Go's octal prefix", "0o17", 15),
    ("a leading zero is octal", "017", 15),
    ("sexagesimal is not a number", "1:30", "1:30"),
    ("underscores are dropped", "1_000", 1000),
    ("hexadecimal", "0x1F", 31),
    ("a plus sign", "+1", 1),
    ("a negative binary", "-0b11", -3),
    ("an upper-case binary prefix", "0B11", 3),
    ("an exponent without a point is a float, and integral", "1e3", 1000),
    ("an integral float reaches the API server as an integer", "300.0", 300),
    ("a signed exponent", "1.0e+3", 1000),
    ("a trailing point", "1.", 1),
    ("a fraction", "5e-1", 0.5),
    ("a leading point", ".5", 0.5),
    ("from 1e21 on Go prints an exponent, so it stays a float", "1e21", 1e21),
    ("0.1e22 is 1e21", "0.1e22", 1e21),
    ("a float beyond float64 is a string", "1e400", "1e400"),
    ("a huge integer goes through float64", "123456789012345678901", 123456789012345680000),
    ("uint64 keeps its integer", "9223372036854775808", 9223372036854775808),
    ("minus zero", "-0", 0),
    ("minus zero point zero", "-0.0", 0),
    ("double underscores", "1__0", 10),
    ("an underscore after the octal zero", "0_1", 1),
    ("an underscore after the hex prefix", "0x_1F", 31),
    ("an incomplete exponent is a string", "12e", "12e"),
    ("a timestamp stays a string", "2024-05-01T12:00:00Z", "2024-05-01T12:00:00Z"),
    ("a date stays a string", "2024-05-01", "2024-05-01"),
    ("y is true in go-yaml v2", "y", True),
    ("Yes is true", "Yes", True),
    ("on is true", "on", True),
    ("N is false", "N", False),
    ("off is false", "off", False),
    ("a tilde is null", "~", None),
    ("an empty value is null", "", None),
    ("a bare equals sign is a string", "=", "="),
    ("a quoted word stays a string", "'yes'", "yes"),
    ("a quoted number stays a string", '"300"', "300"),
    ("!!str keeps the text", "!!str 12", "12"),
    ("!!int reads a quoted number", '!!int "12"', 12),
    ("!!float takes an integer", "!!float 1", 1),
    ("an unknown tag keeps the text", "!foo bar", "bar"),
    ("an unknown tag does not resolve a number", "!foo 12", "12"),
    ("!!timestamp keeps the text", "!!timestamp 2024-01-01", "2024-01-01"),
    ("!!binary is decoded", "!!binary aGVsbG8=", "hello"),
]


@pytest.mark.parametrize(("text", "value"), [s[1:] for s in SCALARS], ids=[s[0] for s in SCALARS])
def test_a_scalar_reads_as_kubectl_reads_it(text: str, value: Any) -> None:
    found = spec(f"  v: {text}\n")["v"]
    assert found == value
    assert type(found) is type(value)


KEYS = [
    ("a float key", "1.5", "1.5"),
    ("a timestamp key", "2024-01-01", "2024-01-01"),
    ("an integral float key prints as float32 does", "1e3", "1000"),
    ("a float32 key of a million prints an exponent", "1e6", "1e+06"),
    ("an octal key", "010", "8"),
    ("a boolean key", "y", "true"),
    ("an infinite key keeps YAML's name", ".inf", ".inf"),
    ("a quoted key", "'010'", "010"),
]


@pytest.mark.parametrize(("key", "name"), [k[1:] for k in KEYS], ids=[k[0] for k in KEYS])
def test_every_key_becomes_the_string_kubectl_makes_of_it(key: str, name: str) -> None:
    assert spec(f"  {key}: x\n") == {name: "x"}


def test_merge_keys_apply_in_order_as_go_yaml_v2_applies_them() -> None:
    body = """\
  A: &A {p: 1, q: [1, 2]}
  B: &B {q: b, r: b}
  before:
    q: 3
    <<: *A
  after:
    <<: *A
    q: 3
  seq:
    <<: [*A, *B]
  seqrev:
    <<: [*B, *A]
  inline:
    q: 0
    <<: {q: 9, z: 9}
  twice:
    <<: *A
    <<: *B
  quoted:
    "<<": *A
"""
    found = spec(body)
    assert found["before"] == {"q": [1, 2], "p": 1}, "a key before the merge is overwritten"
    assert found["after"] == {"p": 1, "q": 3}
    assert found["seq"] == {"p": 1, "q": [1, 2], "r": "b"}, "in a list the first map wins"
    assert found["seqrev"] == {"q": "b", "r": "b", "p": 1}
    assert found["inline"] == {"q": 9, "z": 9}
    assert found["twice"] == {"p": 1, "q": "b", "r": "b"}
    assert found["quoted"] == {"<<": {"p": 1, "q": [1, 2]}}, "a quoted << is a plain key"


def test_aliases_are_independent_copies() -> None:
    body = "  labels: &labels {app: web}\n  selector: *labels\n  again: [*labels, *labels]\n"
    found = spec(body)
    found["selector"]["sandbox"] = "gvisor"
    found["again"][0]["x"] = "y"
    assert found["labels"] == {"app": "web"}
    assert found["again"][1] == {"app": "web"}


REFUSED = [
    ("infinity", "  v: .inf\n", 6, ".inf is not a number JSON can carry, so kubectl refuses it"),
    ("NaN in a list", "  v: [.nan]\n", 6, ".nan is not a number JSON can carry"),
    ("a null key", "  ~: x\n", 6, "a map key is null"),
    ("a complex key", "  ? [a, b]\n  : x\n", 6, "a map key is a map or a list"),
    ("a tag that does not fit", "  v: !!int abc\n", 6, 'cannot decode !!str "abc" as a !!int'),
    ("bad base64", "  v: !!binary '%%%'\n", 6, "!!binary value contains invalid base64 data"),
    ("a merge of a scalar", "  x: &s 1\n  m:\n    <<: *s\n", 8, "map merge requires map"),
    ("an unknown anchor", "  v: *nope\n", 6, 'unknown anchor "nope" referenced'),
    ("an anchor inside itself", "  v: &x [*x]\n", 6, 'anchor "x" value contains itself'),
]


@pytest.mark.parametrize(
    ("body", "line", "reason"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED]
)
def test_what_kubectl_refuses_is_refused_at_its_line(body: str, line: int, reason: str) -> None:
    found_line, found_reason = refusal(HEAD + "spec:\n" + body)
    assert found_line == line
    assert found_reason.startswith(reason)


POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {}\n"

STREAMS = [
    ("a comment right after ---", POD.format("a") + "---# note\n" + POD.format("b"), ["a", "b"]),
    ("spaces and a comment", POD.format("a") + "---   # note\n" + POD.format("b"), ["a", "b"]),
    (
        "CRLF line ends",
        (POD.format("a") + "---\n" + POD.format("b")).replace("\n", "\r\n"),
        ["a", "b"],
    ),
    (
        "text after ... is dropped up to the next separator",
        POD.format("a") + "...\n" + POD.format("x") + "---\n" + POD.format("b"),
        ["a", "b"],
    ),
    ("garbage after ... is dropped too", POD.format("a") + "...\nkey: [\n", ["a"]),
    (
        "a JSON stream, objects back to back",
        '{"kind": "Pod", "metadata": {"name": "a"}}{"kind": "Pod", "metadata": {"name": "b"}}',
        ["a", "b"],
    ),
    (
        "a JSON stream, one object a line",
        '{"kind": "Pod", "metadata": {"name": "a"}}\n{"kind": "Pod", "metadata": {"name": "b"}}\n'
        '{"kind": "Pod", "metadata": {"name": "c"}}\n',
        ["a", "b", "c"],
    ),
    (
        "one JSON object, then YAML",
        '{"kind": "Pod", "metadata": {"name": "a"}}\n---\n' + POD.format("b"),
        ["a", "b"],
    ),
    ("flow-style YAML that starts with a brace", "{kind: Pod, metadata: {name: a}}\n", ["a"]),
]


@pytest.mark.parametrize(("text", "names"), [s[1:] for s in STREAMS], ids=[s[0] for s in STREAMS])
def test_a_stream_splits_where_kubectl_splits_it(text: str, names: list[str]) -> None:
    decoded = decode(text)
    assert decoded.error is None
    assert [raw.value["metadata"]["name"] for raw in decoded.documents] == names


SEPARATORS = [
    ("a block scalar after ---", "--- |", 'invalid document separator "--- |"'),
    ("a fourth dash", "----", 'invalid document separator "----"'),
    ("a flow map after ---", "--- {a: 1}", 'invalid document separator "--- {a: 1}"'),
]


@pytest.mark.parametrize(
    ("line", "reason"), [s[1:] for s in SEPARATORS], ids=[s[0] for s in SEPARATORS]
)
def test_a_separator_kubectl_refuses_is_refused_after_the_documents_before_it(
    line: str, reason: str
) -> None:
    decoded = decode(POD.format("a") + line + "\n" + POD.format("b"))
    assert [raw.value["metadata"]["name"] for raw in decoded.documents] == ["a"]
    assert decoded.error is not None
    assert decoded.error[0] == 5
    assert decoded.error[1].startswith(reason)


def test_a_third_json_value_that_fails_is_an_error_with_its_line() -> None:
    text = '{"kind": "Pod"}\n{"kind": "Pod"}\n---\nkind: Pod\n'
    decoded = decode(text)
    assert len(decoded.documents) == 2
    assert decoded.error is not None and decoded.error[0] == 3
    assert decoded.error[1].startswith("invalid JSON: ")


JSON_VALUES = [
    ("an integral float", '{"v": 300.0}', 300),
    ("an exponent", '{"v": 1e3}', 1000),
    ("NaN is not JSON, so the text is read as YAML", '{"v": NaN}', "NaN"),
    ("a lone surrogate becomes U+FFFD", '{"v": "\\ud800x"}', "\ufffdx"),
    ("a surrogate pair is one character", '{"v": "\\ud83d\\ude00"}', "\U0001f600"),
]


@pytest.mark.parametrize(
    ("text", "value"), [j[1:] for j in JSON_VALUES], ids=[j[0] for j in JSON_VALUES]
)
def test_json_values_read_as_kubectl_reads_them(text: str, value: Any) -> None:
    (raw,) = decode(text).documents
    assert raw.value["v"] == value
    assert type(raw.value["v"]) is type(value)


def test_a_json_number_beyond_float64_is_refused() -> None:
    assert decode('{"kind": "Pod",\n "v": 1e400}').error == (
        1,
        "number 1e400 does not fit a float64",
    )


def _flow(levels: int) -> str:
    # The root map is level 1, as Go's encoding/json counts.
    return "a: " + "[" * (levels - 1) + "]" * (levels - 1) + "\n"


def _block(levels: int) -> str:
    return "".join("  " * i + "a:\n" for i in range(levels - 1)) + "  " * (levels - 1) + "x: 1\n"


def _compact(levels: int) -> str:
    # Block sequences nested on one line ("- - - x"): block style in text linear in depth.
    return "- " * levels + "x\n"


@pytest.mark.parametrize("shape", [_flow, _compact], ids=["flow style", "compact block style"])
def test_ten_thousand_levels_are_read_and_one_more_is_refused(shape: Any, parser_path: str) -> None:
    (raw,) = decode(shape(MAX_DEPTH)).documents
    assert depth(raw.value) == MAX_DEPTH
    line, reason = refusal(shape(MAX_DEPTH + 1))
    assert reason == "exceeded max depth of 10000"
    assert line >= 1


@pytest.mark.skipif(parser.FAST is None, reason="no libyaml: 100 MB of indentation takes minutes")
def test_ten_thousand_indented_levels_are_read_and_one_more_is_refused() -> None:
    # 100 MB of indentation: libyaml reads it in about a second; the pure-Python parser,
    # a microsecond a character, is held to the 1,500 levels below instead.
    (raw,) = decode(_block(MAX_DEPTH)).documents
    assert depth(raw.value) == MAX_DEPTH
    line, reason = refusal(_block(MAX_DEPTH + 1))
    assert (line, reason) == (MAX_DEPTH + 1, "exceeded max depth of 10000")


def test_indented_levels_past_libyamls_own_limit_are_read(parser_path: str) -> None:
    (raw,) = decode(_block(1500)).documents
    assert depth(raw.value) == 1500


def test_thirty_thousand_levels_are_refused_without_a_crash(parser_path: str) -> None:
    assert refusal("a: " + "[" * 30_000 + "]" * 30_000) == (1, "exceeded max depth of 10000")


def test_deep_json_is_read_past_pythons_recursion_limit(parser_path: str) -> None:
    text = '{"a": ' * 3000 + "1" + "}" * 3000
    (raw,) = decode(text).documents
    assert depth(raw.value) == 3000
    assert refusal('{"a": ' * 10_001 + "1" + "}" * 10_001)[1] == "exceeded max depth of 10000"


def test_documents_before_a_deep_one_are_read_once_whichever_parser_reads_it(
    parser_path: str,
) -> None:
    text = "kind: A\n---\nkind: B\n---\n" + _flow(MAX_DEPTH) + "---\nkind: C\n"
    decoded = decode(text)
    assert decoded.error is None
    kinds = [raw.value.get("kind") for raw in decoded.documents]
    assert kinds == ["A", "B", None, "C"]
    assert [raw.index for raw in decoded.documents] == [0, 1, 2, 3]
    assert [raw.line for raw in decoded.documents] == [1, 3, 5, 7]


def _bomb(levels: int) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i, name in enumerate("bcdefghi"[:levels]):
        previous = "abcdefghi"[i]
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_without_expanding_it(monkeypatch: pytest.MonkeyPatch) -> None:
    copied: list[int] = []

    def counting(value: Any) -> Any:
        copied.append(len(value))
        return copy_tree(value)

    monkeypatch.setattr(yamlstream, "copy_tree", counting)
    line, reason = refusal(_bomb(8))
    assert reason.startswith("document contains excessive aliasing")
    assert 1 <= line <= 9
    # Expanded, the bomb is 9**9 strings; it is refused from the counts long before that.
    assert sum(copied) < 1000, copied


def test_moderate_aliasing_is_read_as_go_yaml_allows_it() -> None:
    # Three levels of nine: 729 copies of "lol" from 45 written nodes; go-yaml allows 99%.
    (raw,) = decode(_bomb(2)).documents
    assert len(raw.value["c"]) == 9
    assert raw.value["c"][0] == raw.value["b"]
    assert raw.value["c"][0] is not raw.value["b"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(300.0, 300), (-0.0, 0), (0.5, 0.5), (1e21, 1e21), (2.0**60, 1152921504606847000)],
    ids=[
        "integral",
        "negative zero",
        "a fraction",
        "1e21 keeps its exponent",
        "beyond 2**53, the digits Go prints",
    ],
)
def test_json_number(value: float, expected: float) -> None:
    assert json_number(value) == expected
    assert type(json_number(value)) is type(expected)


def test_resolve_plain_leaves_ordinary_words_alone() -> None:
    assert resolve_plain("nginx") == "nginx"
    assert resolve_plain("true") is True
    assert resolve_plain("<<") != "<<", "a plain << is the merge key"


@pytest.mark.parametrize(
    ("aliases", "refused"), [(97, False), (98, True)], ids=["97 aliases pass", "98 are refused"]
)
def test_the_aliasing_limit_falls_exactly_where_kubectls_does(aliases: int, refused: bool) -> None:
    # An anchor of 4,041 nodes aliased n times: kubectl v1.37 reads 97 and refuses 98, where
    # the expanded document passes 400,000 nodes and go-yaml's allowed ratio starts to fall.
    anchor = "".join(f"    k{i}: [" + ",".join(["x"] * 100) + "]\n" for i in range(40))
    text = HEAD + "spec:\n  base: &b\n" + anchor + "  uses:\n" + "  - *b\n" * aliases
    decoded = decode(text)
    assert (decoded.error is not None) is refused
    if refused:
        assert decoded.error is not None and decoded.error[1].startswith(
            "document contains excessive aliasing"
        )
    else:
        (raw,) = decoded.documents
        assert len(raw.value["spec"]["uses"]) == aliases
