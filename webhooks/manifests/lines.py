"""The line of a field in a document: ``spec.tolerations[2].key`` to the line that writes it.

Why an index built from libyaml's events rather than a composed node tree: composing
recurses (in C, and crashes near 30,000 levels), and keeping node trees of thousands of
documents alive makes the garbage collector walk them again and again. An index is built
only for a document that has a finding, from its own text, without recursion.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import yaml
from yaml import events

_Parser: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)

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
    # A frame is [index of the collection, is a map, entry of the pending key or position].
    stack: list[list[Any]] = []
    parser = _Parser(text)
    try:
        while parser.check_event():
            event = parser.get_event()
            cls = event.__class__
            if cls is events.DocumentEndEvent:
                break
            if cls is events.MappingEndEvent or cls is events.SequenceEndEvent:
                stack.pop()
                continue
            if cls not in _NODES:
                continue
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
    except yaml.YAMLError:
        pass
    finally:
        parser.dispose()
    return root


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
