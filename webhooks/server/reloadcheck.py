"""A reload's config check, run in a child process under a deadline and a memory cap.

Why a child: the master is what keeps both ports open, so nothing a config file makes the
reader do may reach it. Reading a file can raise any exception (a byte that is not UTF-8,
an integer of 5,000 digits), recurse until the stack runs out (a list 50,000 deep), take
all the memory of the node (an alias bomb expanded into an error message), or never end
(a FIFO). The master forks; the child checks the file and sends back the parsed value
(pickled) or why not, as a bounded excerpt; the master waits at most :data:`CHECK_SECONDS`
for it, and the child may map at most :data:`CHECK_MEMORY` more than the master had. What
the master itself spends is the fork and one unpickling, linear in the config it gets back,
whatever the file holds.

The child is the master's copy, so the modules the check uses are already imported; it
never logs (the master's log lock may have been held by no thread of its own) and leaves
with ``os._exit``, never through the master's code.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import resource
import select
import signal
import time
from collections.abc import Callable
from typing import NoReturn, TypeVar

T = TypeVar("T")

#: Wall-clock seconds a reload's check may take. Why 10: a config the server can use is
#: read in well under a second (``bench/growth/reloads.py``), so this leaves room for a
#: slow disk and a loaded node, while the master, which also restarts dead workers, is
#: never busy with one signal for long.
CHECK_SECONDS = 10.0
#: Bytes of address space the checking child may map beyond the master's. Why 256 MiB: the
#: chart's memory limit for the whole container is 256 MiB; a usable config needs a few MiB
#: to read, and a child stopped at this cap leaves the workers their room. (The child also
#: asks the kernel to kill it first when the container runs out of memory.)
CHECK_MEMORY = 256 << 20
#: Characters of a refusal's reason that reach the log. Why 500: a key path and the start
#: of the value it names fit; a message that quotes a whole value (of any size) does not.
REASON_CHARS = 500

_VALUE, _REASON = b"+", b"-"


class Refused(Exception):
    """The config cannot be used; the message says why (bounded), naming any limit hit."""


def excerpt(text: str, limit: int = REASON_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was when cut.

    Why: a reason quotes what the file held, and the log line must stay one short line.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, bounded, even when its message cannot be rendered.

    Why the type: ``'utf-8' codec can't decode byte 0xff`` says more as a ``UnicodeDecodeError``,
    and some messages are empty (``MemoryError()``, ``RecursionError`` from C).
    """
    name = type(exc).__name__
    try:
        message = str(exc)
    except Exception:  # a message too large or broken to render: the type still says enough
        return name
    if isinstance(exc, Refused):  # its message is the whole reason
        return excerpt(message)
    if not message:
        return name
    # Cut before joining, so a message of any size is never copied whole.
    text = f"{name}: {message[:REASON_CHARS]}"
    length = len(name) + 2 + len(message)
    return text if length == len(text) else f"{text[:REASON_CHARS]}… ({length} characters)"


def run_checked(
    check: Callable[[], T], *, seconds: float = CHECK_SECONDS, memory: int = CHECK_MEMORY
) -> T:
    """What ``check()`` returns, computed in a child process; :class:`Refused` on any failure.

    Why: see the module. The value crosses back pickled, so it must be picklable; a check
    that raises, exceeds ``memory`` or ``seconds``, or dies gets :class:`Refused` with a
    reason that names what happened (the limit and its value when one was hit).
    """
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(read_end)
        os.close(write_end)
        raise Refused(f"cannot start the check: {describe(exc)}") from None
    if pid == 0:  # pragma: no cover - the child; its outcomes are asserted through the parent
        os.close(read_end)
        _child(check, write_end, seconds, memory)
    os.close(write_end)
    try:
        data, problem = _collect(read_end, time.monotonic() + seconds, memory)
    finally:
        os.close(read_end)
        if problem is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if problem == "time":
        raise Refused(f"reading it took longer than {seconds:g} s (the reload check's limit)")
    if problem == "size":
        raise Refused(f"its parsed form exceeds {memory >> 20} MiB (the reload check's limit)")
    if data[:1] == _VALUE:
        value: T = pickle.loads(memoryview(data)[1:])  # bytes our own child wrote
        return value
    if data[:1] == _REASON:  # bounded by the child (describe)
        raise Refused(data[1:].decode("utf-8", "replace"))
    raise Refused(_death(status, memory))


def _death(status: int, memory: int) -> str:
    """Why a child that sent nothing ended (a signal: the C stack, the kernel's OOM killer)."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        with contextlib.suppress(ValueError):
            name = signal.Signals(number).name
            if number == signal.SIGKILL:
                return (
                    f"the check was killed ({name}; out of memory? the reload check's limit "
                    f"is {memory >> 20} MiB)"
                )
            return f"the check died of {name}"
        return f"the check died of signal {number}"
    return f"the check ended without an answer (exit status {os.WEXITSTATUS(status)})"


def _collect(fd: int, deadline: float, limit: int) -> tuple[bytearray, str | None]:
    """Read ``fd`` to its end: the bytes and ``None``, or ``"time"`` past ``deadline``, or
    ``"size"`` past ``limit`` bytes (the bytes are then not wanted).

    Why one growing buffer: the answer is held once, not as chunks and then joined.
    """
    data = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return bytearray(), "time"
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return data, None
        if len(data) + len(chunk) > limit:
            return bytearray(), "size"
        data += chunk


def _child(
    check: Callable[[], object], fd: int, seconds: float, memory: int
) -> NoReturn:  # pragma: no cover - runs in the forked child
    try:
        _confine(seconds, memory)
        # Made before the check: once memory has run out, making a message may fail too.
        payload = (
            _REASON
            + (f"reading it needs more than {memory >> 20} MiB (the reload check's limit)").encode()
        )
        try:
            payload = _VALUE + pickle.dumps(check(), protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            pass
        except BaseException as exc:  # whatever the check raised is the reason it failed
            with contextlib.suppress(MemoryError):
                payload = _REASON + describe(exc).encode("utf-8", "replace")
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os._exit(0)


def _confine(seconds: float, memory: int) -> None:  # pragma: no cover - in the forked child
    """Limit the child: default signal handling, an alarm past the deadline, the memory cap.

    Why each: the master's handlers would only queue signals for a loop the child never
    runs, so a SIGTERM to the process group must end the child as it ends a worker; the
    alarm ends a child blocked in a read even when the master is gone; the address-space
    cap turns an allocation past ``memory`` into a ``MemoryError`` here, not an
    out-of-memory kill of the container.
    """
    for number in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError):
            if callable(signal.getsignal(number)):
                signal.signal(number, signal.SIG_DFL)
    signal.alarm(math.ceil(seconds) + 1)
    with contextlib.suppress(OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/statm", encoding="ascii") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = mapped + memory if hard == resource.RLIM_INFINITY else min(hard, mapped + memory)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    with (
        contextlib.suppress(OSError),
        open("/proc/self/oom_score_adj", "w", encoding="ascii") as adj,
    ):
        adj.write("1000")
