"""One decoded document and where it sits in its text, which no step may shift.

Why a module of its own: the YAML and the JSON decoders both produce documents and the
reader consumes them, so they belong to none of them; and every step hands parts of one
text on in place (:func:`blank`), so the lines and offsets a document records are the
file's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Raw:
    """One document as decoded: its value and where its root sits in the text.

    ``start``/``end`` are character offsets of the root, ``column`` its column, ``line`` its
    1-based line; ``index`` counts the file's documents from 0, empty ones included.
    ``items`` holds the 1-based line of each element of a root map's ``items`` list (a
    ``kind: List``), recorded while parsing because such lists are often long.
    """

    value: Any
    line: int
    start: int
    end: int
    column: int
    index: int
    items: list[int] | None = None


_NOT_NEWLINE = re.compile(r"[^\n]")


def blank(text: str, start: int, end: int) -> str:
    """``text`` with ``[start, end)`` turned into spaces, newlines kept: offsets stay valid.

    Why: a part of a stream is handed to the YAML parser in place, so the lines and
    offsets it reports are the file's own.
    """
    return blank_all(text, [(start, end)])


def blank_all(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with every ``[start, end)`` of ``spans`` blanked as :func:`blank` does.

    Why in one pass: blanking spans one at a time copies the whole text once per span, so
    a stream of many small documents with as many spans to blank would cost time quadratic
    in its length. Overlapping spans are blanked once.
    """
    pieces: list[str] = []
    at = 0
    for begin, end in sorted(spans):
        start = max(begin, at)
        if start >= end:
            continue
        pieces.append(text[at:start])
        pieces.append(_NOT_NEWLINE.sub(" ", text[start:end]))
        at = end
    if not pieces:
        return text
    pieces.append(text[at:])
    return "".join(pieces)


class Tail:
    """The text from ``start`` on, handed to a parser as a stream, a piece at a time.

    Why not ``text[start:]``: copying the rest of a stream for each value read from it
    costs time quadratic in the number of values. The parsers read a stream in small
    pieces and stop at the end of the value they were asked for, so reading one value
    costs its own length and a piece of look-ahead. Marks a parser reports count from
    ``start``.
    """

    def __init__(self, text: str, start: int) -> None:
        self.text = text
        self.start = self.at = start

    def read(self, size: int = -1) -> str:
        """Up to ``size`` more characters (all that is left if ``size`` is negative)."""
        end = len(self.text) if size < 0 else min(self.at + size, len(self.text))
        piece = self.text[self.at : end]
        self.at = end
        return piece

    def again(self) -> Tail:
        """The same part of the text, from its start: for a second parser's pass."""
        return Tail(self.text, self.start)
