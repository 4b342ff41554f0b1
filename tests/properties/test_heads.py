"""Property tests over request heads: hostile heads fed to the request reader, cut anywhere.

Every head a client can send ends, once its blank line and any body it declares have
arrived (or ``MAX_HEAD`` bytes without a blank line), in exactly one of two ways: a request
for the app, or a refusal whose status is one the server refuses with. How the bytes were
cut into reads changes nothing, and the reader's work is bounded by the bytes it was given:
the scan for the blank line reads each byte at most about twice, the head is parsed once
and never past ``MAX_HEAD``, and no more than ``MAX_HEAD`` bytes of a head are held beyond
the read that brought them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from unittest import mock

from hypothesis import event, given
from hypothesis import strategies as st

from webhooks.server import reader as reader_module
from webhooks.server.framing import DRAIN_LIMIT, MAX_BODY, MAX_HEAD, MAX_HEADERS, head_end
from webhooks.server.framing import parse_head as real_parse_head
from webhooks.server.metrics import REFUSAL_STATUSES
from webhooks.server.reader import (
    NEED_DATA,
    PAUSED,
    HeadReceived,
    Phase,
    Refusal,
    Request,
    RequestReader,
)

METHODS = [b"GET", b"POST", b"HEAD", b"PUT", b"post", b"G\x00T", b"", b"M" * 300, b"PRI"]
TARGETS = [
    b"/mutate",
    b"/validate/runtime-class?timeout=10s",
    b"*",
    b"http://example/mutate",
    b"",
    b"/a\x7fb",
    b"/%00%ff",
    b"/" + b"a" * 5000,
    b"/\xe2\x80\xa8",
]
VERSIONS = [b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.10", b"HTTP/1", b"", b"http/1.1"]
SEPARATORS = [b" ", b"  ", b"\t", b" \t"]
NAMES = [
    b"Host",
    b"Content-Length",
    b"content-length",
    b"Transfer-Encoding",
    b"Expect",
    b"Connection",
    b"X-Token",
    b"",
    b"Bad Name",
    b"X\x00",
    b"X_Forwarded",
    b"\xff",
]
LENGTHS = [0, 3, 10, MAX_BODY, MAX_BODY + 1, DRAIN_LIMIT + 1]
VALUES = [
    *(str(n).encode() for n in LENGTHS),
    b"-1",
    b"1,1",
    b" 3 ",
    b"0x10",
    b"9" * 13,
    b"chunked",
    b"gzip, chunked",
    b"100-continue",
    b"102-processing",
    b"close",
    b"keep-alive, close",
    b"\x01",
    b"a" + b" " * 3000 + b"b",
    b"\x80\xff",
    b"",
]
#: Line ends: the proper one, and the bare ones a lenient parser would accept.
ENDS = [b"\r\n", b"\n", b"\r"]
#: Sizes of one long header value, around the head limit and far past it.
PADDING = [100, MAX_HEAD - 100, MAX_HEAD, MAX_HEAD + 1, 200_000]


def _mostly(common: list[bytes], rare: list[bytes]) -> st.SearchStrategy[bytes]:
    """Half the time one of ``common``, else one of ``rare``: most heads get far enough in."""
    return st.one_of(st.sampled_from(common), st.sampled_from(rare))


#: Request lines a caller sends.
REQUEST_LINES = [
    b"POST /mutate?timeout=10s HTTP/1.1",
    b"POST /validate/runtime-class HTTP/1.1",
    b"GET /metrics HTTP/1.0",
]
#: Whole header lines that frame a request, each alone well formed.
FRAMING_LINES = [
    b"Host: localhost",
    b"Content-Type: application/json",
    b"Content-Length: 3",
    b"Transfer-Encoding: chunked",
    b"Expect: 100-continue",
    b"Expect: 102-processing",
    b"Connection: close",
]


@st.composite
def hostile_heads(draw: st.DrawFn) -> bytes:
    """A request head built from the pieces that break parsers, ending in a blank line."""
    line = (
        draw(st.sampled_from(METHODS))
        + draw(st.sampled_from(SEPARATORS))
        + draw(st.sampled_from(TARGETS))
        + draw(st.sampled_from(SEPARATORS))
        + draw(st.sampled_from(VERSIONS))
    )
    lines = [draw(_mostly(REQUEST_LINES, [line]))]
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            lines.append(b" folded continuation")
        elif kind < 5:
            lines.append(draw(st.sampled_from(FRAMING_LINES)))
        else:
            name = draw(st.sampled_from(NAMES))
            colon = draw(_mostly([b": "], [b":", b" : "]))
            lines.append(name + colon + draw(st.sampled_from(VALUES)))
    many = draw(st.sampled_from([0] * 8 + [MAX_HEADERS - 2, MAX_HEADERS + 1]))
    lines += [b"X-%d: v" % i for i in range(many)]
    padding = draw(st.sampled_from([0] * 20 + PADDING))
    if padding:
        lines.append(b"X-Pad: " + b"p" * padding)
    end = draw(_mostly([b"\r\n"], ENDS))
    return end.join(lines) + end + b"\r\n"


@dataclass
class Cost:
    """What the reader did: bytes scanned for the blank line, heads parsed and their sizes."""

    scanned: int = 0
    scans: int = 0
    parsed: list[int] | None = None
    held: int = 0


@contextmanager
def counted() -> Iterator[Cost]:
    """Count the reader's scans and parses while the block runs."""
    cost = Cost(parsed=[])

    def scan(buf: bytes | bytearray, scanned: int) -> int:
        cost.scans += 1
        cost.scanned += len(buf) - max(0, scanned - 3)
        return head_end(buf, scanned)

    def parse(raw: bytes) -> object:
        assert cost.parsed is not None
        cost.parsed.append(len(raw))
        return real_parse_head(raw)

    with (
        mock.patch.object(reader_module, "head_end", scan),
        mock.patch.object(reader_module, "parse_head", parse),
    ):
        yield cost


def _body_for(head: bytes) -> bytes:
    """The body the head declares, as far as the reader will read it (nothing if refused)."""
    reader = RequestReader()
    reader.receive_data(head)
    event = reader.next_event()
    if not isinstance(event, HeadReceived) or reader.phase is Phase.UNREAD:
        return b""
    return bytes(event.head.content_length)


def _outcome(pieces: list[bytes], cost: Cost | None = None) -> tuple[object, ...]:
    """What the reader makes of ``pieces``: the request's head and body, or the refusal."""
    reader = RequestReader()
    outcome: tuple[object, ...] = ("waiting",)
    for piece in pieces:
        reader.receive_data(piece)
        while (event := reader.next_event()) is not NEED_DATA:
            if cost is not None and reader.phase is Phase.HEAD:
                cost.held = max(cost.held, reader.buffered - len(piece))
            if isinstance(event, Request):
                head = event.head
                outcome = ("request", head.method, head.path, head.headers, event.body)
            elif isinstance(event, Refusal):
                outcome = ("refusal", event.status, event.reason)
            if event is PAUSED:
                return outcome
        if cost is not None and reader.phase is Phase.HEAD:
            cost.held = max(cost.held, reader.buffered - len(piece))
    return outcome


def _pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@given(hostile_heads(), st.lists(st.integers(0, 300_000), max_size=8))
def test_a_hostile_head_ends_in_a_request_or_a_refusal_however_it_is_cut(
    head: bytes, cuts: list[int]
) -> None:
    data = head + _body_for(head)
    whole = _outcome([data])
    if whole[0] == "waiting":  # no blank line the reader knows (bare CRs): the limit ends it
        data += b"x" * (MAX_HEAD + 1)
        whole = _outcome([data])
        assert whole[:2] == ("refusal", 431), whole
    assert whole[0] in ("request", "refusal"), whole
    if whole[0] == "refusal":
        status, reason = whole[1], whole[2]
        assert status in REFUSAL_STATUSES, whole
        assert isinstance(reason, str) and 0 < len(reason) <= 200 and "\n" not in reason
    event(f"{whole[0]} {whole[1] if whole[0] == 'refusal' else ''}".strip())
    assert _outcome(_pieces(data, cuts)) == whole


@given(hostile_heads(), st.lists(st.integers(0, 300_000), max_size=8))
def test_the_reader_s_work_on_a_head_is_bounded_by_its_bytes(head: bytes, cuts: list[int]) -> None:
    pieces = _pieces(head, cuts)
    with counted() as cost:
        _outcome(pieces, cost)
    assert cost.scans <= len(pieces), "one scan per read"
    assert cost.scanned <= len(head) + 3 * cost.scans, "each read's bytes are scanned once"
    assert cost.parsed is not None and len(cost.parsed) <= 1, "a head is parsed once"
    assert all(size <= MAX_HEAD for size in cost.parsed), "never past the head limit"
    assert cost.held <= MAX_HEAD, "at most MAX_HEAD bytes held beyond the last read"
