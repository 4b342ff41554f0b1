"""One named input file read with bounds: what kind of file it is, and how much it holds.

Why a module of its own: every file the project reads on a user's word (a config file, a
manifest) can be something other than a file. A FIFO nobody writes to blocks the reader
forever, a symbolic link to ``/dev/zero`` reads until memory runs out, and a directory or
a socket fails in ways of their own. So the kind of file is checked before it is opened
(opening a device can itself have effects) and again on what was opened, and the read
stops one byte past the limit, whatever the file claims its size is.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

#: What a file that is not a regular file is, in a refusal's words.
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)

#: Opening never blocks (a FIFO with no writer would), never adopts a terminal.
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)

#: How much one read asks for.
_CHUNK = 1 << 16


class Unreadable(Exception):
    """A file that is not read, and why, in one line; the caller names the file."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a file"  # pragma: no cover - every kind POSIX has is named above


def _streamed(mode: int) -> bool:
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def _check(mode: int, what: str, streams: bool) -> None:
    if stat.S_ISREG(mode) or (streams and _streamed(mode)):
        return
    also = " or a pipe" if streams else ""
    raise Unreadable(f"{_kind(mode)}, not a regular file: {what} is read from a file{also}")


def read_file(path: str | Path, limit: int, what: str, *, streams: bool = False) -> bytes:
    """The bytes of ``path``, a regular file (or a link to one) of at most ``limit`` bytes.

    Why refuse the rest rather than read it: input must cost bounded time and memory,
    whatever a path names. With ``streams``, a pipe or a character device is read too
    (``--config /dev/stdin``, ``<(command)``, ``/dev/null``), to its end or one byte past
    ``limit``; a FIFO that gives nothing is refused, as nobody was writing to it.
    Raises :class:`Unreadable` saying what the file is, or that it is over ``limit``
    (``what`` names whose limit, e.g. "a config file"), or why the system refused it.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror}") from None
    except ValueError:  # a NUL character in the path
        raise Unreadable("cannot read: the path holds a NUL character") from None
    _check(mode, what, streams)
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror}") from None
    try:
        status = os.fstat(fd)
        opened = status.st_mode
        _check(opened, what, streams)  # it may have been replaced between the two looks
        if _streamed(opened):
            os.set_blocking(fd, True)
        elif status.st_size > limit:
            raise Unreadable(_too_large(status.st_size, limit, what))
        data = _read(functools.partial(os.read, fd), limit)
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # a stream, or a file that grew while being read
        raise Unreadable(_too_large(None, limit, what))
    if not data and stat.S_ISFIFO(opened):
        raise Unreadable("a FIFO (named pipe) that gave nothing: no process was writing to it")
    return data


def read_stream(stream: BinaryIO, limit: int, what: str, name: str = "stdin") -> bytes:
    """The bytes of an open stream (stdin), read to its end or one byte past ``limit``.

    Why a piece at a time: a stream may never end (``check - < /dev/zero``), and a short one
    must not cost a buffer the size of the limit. Raises :class:`Unreadable` naming the
    limit when the stream holds more (``name`` says which stream, ``what`` whose limit).
    """
    data = _read(stream.read, limit)
    if len(data) > limit:
        raise Unreadable(_too_large(None, limit, what, name))
    return data


def _read(read: Callable[[int], bytes], limit: int) -> bytes:
    # At most ``limit`` + 1 bytes, asked for a piece at a time.
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _too_large(size: int | None, limit: int, what: str, name: str = "it") -> str:
    held = f"{size:,} bytes" if size is not None else "more than that"
    return f"over the limit of {limit:,} bytes for {what}: {name} holds {held}"
