"""HTTP/1.1 request framing: where a request's head ends, what it says, how long its body is.

Why httptools (llhttp, the parser behind Node.js) and not our own: a request head is the
one input every client controls before anything else is checked, so the parser must cost
time linear in its bytes whatever they are. The regular expressions this module used
before backtracked quadratically on a header value of a letter, 60,000 blanks and a
letter (20 s in one worker's loop, while that worker answered nobody). llhttp is a state
machine that reads each byte once, and it is also the fastest of the parsers measured
(docs/performance.md, "Request framing"; ``bench/framing_bench.py``).

The head is handed to llhttp whole, once :func:`head_end` has found its blank line: fed
piece by piece, httptools joins a header value's pieces by repeated concatenation, which
is quadratic in the number of pieces. The subset served is what webhook callers send (the
API server, kubelet probes, Prometheus, curl): a request line, headers, and a body framed
by ``Content-Length``. Anything else is refused with the status a client can act on,
never guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import httptools

#: The API server caps admission bodies near this size too; larger is not a real review.
MAX_BODY = 6 * 1024 * 1024
#: An oversized body up to this size is read and discarded so the client sees the 413 and
#: its keep-alive connection stays usable; beyond it the connection is closed instead.
DRAIN_LIMIT = 16 * 1024 * 1024
#: Request line and headers together; real callers send a few hundred bytes.
MAX_HEAD = 64 * 1024
MAX_HEADERS = 100
#: Content-Length values longer than this are refused before anything is read.
_MAX_LENGTH_DIGITS = 12
_VERSIONS = {b"HTTP/1.1": "HTTP/1.1", b"HTTP/1.0": "HTTP/1.0"}


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
    in many small pieces is not searched from the start each time. A blank line made with
    a bare line feed (``\\n\\n`` or ``\\n\\r\\n``) ends a head too: :func:`parse_head` then
    refuses it at once (400), where looking only for CRLF CRLF left its client waiting for
    its deadline and a close without an answer. Each byte is searched at most twice.
    """
    start = max(0, scanned - 3)
    bare = buf.find(b"\n\n", start)
    # A "\n\r\n" (CRLF CRLF's own tail) ends first only if it lies wholly before that.
    index = buf.find(b"\n\r\n", start, bare + 1 if bare >= 0 else len(buf))
    if index >= 0:
        return index + 3
    return -1 if bare < 0 else bare + 2


#: The headers that change how a request is framed, by their lower-case names.
_FRAMING_HEADERS = frozenset({b"content-length", b"transfer-encoding", b"connection", b"expect"})


class _Collected:
    """What llhttp reports while it reads one head (its callback interface).

    Headers are decoded as they are reported, and the few that frame the request are set
    aside, so no second pass over the headers is needed.
    """

    __slots__ = ("framing", "headers", "target")

    def __init__(self) -> None:
        self.target = b""
        self.headers: list[tuple[str, str]] = []
        self.framing: list[tuple[bytes, str]] = []

    def on_url(self, url: bytes) -> None:
        # One call for a head fed whole; joined in case llhttp ever splits it.
        self.target = self.target + url if self.target else url

    def on_header(self, name: bytes, value: bytes) -> None:
        # llhttp drops the blanks before a value, not those after it.
        text = value.rstrip(b" \t").decode("latin-1")
        self.headers.append((name.decode("latin-1"), text))
        lower = name.lower()
        if lower in _FRAMING_HEADERS:
            self.framing.append((lower, text))


def _request_line(raw: bytes) -> bytes:
    """The version of a request line shaped ``METHOD SP target SP HTTP/x.y``; raises otherwise.

    Why before llhttp: it accepts runs of blanks between the parts and reports a missing
    version as HTTP/0.9; both were refused before, and a second HTTP major is a 505. Only
    the two blanks are looked for: llhttp checks the method and the target's bytes.
    """
    end = raw.find(b"\r\n")
    first = raw.find(b" ", 0, end)
    last = raw.rfind(b" ", 0, end)
    if first <= 0 or last <= first + 1 or raw[first + 1] == 0x20 or raw[last - 1] == 0x20:
        raise FramingError(400, "malformed request line")
    version = raw[last + 1 : end]
    if version in _VERSIONS:
        return version
    shaped = len(version) == 8 and version[:5] == b"HTTP/" and version[6:7] == b"."
    if shaped and version[5:8:2].isdigit():
        raise FramingError(505, "only HTTP/1.0 and HTTP/1.1 are served")
    raise FramingError(400, "malformed request line")


def _llhttp_refusal(exc: Exception) -> FramingError:
    """The status for what llhttp refused (the one the regex parser gave), its words as detail."""
    detail = str(exc) or type(exc).__name__
    if isinstance(
        exc, httptools.HttpParserInvalidMethodError | httptools.HttpParserInvalidURLError
    ):
        return FramingError(400, f"malformed request line ({detail})")
    if "Transfer-Encoding" in detail:
        return FramingError(411, "a body must be sent with Content-Length")
    if "Content-Length" in detail:
        return FramingError(400, f"invalid Content-Length ({detail})")
    return FramingError(400, f"malformed request head ({detail})")


def parse_head(raw: bytes) -> Head:
    """Parse a complete head (ending in a blank line); raises :class:`FramingError`.

    Why strict: a lenient parser in front of an admission chain is how requests get
    smuggled past it; every ambiguity (two lengths, folded lines, a transfer coding, a
    control character) is refused instead. The cost is linear in ``len(raw)``: a count, a
    look for the request line's blanks, and llhttp's single pass.
    """
    version = _request_line(raw)
    # Counted before parsing, so a head of thousands of tiny headers costs no callbacks; a
    # line feed without its carriage return counts too (llhttp would refuse it anyway).
    if raw.count(b"\n") - 2 > MAX_HEADERS:
        raise FramingError(431, "too many headers")
    collected = _Collected()
    parser = httptools.HttpRequestParser(collected)
    try:
        parser.feed_data(raw)
    except httptools.HttpParserUpgrade:
        pass  # Upgrade and CONNECT: the head is whole; the upgrade is simply not offered
    except httptools.HttpParserError as exc:
        raise _llhttp_refusal(exc) from None
    length: int | None = None
    close = version == b"HTTP/1.0"
    expect = False
    for lower, value in collected.framing:
        if lower == b"content-length":
            # llhttp has checked the digits and refused a repeated length.
            if len(value) > _MAX_LENGTH_DIGITS:
                raise FramingError(400, "invalid Content-Length")
            length = int(value)
        elif lower == b"transfer-encoding":
            raise FramingError(411, "a body must be sent with Content-Length")
        elif lower == b"connection":
            if "close" in {t.strip().lower() for t in value.split(",")}:
                close = True
        elif value.lower() != "100-continue":  # Expect
            raise FramingError(417, "only Expect: 100-continue is supported")
        else:
            expect = version == b"HTTP/1.1"
    target = collected.target.decode("latin-1")
    path, _, query = target.partition("?")
    if not path.startswith("/"):
        raise FramingError(400, "the request target must be a path")
    return Head(
        method=parser.get_method().decode("latin-1"),
        path=path,
        query=query,
        version=_VERSIONS[version],
        headers=collected.headers,
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


#: The statuses the server refuses with, and their reason phrases (also the closed set of
#: a refusal's ``status`` label: see :mod:`webhooks.server.metrics`).
REASONS: Mapping[int, str] = MappingProxyType(
    {
        400: "Bad Request",
        401: "Unauthorized",
        404: "Not Found",
        405: "Method Not Allowed",
        408: "Request Timeout",
        411: "Length Required",
        413: "Content Too Large",
        415: "Unsupported Media Type",
        417: "Expectation Failed",
        431: "Request Header Fields Too Large",
        500: "Internal Server Error",
        505: "HTTP Version Not Supported",
    }
)
