"""YAML syntax errors are worded by the reader, the same whichever parser read the text.

Each message keeps the meaning of what kubectl says (go-yaml words them as libyaml does)
in words of the project's own, on one line, at the line to blame. Every case runs on each
parser path (``parser_path``), so a platform with another libyaml, or none, reports the
same line and reason.
"""

from __future__ import annotations

import pytest
import yaml

from webhooks.manifests.decode import decode
from webhooks.manifests.syntax import PREFIX, problem

INDENT = (
    'a mapping value is not allowed here (check the indentation, or quote a value that holds ": ")'
)
TAB = "a tab where YAML expects spaces (YAML indents with spaces only)"
KEY_HERE = "a map key is expected at this indentation"

MISTAKES = [
    ("an unclosed flow sequence", "a: 1\nb: [\n", 3, "a value is missing here"),
    (
        "a flow sequence closed by a brace",
        "a: [1, 2}\n",
        1,
        'a flow sequence is missing a "," or its closing "]"',
    ),
    (
        "a flow mapping closed by a bracket",
        "a: {b: 1]\n",
        1,
        'a flow mapping is missing a "," or its closing "}"',
    ),
    ("a nested value at a deeper indentation", "a: 1\n  b: 2\n", 2, INDENT),
    ("a value that holds a colon and a space", "a: b: c\n", 1, INDENT),
    ("a key at a shallower indentation", "a:\n  b: 1\n c: 2\n", 3, KEY_HERE),
    ("a list item after a map key", "a: b\n- c\n", 2, KEY_HERE),
    ("text after a quoted value", "a: 'b'c\n", 1, KEY_HERE),
    (
        "a map key among list items",
        "a:\n  - b\n  c: d\n",
        3,
        'a "- " list item is expected at this indentation',
    ),
    ("a tab indenting a key", "a:\n\tb: 1\n", 2, TAB),
    ("a tab indenting a block scalar", "a: |\n\tb\n", 2, TAB),
    ("an at sign starting a value", "a: @b\n", 1, '"@" cannot start a YAML token'),
    ("a backtick starting a value", "a: `b\n", 1, '"`" cannot start a YAML token'),
    ("an unclosed double quote", 'a: "abc\n', 2, "a quoted string is not closed"),
    ("an unclosed single quote", "a: 'abc\n", 2, "a quoted string is not closed"),
    (
        "an unknown escape",
        'a: "\\q"\n',
        1,
        "an invalid escape sequence in a double-quoted string",
    ),
    (
        "a hexadecimal escape without its digits",
        'a: "\\xZZ"\n',
        1,
        "an invalid escape sequence in a double-quoted string",
    ),
    ("an undefined tag handle", "a: !x!y b\n", 1, "an undefined tag handle"),
    ("a tag without its closing bracket", "a: !<tag:x\n", 1, "a malformed tag"),
    ("an anchor without a name", "a: & b\n", 1, "a malformed anchor or alias name"),
    (
        "a block scalar with a bad header",
        "a: |x\n  b\n",
        1,
        'a malformed block scalar header ("|" or ">")',
    ),
    (
        "a key without its colon",
        "a: 1\nb\n",
        3,
        'a key is missing its ":" (a key must fit on one line)',
    ),
    (
        "a mapping key indicator inside a value",
        "a: ? b\n",
        1,
        'a "? " mapping key is not allowed here',
    ),
    ("YAML 2.0", "%YAML 2.0\n---\na: 1\n", 1, "only YAML 1.x documents are read"),
    (
        "a duplicate YAML directive",
        "%YAML 1.1\n%YAML 1.1\n---\na\n",
        2,
        "a duplicate %YAML directive",
    ),
    ("a control character", "a: 1\nb: 2\nc: d\x07\n", 3, "character U+0007 is not allowed in YAML"),
]


@pytest.mark.parametrize(
    ("text", "line", "reason"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_a_mistake_is_worded_by_the_reader_on_every_parser_path(
    text: str, line: int, reason: str, parser_path: str
) -> None:
    assert decode(text).error == (line, PREFIX + reason)


def test_a_mistake_the_table_does_not_know_is_still_one_line_of_ours() -> None:
    mark = yaml.Mark("<text>", 4, 1, 2, None, None)
    exc = yaml.scanner.ScannerError(
        "while scanning something new", mark, "found a problem\nover two lines", mark
    )
    line, reason = problem(exc, "a: 1\nb: 2\n")
    assert line == 2
    assert reason == (
        "invalid YAML: the text does not parse here "
        "(found a problem over two lines (while scanning something new))"
    )
