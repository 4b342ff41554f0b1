"""Request framing and the WSGI bridge, without sockets: bytes in, head and environ out."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from webhooks.server.framing import FramingError, Head, error_response, head_end, parse_head
from webhooks.server.wsgi import HttpDate, Responder

REVIEW_HEAD = (
    b"POST /mutate?timeout=5s HTTP/1.1\r\nHost: svc.ns.svc:443\r\n"
    b"Content-Type: application/json\r\nContent-Length: 12\r\nAccept: application/json\r\n"
    b"Accept: */*\r\n\r\n"
)


def test_an_api_server_review_head_is_parsed_whole() -> None:
    head = parse_head(REVIEW_HEAD)
    assert (head.method, head.path, head.query, head.version) == (
        "POST",
        "/mutate",
        "timeout=5s",
        "HTTP/1.1",
    )
    assert head.content_length == 12
    assert head.keep_alive and not head.expect_continue
    assert ("Content-Type", "application/json") in head.headers


def test_the_end_of_a_head_is_found_across_pieces_without_rescanning() -> None:
    buf = bytearray()
    scanned = 0
    for piece in (REVIEW_HEAD[:10], REVIEW_HEAD[10:-2], REVIEW_HEAD[-2:] + b"{body}"):
        buf += piece
        end = head_end(buf, scanned)
        scanned = len(buf)
    assert end == len(REVIEW_HEAD)


ENDS = [
    ("CRLF CRLF ends a head", b"GET / HTTP/1.1\r\nHost: x\r\n\r\nbody", 27),
    ("two bare line feeds end a head", b"GET / HTTP/1.1\nHost: x\n\nbody", 24),
    ("a bare line feed after CRLF ends a head", b"GET / HTTP/1.1\r\nHost: x\r\n\nbody", 26),
    ("CRLF after a bare line feed ends a head", b"GET / HTTP/1.1\nHost: x\n\r\nbody", 25),
    ("the first blank line ends it", b"GET / HTTP/1.1\n\nHost: x\r\n\r\n", 16),
    ("bare carriage returns end nothing", b"GET / HTTP/1.1\rHost: x\r\r\r", -1),
    ("one line end is not a blank line", b"GET / HTTP/1.1\r\nHost: x\r\n", -1),
]


@pytest.mark.parametrize(("data", "end"), [e[1:] for e in ENDS], ids=[e[0] for e in ENDS])
def test_a_head_ends_at_its_first_blank_line(data: bytes, end: int) -> None:
    """Why bare line feeds count: such a head is refused (400) at once, where its client
    used to wait for the I/O timeout and a close without an answer."""
    assert head_end(data, 0) == end
    if end > 0 and b"\r\n\r\n" not in data[:end]:
        with pytest.raises(FramingError) as refused:
            parse_head(data[:end])
        assert refused.value.status == 400


GOOD = [
    ("HTTP/1.0 closes after the answer", b"GET /healthz HTTP/1.0\r\n\r\n", "keep_alive", False),
    (
        "Connection: close closes after the answer",
        b"GET /readyz HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n",
        "keep_alive",
        False,
    ),
    (
        "Expect: 100-continue is noted on HTTP/1.1",
        b"POST /validate HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n",
        "expect_continue",
        True,
    ),
    ("a GET without a body has length zero", b"GET /metrics HTTP/1.1\r\n\r\n", "content_length", 0),
    (
        "header values lose surrounding blanks",
        b"GET / HTTP/1.1\r\nX-Trace:  \t abc \t\r\n\r\n",
        "headers",
        [("X-Trace", "abc")],
    ),
    (
        "a letter, 60,000 blanks and a letter is one value",
        b"GET / HTTP/1.1\r\nX: a" + b" " * 60_000 + b"b\r\n\r\n",
        "headers",
        [("X", "a" + " " * 60_000 + "b")],
    ),
    (
        "a value of 60,000 blanks is empty",
        b"GET / HTTP/1.1\r\nX:" + b" \t" * 30_000 + b"\r\n\r\n",
        "headers",
        [("X", "")],
    ),
    (
        "a 60,000-byte path is a path",
        b"GET /" + b"a" * 60_000 + b" HTTP/1.1\r\n\r\n",
        "path",
        "/" + "a" * 60_000,
    ),
    (
        "bytes above 0x7f are Latin-1 text",
        b"GET / HTTP/1.1\r\nX: \xe9\r\n\r\n",
        "headers",
        [("X", "\xe9")],
    ),
    (
        "an Upgrade header is not offered, and the request is served",
        b"GET /healthz HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        "path",
        "/healthz",
    ),
    (
        "an HTTP/1.0 client does not get HTTP/1.1's Expect",
        b"POST /validate HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n",
        "expect_continue",
        False,
    ),
]


@pytest.mark.parametrize(
    ("raw", "attribute", "expected"), [g[1:] for g in GOOD], ids=[g[0] for g in GOOD]
)
def test_heads_that_are_served(raw: bytes, attribute: str, expected: Any) -> None:
    assert getattr(parse_head(raw), attribute) == expected


BAD = [
    ("a request line without a version is 400", b"GET /\r\n\r\n", 400),
    ("HTTP/2 over this parser is 505", b"GET / HTTP/2.0\r\n\r\n", 505),
    ("a request line with an empty version is 400", b"GET / \r\n\r\n", 400),
    ("HTTP/2's preface is 505", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
    ("HTTP/1.2 is 505", b"GET / HTTP/1.2\r\n\r\n", 505),
    ("two blanks before the target are 400", b"GET  / HTTP/1.1\r\n\r\n", 400),
    ("two blanks after the target are 400", b"GET /  HTTP/1.1\r\n\r\n", 400),
    ("a blank inside the target is 400", b"GET /a b HTTP/1.1\r\n\r\n", 400),
    ("a blank before the method is 400", b" GET / HTTP/1.1\r\n\r\n", 400),
    ("a blank after the version is 400", b"GET / HTTP/1.1 \r\n\r\n", 400),
    ("a method llhttp does not know is 400", b"get / HTTP/1.1\r\n\r\n", 400),
    ("a control character in the path is 400", b"GET /\x01 HTTP/1.1\r\n\r\n", 400),
    ("an absolute URI target is 400", b"GET http://x/ HTTP/1.1\r\n\r\n", 400),
    ("a folded header line is 400", b"GET / HTTP/1.1\r\nA: b\r\n  c\r\n\r\n", 400),
    ("a header without a colon is 400", b"GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400),
    ("a space before the colon is 400", b"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400),
    (
        "two different Content-Length headers are 400 (smuggling)",
        b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
        400,
    ),
    (
        "two equal Content-Length headers are 400 too",
        b"POST / HTTP/1.1\r\nContent-Length: 7\r\nContent-Length: 7\r\n\r\n",
        400,
    ),
    (
        "a thirteen-digit Content-Length is 400",
        b"POST / HTTP/1.1\r\nContent-Length: 1234567890123\r\n\r\n",
        400,
    ),
    ("a signed Content-Length is 400", b"POST / HTTP/1.1\r\nContent-Length: +3\r\n\r\n", 400),
    (
        "a chunked body is 411: Content-Length is required",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        411,
    ),
    (
        "a transfer coding beside a length is 411 too (smuggling)",
        b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        411,
    ),
    ("an unknown expectation is 417", b"POST / HTTP/1.1\r\nExpect: magic\r\n\r\n", 417),
    (
        "a control character in a value is 400",
        b"GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n",
        400,
    ),
    (
        "a control character after 60,000 blanks is 400",
        b"GET / HTTP/1.1\r\nX: a" + b" " * 60_000 + b"\x01\r\n\r\n",
        400,
    ),
    ("a bare CR inside a value is 400", b"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", 400),
    ("a header with no name is 400", b"GET / HTTP/1.1\r\n: v\r\n\r\n", 400),
    ("too many headers is 431", b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n", 431),
    ("15,000 empty headers are 431", b"GET / HTTP/1.1\r\n" + b"X:\r\n" * 15_000 + b"\r\n", 431),
]


@pytest.mark.parametrize(("raw", "status"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_heads_that_are_refused_with_the_status_a_client_can_act_on(
    raw: bytes, status: int
) -> None:
    with pytest.raises(FramingError) as caught:
        parse_head(raw)
    assert caught.value.status == status


def test_an_error_answer_is_complete_and_closes() -> None:
    raw = error_response(408, "request not received in time", "Mon, 23 Nov 2026 12:00:00 GMT")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b"Connection: close" in head
    assert f"Content-Length: {len(body)}".encode() in head
    assert body == b"request not received in time\n"


def _app(
    status: str, headers: list[tuple[str, str]], chunks: Iterable[bytes]
) -> Callable[..., Iterable[bytes]]:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        app.environ = environ  # type: ignore[attr-defined]
        start_response(status, headers)
        return chunks

    return app


def _head(raw: bytes) -> Head:
    return parse_head(raw)


def test_the_environ_carries_the_request_as_pep_3333_says() -> None:
    app = _app("200 OK", [], [b""])
    responder = Responder(app, ("0.0.0.0", 8443), "https", HttpDate())
    raw = (
        b"POST /mutate/runtime%2Dclass?x=1 HTTP/1.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\nX-Forwarded-For: a\r\nX-Forwarded-For: b\r\nX_Forwarded: no\r\n\r\n"
    )
    env = responder.environ(_head(raw), b"{}", ("10.0.0.7", 40000), {"extra": 1})
    assert env["REQUEST_METHOD"] == "POST"
    assert env["PATH_INFO"] == "/mutate/runtime-class"
    assert env["QUERY_STRING"] == "x=1"
    assert (env["CONTENT_TYPE"], env["CONTENT_LENGTH"]) == ("application/json", "2")
    assert env["HTTP_X_FORWARDED_FOR"] == "a,b"
    assert "HTTP_X_FORWARDED" not in env  # an underscore would pose as a dash
    assert (env["REMOTE_ADDR"], env["REMOTE_PORT"]) == ("10.0.0.7", "40000")
    assert (env["SERVER_PORT"], env["wsgi.url_scheme"]) == ("8443", "https")
    assert isinstance(env["wsgi.input"], io.BytesIO) and env["wsgi.input"].read() == b"{}"
    assert env["extra"] == 1


RESPONSES = [
    (
        "a kept-alive answer carries the server's own length",
        [("Content-Length", "999"), ("Content-Type", "application/json")],
        [b'{"a":', b"1}"],
        True,
        False,
    ),
    (
        "an app's Connection: close closes the connection",
        [("Connection", "close")],
        [b"x"],
        True,
        True,
    ),
    ("a client that asked to close gets Connection: close", [], [b"x"], False, True),
]


@pytest.mark.parametrize(
    ("headers", "chunks", "keep_alive", "closes"),
    [r[1:] for r in RESPONSES],
    ids=[r[0] for r in RESPONSES],
)
def test_responses_are_framed_by_the_server(
    headers: list[tuple[str, str]], chunks: list[bytes], keep_alive: bool, closes: bool
) -> None:
    responder = Responder(_app("200 OK", headers, chunks), ("h", 1), "https", HttpDate())
    env = responder.environ(_head(b"GET /x HTTP/1.1\r\n\r\n"), b"", None)
    out, close = responder.respond(env, keep_alive)
    head, _, body = out.partition(b"\r\n\r\n")
    assert close is closes
    assert body == b"".join(chunks)
    assert head.count(b"Content-Length:") == 1
    assert f"Content-Length: {len(body)}".encode() in head
    assert (b"Connection: close" in head) is closes
    assert b"Date: " in head


def test_a_head_request_gets_the_length_but_no_body() -> None:
    responder = Responder(_app("200 OK", [], [b"ok\n"]), ("h", 1), "http", HttpDate())
    env = responder.environ(_head(b"HEAD /healthz HTTP/1.1\r\n\r\n"), b"", None)
    out, _ = responder.respond(env, True)
    assert out.endswith(b"Content-Length: 3\r\n\r\n")
