"""The line of a field in a document: ``spec.tolerations[2].key`` to the line that writes it.

Why an index built from the parser's events rather than a composed node tree: composing
recurses (in C, and crashes near 30,000 levels), and keeping node trees of thousands of
documents alive makes the garbage collector walk them again and again. An index is built
only for a document that has a finding, from its own text, without recursion, by the
parser that reads the document (:mod:`.parser`), so it reaches every depth the reader does.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from typing import Any

import yaml
from yaml import events

from webhooks.manifests import parser

#: Per key or list position: ``[0-based line, index of its value or None]``.
Index = dict[Any, list[Any]]

_TOKEN_RE = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")


def parse_field(path: str) -> list[str | int]:
    """Split an upstream field path into keys and indexes: ``a.b[2][x/y]`` → ``a, b, 2, x/y``.

    Bracketed parts are list indexes when numeric and map keys otherwise, which is how
    apimachinery's ``field.Path`` renders ``Index`` and ``Key``.
    """
    tokens: list[str | int] = []
    for match in _TOKEN_RE.finditer(path):
        bracket, name = match.groups()
        if name is not None:
            tokens.append(name)
        elif bracket is not None:
            tokens.append(int(bracket) if bracket.isdigit() else bracket)
    return tokens


def index_lines(text: str) -> Index:
    """The 0-based line of every key and list item in the first document of ``text``.

    A map entry is indexed at its key's line and a list item at its own first line,
    because a block value starts on the line after its key. The index is a tree (each
    entry holds its line and the index of its value), so it costs one entry per node at
    any depth. Keys are stored as written (strings), list positions as integers. Entries
    that an alias or a merge key brings in have no line of their own and are left out, so
    a lookup falls back to where they are referenced. Text that does not parse yields
    what was indexed before the error.
    """
    root: Index = {}
    fast = parser.FAST
    if fast is not None:
        try:
            _index(fast, text, root)
        except yaml.YAMLError as exc:
            if not parser.fell_short(exc):
                return root
            root = {}  # libyaml stopped at its own depth limit: read it all again
        else:
            return root
    with contextlib.suppress(yaml.YAMLError):
        _index(parser.PURE, text, root)
    return root


def _index(loader: Any, text: str, root: Index) -> None:
    # One parser's pass over the first document, filling ``root``; raises the parser's error.
    # A frame is [index of the collection, is a map, entry of the pending key or position].
    stack: list[list[Any]] = []
    events_of = loader(text)
    flow_limit = parser.flow_limit(loader)
    flow_base = 0  # as the decoder counts flow levels (yamlstream._document)
    try:
        while events_of.check_event():
            event = events_of.get_event()
            cls = event.__class__
            if cls is events.DocumentEndEvent:
                break
            if cls is events.MappingEndEvent or cls is events.SequenceEndEvent:
                stack.pop()
                if len(stack) < flow_base:
                    flow_base = 0
                continue
            if cls not in _NODES:
                continue
            if cls in _COLLECTIONS and event.flow_style:
                if not flow_base:
                    flow_base = len(stack) + 1
                elif len(stack) + 1 - flow_base >= flow_limit:
                    raise parser.FlowTooDeep(f"more than {flow_limit} levels of flow nesting")
            line = event.start_mark.line
            entry: list[Any] | None = None
            if stack:
                frame = stack[-1]
                if not frame[1]:
                    entry = [line, None]
                    frame[0][frame[2]] = entry
                    frame[2] += 1
                elif frame[2] is None:
                    key = event.value if cls is events.ScalarEvent else "\0"
                    frame[2] = frame[0].setdefault(key, [line, None])
                    if cls in _COLLECTIONS:  # a complex key: index it out of the way
                        stack.append([{}, cls is events.MappingStartEvent, _start(cls)])
                    continue
                else:
                    entry, frame[2] = frame[2], None
            if cls in _COLLECTIONS:
                children: Index = root if entry is None else {}
                if entry is not None:
                    entry[1] = children
                stack.append([children, cls is events.MappingStartEvent, _start(cls)])
    finally:
        events_of.dispose()


_NODES = (
    events.ScalarEvent,
    events.AliasEvent,
    events.MappingStartEvent,
    events.SequenceStartEvent,
)
_COLLECTIONS = (events.MappingStartEvent, events.SequenceStartEvent)


def _start(cls: type) -> int | None:
    return None if cls is events.MappingStartEvent else 0


def locate(index: Index, tokens: Sequence[str | int]) -> int | None:
    """The 0-based line of the deepest indexed entry along ``tokens``; ``None`` if none is.

    Why the nearest existing ancestor when the path is absent: a finding about a field the
    manifest does not write is best shown where its parent is written.
    """
    line: int | None = None
    node: Index | None = index
    for token in tokens:
        if node is None:
            break
        entry = node.get(token)
        if entry is None and isinstance(token, int):
            entry = node.get(str(token))
        if entry is None:
            break
        line, node = entry
    return line
