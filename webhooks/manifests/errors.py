"""The error types of manifest input, and how values are shown inside their messages.

Why here and not in each reader: ``check`` PATHS, ``--objects`` and ``--nodes`` must fail the
same way, with one line a CI log viewer can jump to, whatever went wrong underneath. The
decoders raise :class:`Refused` (a line and a reason, knowing no file); the reader turns it
into a :class:`ManifestError` that names the file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

#: How many characters of a value a message shows before cutting it short.
SHOWN = 60


class Refused(Exception):
    """Input kubectl would refuse, with the 1-based line to blame (0 when none)."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(line, reason)
        self.line = line
        self.reason = reason


class ManifestError(Exception):
    """Input that cannot be used, rendered ``path:line: reason`` (``path: reason`` with no line).

    It is both raised (``--objects``) and collected (``check`` keeps reading the other files
    and reports every one), which is why it compares by value: a report is data.
    """

    __slots__ = ("line", "path", "reason")

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(path, line, reason)
        self.path = path
        self.line = line
        self.reason = reason

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line > 0 else self.path
        return f"{where}: {self.reason}"

    def __repr__(self) -> str:
        return f"ManifestError({self.path!r}, {self.line}, {self.reason!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ManifestError):
            return NotImplemented
        return (self.path, self.line, self.reason) == (other.path, other.line, other.reason)

    def __hash__(self) -> int:
        return hash((self.path, self.line, self.reason))


def show(value: Any, limit: int = SHOWN) -> str:
    """``value`` as JSON (``true``, ``null``, ``"text"``), cut after about ``limit`` characters.

    Why JSON and not ``repr``: the API server and kubectl speak JSON, so ``True`` or ``None``
    in a message would name something the user never wrote; and a value of megabytes would
    bury the one line that matters. Nested values are walked lazily and without recursion,
    so a value ten thousand levels deep or a million keys wide costs no more than its cut.
    """
    out: list[str] = []
    size = 0
    # Frames are (closing bracket, iterator over the items, whether items are map pairs).
    stack: list[tuple[str, Iterator[Any], bool]] = []
    pending: list[Any] = [value]
    first = True
    while size <= limit:
        if pending:
            item = pending.pop()
        elif stack:
            close, items, is_map = stack[-1]
            nxt: Any = next(items, _END)
            if nxt is _END:
                stack.pop()
                out.append(close)
                size += 1
                first = False
                continue
            piece = "" if first else ","
            if is_map:
                key, nxt = nxt
                piece += _scalar(str(key), limit) + ":"
            out.append(piece)
            size += len(piece)
            item = nxt
        else:
            break
        if isinstance(item, dict):
            stack.append(("}", iter(item.items()), True))
            piece = "{"
            first = True
        elif isinstance(item, list | tuple):
            stack.append(("]", iter(item), False))
            piece = "["
            first = True
        else:
            piece = _scalar(item, limit)
            first = False
        out.append(piece)
        size += len(piece)
    text = "".join(out)
    if stack or pending or len(text) > limit:
        return text[:limit] + "…"
    return text


_END = object()


def _scalar(value: Any, limit: int) -> str:
    if isinstance(value, str):
        return json.dumps(value[: limit + 1], ensure_ascii=False)
    if value is None or isinstance(value, bool | int):
        return json.dumps(value)
    if isinstance(value, float):
        return json.dumps(value) if math.isfinite(value) else str(value)
    if isinstance(value, bytes):
        return _scalar(value[: limit + 1].decode("utf-8", "replace"), limit)
    return _scalar(str(value), limit)
