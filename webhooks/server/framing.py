"""HTTP/1.1 request framing: where a request's head ends, what it says, how long its body is.

Why our own: the worker's poller must know from the bytes received so far, without
blocking and without a thread, when a request is complete; gunicorn's parser reads from a
blocking socket inside a thread, which is what let slow clients hold every thread. The
subset is what webhook callers send (the API server, kubelet probes, Prometheus, curl):
a request line, headers, and a body framed by ``Content-Length``. Anything else is refused
with the status a client can act on, never guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

#: The API server caps admission bodies near this size too; larger is not a real review.
MAX_BODY = 6 * 1024 * 1024
#: An oversized body up to this size is read and discarded so the client sees the 413 and
#: its keep-alive connection stays usable; beyond it the connection is closed instead.
DRAIN_LIMIT = 16 * 1024 * 1024
#: Request line and headers together; real callers send a few hundred bytes.
MAX_HEAD = 64 * 1024
MAX_HEADERS = 100

_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([^\x00-\x20\x7f]+) HTTP/(\d)\.(\d)")
_HEADER = re.compile(rb"(" + _TOKEN + rb"):[ \t]*([^\x00-\x08\x0a-\x1f\x7f]*?)[ \t]*")
_DIGITS = re.compile(rb"[0-9]{1,12}")


class FramingError(Exception):
    """A request that cannot be framed: answer ``status`` with ``reason``, then close."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(slots=True)
class Head:
    """A parsed request head; header names keep their case, values are Latin-1 text."""

    method: str
    path: str
    query: str
    version: str
    headers: list[tuple[str, str]]
    content_length: int
    keep_alive: bool
    expect_continue: bool


def head_end(buf: bytes | bytearray, scanned: int) -> int:
    """The index just past the blank line that ends the head, or -1 when not yet received.

    ``scanned`` is how much of ``buf`` an earlier call already searched, so a head arriving
    in many small pieces is not searched from the start each time.
    """
    index = buf.find(b"\r\n\r\n", max(0, scanned - 3))
    return -1 if index < 0 else index + 4


def parse_head(raw: bytes) -> Head:
    """Parse a complete head (ending in a blank line); raises :class:`FramingError`.

    Why strict: a lenient parser in front of an admission chain is how requests get
    smuggled past it; every ambiguity (two lengths, folded lines, a transfer coding) is
    refused instead.
    """
    lines = raw[:-4].split(b"\r\n")
    match = _REQUEST_LINE.fullmatch(lines[0])
    if match is None:
        raise FramingError(400, "malformed request line")
    method, target, major, minor = match.groups()
    if major != b"1":
        raise FramingError(505, "only HTTP/1.x is served")
    if len(lines) - 1 > MAX_HEADERS:
        raise FramingError(431, "too many headers")
    headers: list[tuple[str, str]] = []
    length: int | None = None
    close = minor == b"0"
    expect = False
    for line in lines[1:]:
        header = _HEADER.fullmatch(line)
        if header is None:
            raise FramingError(400, "malformed header line")
        name_b, value_b = header.groups()
        name = name_b.decode("latin-1")
        value = value_b.decode("latin-1")
        lower = name.lower()
        if lower == "content-length":
            if _DIGITS.fullmatch(value_b) is None or (length is not None and int(value) != length):
                raise FramingError(400, "invalid Content-Length")
            length = int(value)
        elif lower == "transfer-encoding":
            raise FramingError(411, "a body must be sent with Content-Length")
        elif lower == "connection":
            tokens = {t.strip().lower() for t in value.split(",")}
            if "close" in tokens:
                close = True
        elif lower == "expect":
            if value.lower() != "100-continue":
                raise FramingError(417, "only Expect: 100-continue is supported")
            expect = minor == b"1"
        headers.append((name, value))
    target_s = target.decode("latin-1")
    path, _, query = target_s.partition("?")
    if not path.startswith("/"):
        raise FramingError(400, "the request target must be a path")
    return Head(
        method=method.decode("latin-1"),
        path=path,
        query=query,
        version=f"HTTP/1.{minor.decode()}",
        headers=headers,
        content_length=length or 0,
        keep_alive=not close,
        expect_continue=expect,
    )


def error_response(status: int, reason: str, date: str) -> bytes:
    """A complete plain-text error response that closes the connection.

    Why here: the poller answers framing errors, deadlines and plain-port refusals itself,
    without taking a thread or calling the app.
    """
    body = f"{reason}\n".encode()
    return (
        f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\n"
        f"Date: {date}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("latin-1") + body


REASONS: Mapping[int, str] = MappingProxyType(
    {
        400: "Bad Request",
        404: "Not Found",
        405: "Method Not Allowed",
        408: "Request Timeout",
        411: "Length Required",
        413: "Content Too Large",
        417: "Expectation Failed",
        431: "Request Header Fields Too Large",
        500: "Internal Server Error",
        505: "HTTP Version Not Supported",
    }
)
