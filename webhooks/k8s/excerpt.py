"""Bounded excerpts of user input for one-line messages: values, key names, whole messages.

Why one module below everything that reads input: the manifest reader, the config loader
and the plugins' settings parsers all quote what they refuse, and a quoted value of
megabytes (or one ten thousand levels deep, or an integer too long for ``str``) would bury
the one line that matters, or fail while building the message. Each helper walks only as
much of its input as it shows, so a message costs no more than its cut.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

#: How many characters of a value a message shows before cutting it short.
SHOWN = 60

#: The most characters one message may hold: a few quoted excerpts and the words around
#: them, with room for the longest fixed wording (a list of every plugin's name).
MESSAGE_CHARS = 1000

#: Integers wider than this many bits are described, not printed: ``str`` refuses past
#: about 4,300 digits, and costs time quadratic in the digits below that.
_PRINTED_BITS = 256

#: A key shown as written in a key path (``plugins.dedicated-nodes.namespaces.team-a``);
#: anything else is quoted.
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_./*-]+")


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
                piece += _scalar(key if isinstance(key, str) else _scalar(key, limit), limit) + ":"
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
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        if value.bit_length() > _PRINTED_BITS:
            return f"(an integer of {value.bit_length():,} bits)"
        return str(value)
    if isinstance(value, float):
        return json.dumps(value) if math.isfinite(value) else str(value)
    if isinstance(value, bytes):
        return _scalar(value[: limit + 1].decode("utf-8", "replace"), limit)
    return _scalar(str(value), limit)


def show_key(key: Any) -> str:
    """``key`` as one step of a key path: as written when plain, else quoted by :func:`show`.

    Why: an operator finds ``plugins.dedicated-nodes.namespaces.team-a`` in the file as it
    reads, while a key of megabytes, or one holding a newline, must neither flood nor break
    the one line of a message.
    """
    if isinstance(key, str) and len(key) <= SHOWN and _PLAIN_KEY.fullmatch(key):
        return key
    return show(key)


def clip(message: str, limit: int = MESSAGE_CHARS) -> str:
    """``message`` cut to ``limit`` characters, on one line.

    Why: a message built by a lower layer may quote a value whole (upstream's wordings
    do); where such a message is passed on, this bounds it, and a newline inside a quoted
    value must not split what a log viewer shows as one line.
    """
    if len(message) > limit:
        message = message[:limit] + "…"
    if "\n" in message or "\r" in message:
        message = message.replace("\r", "\\r").replace("\n", "\\n")
    return message
