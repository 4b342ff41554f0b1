"""YAML syntax errors in the reader's own words: one line, the line to blame, kubectl's meaning.

Why not the parser's message: which parser reads a text depends on the platform (libyaml's,
or PyYAML's pure-Python one behind it, :mod:`.parser`), and the two word the same mistake
differently ("did not find expected key" and "expected <block end>, but found '-'") over
several lines with marks of their own. A CI log must say the same thing on every machine,
so each mistake a person makes gets one message here, with the meaning of what kubectl
says (go-yaml is a port of libyaml). A mistake that is not in the table still gets one
line of ours, with the parser's words after it as a hint.
"""

from __future__ import annotations

import re

import yaml

from webhooks.manifests.errors import show

#: Every message starts so: ``file:line: invalid YAML: reason``.
PREFIX = "invalid YAML: "

#: What the parser said (problem, then context, as ``problem | context``) to our words.
#: Each pattern matches both parsers' wording of one mistake; the first match wins.
MISTAKES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), reason)
    for pattern, reason in (
        (r"tab character", "a tab where YAML expects spaces (YAML indents with spaces only)"),
        (
            r"^mapping values are not allowed",
            "a mapping value is not allowed here (check the indentation, or quote a value "
            'that holds ": ")',
        ),
        (r"^mapping keys are not allowed", 'a "? " mapping key is not allowed here'),
        (r"^block sequence entries are not allowed", 'a "- " list item is not allowed here'),
        (r"expected ',' or '\]'", 'a flow sequence is missing a "," or its closing "]"'),
        (r"expected ',' or '\}'", 'a flow mapping is missing a "," or its closing "}"'),
        (r"expected (the )?node content", "a value is missing here"),
        (
            r"(did not find expected key|^expected <block end>).*\| while parsing a block mapping",
            "a map key is expected at this indentation",
        ),
        (
            r"(expected '-' indicator|^expected <block end>).*\| while parsing a block collection",
            'a "- " list item is expected at this indentation',
        ),
        (r"could not find expected ':'", 'a key is missing its ":" (a key must fit on one line)'),
        (r"end of stream.*\| while scanning a quoted scalar", "a quoted string is not closed"),
        (r"escape|hexa?decimal", "an invalid escape sequence in a double-quoted string"),
        (r"undefined tag handle", "an undefined tag handle"),
        (r"\| while (parsing|scanning) a tag", "a malformed tag"),
        (r"\| while scanning an? (anchor|alias)", "a malformed anchor or alias name"),
        (r"\| while scanning a block scalar", 'a malformed block scalar header ("|" or ">")'),
        (r"incompatible YAML document", "only YAML 1.x documents are read"),
        (r"duplicate %?YAML directive", "a duplicate %YAML directive"),
        (r"\| while scanning a directive", "a malformed directive"),
        (r"document start", 'a new document must start with "---"'),
    )
)


def problem(exc: yaml.YAMLError, text: str) -> tuple[int, str]:
    """A parser's error as ``(line, reason)``: the 1-based line to blame and our one line.

    Why ``text`` too: a refused character is named from the text itself (libyaml does not
    say which it was), and a reader error carries an offset rather than a line.
    """
    if isinstance(exc, yaml.reader.ReaderError):
        # libyaml counts bytes to the refused character; the pure-Python reader characters.
        before = text[: exc.position] if exc.encoding == "unicode" else None
        if before is None:
            line = text.encode("utf-8", "replace")[: exc.position].count(b"\n") + 1
        else:
            line = before.count("\n") + 1
        char = exc.character if isinstance(exc.character, int) else ord(exc.character or "\0")
        return line, f"{PREFIX}character U+{char:04X} is not allowed in YAML"
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    said = str(getattr(exc, "problem", None) or exc)
    context = getattr(exc, "context", None)
    line = mark.line + 1 if mark is not None else 0
    found = _character(text, mark)
    if found == "\t":
        return line, PREFIX + MISTAKES[0][1]
    if "cannot start any token" in said:
        return line, f"{PREFIX}{show(found or '?')} cannot start a YAML token"
    words = f"{said} | {context or ''}"
    for pattern, reason in MISTAKES:
        if pattern.search(words):
            return line, PREFIX + reason
    hint = " ".join(f"{said} ({context})".split()) if context else " ".join(said.split())
    return line, f"{PREFIX}the text does not parse here ({hint})"


def _character(text: str, mark: yaml.Mark | None) -> str | None:
    """The character a mark points at, found by line and column (both parsers agree on them)."""
    if mark is None:
        return None
    start = 0
    for _ in range(mark.line):
        start = text.find("\n", start) + 1
        if start == 0:
            return None
    at = start + mark.column
    return text[at] if at < len(text) and text[at] != "\n" else None
