"""The request reader without sockets: bytes in, events out, one connection's cycle at a time."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from bench.growth.measure import traced_peak
from webhooks.server import reader as reader_module
from webhooks.server.framing import DRAIN_LIMIT, MAX_BODY, MAX_HEAD
from webhooks.server.reader import (
    CONTINUE,
    NEED_DATA,
    PAUSED,
    Event,
    HeadReceived,
    Phase,
    Refusal,
    Request,
    RequestReader,
)

BODY = b'{"kind":"AdmissionReview"}'


def post(body: bytes = BODY, *extra: bytes, length: int | None = None) -> bytes:
    """A review's head (and body) as the API server sends it."""
    size = len(body) if length is None else length
    lines = [b"POST /mutate?timeout=10s HTTP/1.1", b"Host: svc.ns.svc:443", *extra]
    lines.append(b"Content-Type: application/json")
    lines.append(b"Content-Length: " + str(size).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def drain(reader: RequestReader) -> list[Event]:
    """Every event the bytes so far give, up to and including NEED_DATA or PAUSED."""
    events: list[Event] = []
    while True:
        event = reader.next_event()
        events.append(event)
        if event is NEED_DATA or event is PAUSED:
            return events


def feed(reader: RequestReader, pieces: Iterable[bytes]) -> list[Event]:
    """Feed ``pieces`` one by one, asking for events after each, as the worker does."""
    events: list[Event] = []
    for piece in pieces:
        reader.receive_data(piece)
        events += [e for e in drain(reader) if e is not NEED_DATA]
    return events


def shape(events: list[Event]) -> list[str]:
    """Events as short words, so tables read like the exchange."""
    words = []
    for event in events:
        if isinstance(event, HeadReceived):
            words.append(f"head {event.head.method} {event.head.path}")
        elif isinstance(event, Request):
            words.append(f"request {len(event.body)} {'intact' if event.intact else 'unread'}")
        elif isinstance(event, Refusal):
            words.append(f"refuse {event.status}")
        else:
            words.append(repr(event))
    return words


def _bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


EXCHANGES = [
    (
        "a review in one piece is a head, then the request",
        [post()],
        ["head POST /mutate", f"request {len(BODY)} intact", "PAUSED"],
    ),
    (
        "a review a byte at a time gives the same request",
        _bytewise(post()),
        ["head POST /mutate", f"request {len(BODY)} intact", "PAUSED"],
    ),
    (
        "a GET has no body to wait for",
        [b"GET /healthz HTTP/1.1\r\n\r\n"],
        ["head GET /healthz", "request 0 intact", "PAUSED"],
    ),
    (
        "a client that expects 100-continue is told to go on once, then sends its body",
        [post(b"", b"Expect: 100-continue", length=len(BODY)), BODY[:5], BODY[5:]],
        ["head POST /mutate", "CONTINUE", f"request {len(BODY)} intact", "PAUSED"],
    ),
    (
        "a client that expects 100-continue but sent its body at once is not told to go on",
        [post(BODY, b"Expect: 100-continue")],
        ["head POST /mutate", f"request {len(BODY)} intact", "PAUSED"],
    ),
    (
        "an oversized body under 100-continue is a request at once, its body unread",
        [post(b"", b"Expect: 100-continue", length=MAX_BODY + 1)],
        ["head POST /mutate", "request 0 unread", "PAUSED"],
    ),
    (
        "a body past the drain limit is a request at once, its body unread",
        [post(b"", length=DRAIN_LIMIT + 1)],
        ["head POST /mutate", "request 0 unread", "PAUSED"],
    ),
    (
        "an oversized body within the drain limit is read, thrown away, then the request",
        [post(b"", length=MAX_BODY + 1), *[b"x" * (1 << 20)] * 6, b"x"],
        ["head POST /mutate", "request 0 intact", "PAUSED"],
    ),
    (
        "a malformed head is refused with its status",
        [b"GET / HTTP/1.1\r\nA: b\r\n  folded\r\n\r\n"],
        ["refuse 400", "PAUSED"],
    ),
    (
        "a head with no end past the head limit is 431",
        [b"GET / HTTP/1.1\r\nX: " + b" " * MAX_HEAD],
        ["refuse 431", "PAUSED"],
    ),
    (
        "a head that ends past the head limit is 431",
        [b"GET / HTTP/1.1\r\nX: a" + b" " * MAX_HEAD + b"b\r\n\r\n"],
        ["refuse 431", "PAUSED"],
    ),
    (
        "a letter, 60,000 blanks and a letter, a byte at a time, is one head",
        _bytewise(b"GET /healthz HTTP/1.1\r\nX: a" + b" " * 60_000 + b"b\r\n\r\n"),
        ["head GET /healthz", "request 0 intact", "PAUSED"],
    ),
    (
        "bytes after a refusal are not read",
        [b"GET / HTTP/1.1\r\nX: a\x01\r\n\r\n", post()],
        ["refuse 400", "PAUSED", "PAUSED"],
    ),
]


@pytest.mark.parametrize(
    ("pieces", "expected"), [e[1:] for e in EXCHANGES], ids=[e[0] for e in EXCHANGES]
)
def test_bytes_in_events_out(pieces: list[bytes], expected: list[str]) -> None:
    assert shape(feed(RequestReader(), pieces)) == expected


def test_pipelined_requests_come_one_cycle_at_a_time() -> None:
    reader = RequestReader()
    reader.receive_data(post(b"{1}") + post(b"{22}") + b"GET /readyz HTTP/1.1\r\n\r\n")
    assert shape(drain(reader)) == ["head POST /mutate", "request 3 intact", "PAUSED"]
    reader.start_next_cycle()
    assert shape(drain(reader)) == ["head POST /mutate", "request 4 intact", "PAUSED"]
    reader.start_next_cycle()
    assert shape(drain(reader)) == ["head GET /readyz", "request 0 intact", "PAUSED"]
    reader.start_next_cycle()
    assert reader.phase is Phase.IDLE
    assert drain(reader) == [NEED_DATA]


def test_the_phase_says_whether_a_request_has_begun_and_whether_its_head_is_in() -> None:
    reader = RequestReader()
    assert (reader.phase, reader.head_received) == (Phase.IDLE, False)
    reader.receive_data(b"")
    assert reader.phase is Phase.IDLE
    head, body = post().split(b"\r\n\r\n")
    reader.receive_data(head[:10])
    assert drain(reader) == [NEED_DATA]
    assert (reader.phase, reader.head_received) == (Phase.HEAD, False)
    reader.receive_data(head[10:] + b"\r\n\r\n")
    drain(reader)
    assert (reader.phase, reader.head_received) == (Phase.BODY, True)
    reader.receive_data(body)
    drain(reader)
    assert (reader.phase, reader.head_received) == (Phase.DONE, False)


def test_a_discarded_body_costs_no_memory_and_the_connection_stays_usable() -> None:
    reader = RequestReader()
    reader.receive_data(post(b"", length=MAX_BODY + 10))
    assert shape(drain(reader)) == ["head POST /mutate", "NEED_DATA"]
    for _ in range(6):
        reader.receive_data(b"x" * (1 << 20))
        assert reader.buffered == 0
        assert drain(reader) == [NEED_DATA]
    reader.receive_data(b"x" * (MAX_BODY + 10 - 6 * (1 << 20)) + post())
    assert shape(drain(reader)) == ["request 0 intact", "PAUSED"]
    reader.start_next_cycle()
    assert shape(drain(reader)) == ["head POST /mutate", f"request {len(BODY)} intact", "PAUSED"]


READS = [
    ("in the worker's reads", 65536),
    ("in TLS records", 16384),
    ("in one read", 2 << 20),
]


@pytest.mark.parametrize("size", [r[1] for r in READS], ids=[r[0] for r in READS])
def test_a_body_is_allocated_once_however_many_reads_bring_it(size: int) -> None:
    """Why: appended to one growing buffer and then copied out, a body of a few MiB was
    copied at every growth of the buffer, and its cost per byte rose with its size
    (``bench/growth/http.py``: 10x time for a doubling from 1.5 MiB). Kept as it was read
    and joined once, the reader allocates about the body once, and nothing per read."""
    body = b"b" * (2 << 20)
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    reader = RequestReader()
    reader.receive_data(post(b"", length=len(body)))
    assert shape(drain(reader)) == ["head POST /mutate", "NEED_DATA"]
    events: list[Event] = []

    def feed() -> None:
        for piece in pieces:
            reader.receive_data(piece)
            events.extend(drain(reader))

    peak = traced_peak(feed)
    request = [e for e in events if isinstance(e, Request)]
    assert [r.body == body for r in request] == [True]
    assert peak <= len(body) + 64 * 1024, f"{peak} bytes allocated for a {len(body)}-byte body"


def test_a_head_fed_a_byte_at_a_time_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Linear cost without a clock: each byte is searched once and the head parsed once."""
    calls: list[int] = []
    parse = reader_module.parse_head

    def counted(raw: bytes) -> object:
        calls.append(len(raw))
        return parse(raw)

    monkeypatch.setattr(reader_module, "parse_head", counted)
    reader = RequestReader()
    raw = b"GET /healthz HTTP/1.1\r\nX:" + b" " * 30_000 + b"\r\n\r\n"
    feed(reader, _bytewise(raw))
    assert calls == [len(raw)]


NO_NEXT_CYCLE = [
    ("before any request", []),
    ("while a head is arriving", [b"GET / HT"]),
    ("after a refusal", [b"BAD\r\n\r\n"]),
    ("after a request whose body was left unread", [post(b"", length=DRAIN_LIMIT + 1)]),
]


@pytest.mark.parametrize("pieces", [n[1] for n in NO_NEXT_CYCLE], ids=[n[0] for n in NO_NEXT_CYCLE])
def test_no_next_cycle_unless_a_request_went_out_whole(pieces: list[bytes]) -> None:
    reader = RequestReader()
    feed(reader, pieces)
    with pytest.raises(RuntimeError, match="no next request"):
        reader.start_next_cycle()


def test_an_oversized_body_under_100_continue_never_asks_for_its_body() -> None:
    reader = RequestReader()
    reader.receive_data(post(b"", b"Expect: 100-continue", length=MAX_BODY + 1))
    events = drain(reader)
    assert CONTINUE not in events
    request = events[1]
    assert isinstance(request, Request) and not request.intact
    assert request.head.content_length == MAX_BODY + 1
    assert reader.phase is Phase.CLOSED
