"""One input file read safely: a regular file only, and never more than a cap.

Why its own module: every file the project reads on a user's say-so (manifests, ``--objects``,
``--nodes``, policy test suites, config files) can be something other than a file. Git
carries a symbolic link to ``/dev/zero`` into a pull request that CI then checks; a FIFO
named ``x.yaml`` in a directory blocks a reader forever; a sparse file claims terabytes.
A reader that opens, ``fstat``s the descriptor it opened (so what is checked is what is
read, with no window between the two) and reads at most ``limit + 1`` bytes refuses all of
them with a reason, and costs at most the cap whatever the path names.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

__all__ = ["CHUNK", "MAX_FILE_BYTES", "FileRefused", "read_capped", "read_regular", "too_large"]

#: The most one manifest file (or stdin) may hold: 128 MiB. Why this number: the largest
#: single file a user has reason to give is a cluster's inventory, ``kubectl get nodes -o
#: yaml`` of 5,000 nodes (Kubernetes' largest supported cluster) at up to ~20 KB each with
#: their image lists, about 100 MB; kubectl itself sets no limit, and the API server takes
#: at most 3 MiB per object, so nothing legitimate needs more in one file. Anything beyond
#: it (``/dev/zero``, a log that keeps growing) is refused before it costs more memory.
MAX_FILE_BYTES = 128 * 1024 * 1024

#: How much one read asks for: large enough that a file of megabytes takes few calls,
#: small enough that a short file or pipe never allocates a buffer the size of the cap.
CHUNK = 1 << 20

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class FileRefused(Exception):
    """A path that names no regular file, or a file larger than the cap; ``reason`` says which.

    The reason knows no path, so each reader can render it its own way (``file: reason``).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _not_regular(mode: int) -> FileRefused:
    kind = next((name for test, name in _KINDS if test(mode)), "something else")
    return FileRefused(f"{kind}, not a regular file: only regular files are read")


def too_large(limit: int) -> FileRefused:
    """The refusal of input larger than ``limit`` bytes, naming the limit.

    Why shared: a file and stdin must be refused in the same words.
    """
    return FileRefused(f"larger than the limit of {limit:,} bytes ({_mib(limit)}): not read")


def _mib(limit: int) -> str:
    return f"{limit / (1 << 20):g} MiB"


def read_capped(read: Callable[[int], bytes], limit: int) -> bytes:
    """Everything ``read(n)`` yields up to its end, or :class:`FileRefused` past ``limit`` bytes.

    Why through ``read`` and in chunks: stdin, a file's descriptor and a stream all end the
    same way (an empty read), and asking for at most :data:`CHUNK` bytes at a time reads
    at most ``limit + 1`` bytes of an endless input, without allocating the cap up front.
    """
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = read(min(CHUNK, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:
        raise too_large(limit)
    return b"".join(chunks)


_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def read_regular(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them.

    Raises :class:`FileRefused` for a path that names a directory, a FIFO, a device or a
    socket (a symbolic link is followed to what it names), or a file larger than ``limit``
    (refused from its size, or after ``limit + 1`` bytes if it grows while read, or lies
    about its size as ``/proc`` files do); ``OSError`` when it cannot be opened or read.
    Why a ``stat`` before the open as well as an ``fstat`` after it: opening a device can
    act (a watchdog arms, a tape rewinds), so what is plainly not a file is never opened;
    the ``fstat`` of the opened descriptor is what decides, so a path swapped between the
    two is still refused. The open does not block (``O_NONBLOCK``): a FIFO with no writer
    would otherwise hold the reader forever before the check could run.
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise _not_regular(mode)
    fd = os.open(path, _FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(info.st_mode)
        if info.st_size > limit:
            raise too_large(limit)
        return read_capped(lambda n: os.read(fd, n), limit)
    finally:
        os.close(fd)
