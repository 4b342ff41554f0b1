"""One decoded document and where it sits in its text, which no step may shift.

Why a module of its own: the YAML and the JSON decoders both produce documents and the
reader consumes them, so they belong to none of them; and every step hands parts of one
text on in place (:func:`blank`), so the lines and offsets a document records are the
file's own.
"""

from __future__ import annotations

import re
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


def blank(text: str, start: int, end: int) -> str:
    """``text`` with ``[start, end)`` turned into spaces, newlines kept: offsets stay valid.

    Why: a part of a stream is handed to the YAML parser in place, so the lines and
    offsets it reports are the file's own.
    """
    if start >= end:
        return text
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]
