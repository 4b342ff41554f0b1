"""In-process benchmark: framing one request, by each HTTP/1.1 parser we could keep.

Why: the front door must cost time linear in what a client sends, and the project keeps
its own code only where a kept library costs what we cannot pay. This times, side by side
in one run (rounds interleaved, median of the rounds and their spread):

- ``regex``: the regular-expression parser the worker used before httptools, kept here
  only to measure against;
- ``h11``: h11's ``Connection`` as a server (if h11 is installed; it is not a dependency);
- ``httptools``: llhttp's parse of the same bytes with callbacks that keep what we need;
- ``framing``: ``webhooks.server.framing.parse_head`` (httptools plus our checks);
- ``reader``: ``webhooks.server.reader.RequestReader``, bytes to a complete request.

Rows: the head the API server sends with a review; the same with its ~4 KB body, to a
complete request ready for the app (for h11 also the response events its ``Connection``
needs before it reads the next request); and hostile heads: a header value of a letter,
N blanks and a letter, a value of blanks only, 15,000 empty headers, a 60,000-byte path.
A regex row past ``--regex-limit`` blanks is skipped: it grows with the square of N.

Usage: python -m bench.framing_bench [--rounds 7] [--regex-limit 16000]
"""

from __future__ import annotations

import argparse
import contextlib
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

import httptools

from bench import payloads
from webhooks.server.framing import MAX_HEAD, FramingError, head_end, parse_head
from webhooks.server.reader import RequestReader

try:  # measured when present; not a dependency of the project
    import h11
except ImportError:  # pragma: no cover - depends on the environment
    h11 = None

BODY = payloads.small()
API_SERVER_HEAD = (
    b"POST /mutate?timeout=10s HTTP/1.1\r\n"
    b"Host: placement-webhooks.placement-webhooks.svc:443\r\n"
    b"User-Agent: kube-apiserver-admission\r\n"
    b"Content-Length: %d\r\n"
    b"Accept: application/json, */*\r\n"
    b"Content-Type: application/json\r\n"
    b"Accept-Encoding: gzip\r\n\r\n" % len(BODY)
)


def _hostile(value: bytes) -> bytes:
    return b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX: " + value + b"\r\n\r\n"


# ---------------------------------------------------------------- the regex parser it replaced

_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([^\x00-\x20\x7f]+) HTTP/(\d)\.(\d)")
_HEADER = re.compile(rb"(" + _TOKEN + rb"):[ \t]*([^\x00-\x08\x0a-\x1f\x7f]*?)[ \t]*")


def regex_parse(raw: bytes) -> Any:
    """The request line and header patterns of the parser httptools replaced."""
    lines = raw[:-4].split(b"\r\n")
    match = _REQUEST_LINE.fullmatch(lines[0])
    if match is None:
        raise FramingError(400, "malformed request line")
    if len(lines) - 1 > 100:
        raise FramingError(431, "too many headers")
    headers = []
    for line in lines[1:]:
        header = _HEADER.fullmatch(line)
        if header is None:
            raise FramingError(400, "malformed header line")
        name, value = header.groups()
        headers.append((name.decode("latin-1"), value.decode("latin-1")))
    return match.groups(), headers


# ---------------------------------------------------------------- one request, each parser


def _regex(data: bytes) -> None:
    end = head_end(data, 0)
    with contextlib.suppress(FramingError):
        regex_parse(data[:end])
    _ = data[end:]


class _Kept:
    __slots__ = ("headers", "url")

    def __init__(self) -> None:
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []

    def on_url(self, url: bytes) -> None:
        self.url = url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))


def _httptools(data: bytes) -> None:
    parser = httptools.HttpRequestParser(_Kept())
    with contextlib.suppress(httptools.HttpParserError):
        parser.feed_data(data)
    parser.get_method()
    parser.should_keep_alive()


def _framing(data: bytes) -> None:
    end = head_end(data, 0)
    with contextlib.suppress(FramingError):
        parse_head(data[:end])


def _reader(data: bytes) -> None:
    reader = RequestReader()
    reader.receive_data(data)
    reader.next_event()
    reader.next_event()


def _h11(data: bytes) -> None:
    assert h11 is not None
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    conn.receive_data(data)
    try:
        while conn.next_event() not in (h11.NEED_DATA, h11.PAUSED):
            pass
    except h11.RemoteProtocolError:
        pass


def _h11_cycle(conn: Any) -> Callable[[bytes], None]:
    """A kept-alive h11 server connection: a request in, its answer's events out, next cycle."""
    assert h11 is not None
    answer = h11.Response(
        status_code=200, headers=[("Content-Type", "application/json"), ("Content-Length", "2")]
    )

    def once(data: bytes) -> None:
        conn.receive_data(data)
        while conn.next_event() not in (h11.NEED_DATA, h11.PAUSED):
            pass
        conn.send(answer)
        conn.send(h11.Data(data=b"{}"))
        conn.send(h11.EndOfMessage())
        conn.start_next_cycle()

    return once


def _time(fn: Callable[[bytes], None], data: bytes, budget: float) -> float:
    """Microseconds per call: as many calls as fit in ``budget`` seconds (at least one)."""
    fn(data)  # warm-up
    calls = 0
    started = time.perf_counter()
    while True:
        fn(data)
        calls += 1
        elapsed = time.perf_counter() - started
        if elapsed >= budget:
            return elapsed / calls * 1e6


def _rows(regex_limit: int) -> list[tuple[str, bytes, dict[str, Callable[[bytes], None]]]]:
    parsers: dict[str, Callable[[bytes], None]] = {"regex": _regex}
    if h11 is not None:
        parsers["h11"] = _h11
    parsers.update(httptools=_httptools, framing=_framing, reader=_reader)
    rows = [("API server head", API_SERVER_HEAD, parsers)]
    whole: dict[str, Callable[[bytes], None]] = {"regex": _regex}
    if h11 is not None:
        whole["h11"] = _h11_cycle(h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD))
    whole.update(httptools=_httptools, reader=_reader)
    rows.append(("... with its 4 KB body, to a request", API_SERVER_HEAD + BODY, whole))
    for blanks in (2_000, 8_000, 16_000, 60_000):
        shown = {k: v for k, v in parsers.items() if k != "regex" or blanks <= regex_limit}
        rows.append((f"X: a + {blanks:,} blanks + b", _hostile(b"a" + b" " * blanks + b"b"), shown))
    rows.append(("X: 60,000 blanks", _hostile(b" " * 60_000), parsers))
    many = b"GET /healthz HTTP/1.1\r\n" + b"X:\r\n" * 15_000 + b"\r\n"
    rows.append(("15,000 empty headers (refused)", many, parsers))
    path = b"GET /" + b"a" * 60_000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n"
    rows.append(("a 60,000-byte path", path, parsers))
    return rows


def main() -> None:
    """Print microseconds per request for each parser and row."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--budget", type=float, default=0.05, help="seconds per cell per round")
    parser.add_argument("--regex-limit", type=int, default=16_000)
    args = parser.parse_args()
    rows = _rows(args.regex_limit)
    names = list(rows[0][2])
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):  # interleaved: every cell once per round
        for label, data, parsers in rows:
            for name, fn in parsers.items():
                samples.setdefault((label, name), []).append(_time(fn, data, args.budget))
    versions = f"httptools {httptools.__version__}" + (
        f", h11 {h11.__version__}" if h11 is not None else " (h11 not installed: skipped)"
    )
    print(f"framing one request, µs (median of {args.rounds} rounds, min–max); {versions}")
    width = max(len(label) for label, *_ in rows)
    print(" " * width + "".join(f"{name:>22}" for name in names))
    for label, _data, _parsers in rows:
        cells = []
        for name in names:
            got = samples.get((label, name))
            if not got:
                cells.append(f"{'—':>22}")
                continue
            cell = f"{statistics.median(got):,.1f} ({min(got):,.1f}–{max(got):,.1f})"
            cells.append(f"{cell:>22}")
        print(f"{label:<{width}}" + "".join(cells))


if __name__ == "__main__":
    main()
