"""The worker's own decisions, without sockets: what the loop does with a connection once the
reader has made something of its bytes, when it closes, evicts and times out, and how an
answer goes out. The sockets and the poller are stand-ins that record what was asked of
them; what the bytes mean is the reader's (tests/server/test_reader.py), and the real
gunicorn over TLS is in tests/e2e."""

from __future__ import annotations

import logging
import selectors
import time
from collections.abc import Iterator
from typing import Any

import pytest
from gunicorn.workers import base

from tests.server.test_reader import post
from webhooks.server.framing import error_response
from webhooks.server.reader import Refusal, RequestReader
from webhooks.server.worker import (
    BUSY,
    IDLE,
    READ_BUDGET,
    READING,
    WRITING,
    Connection,
    Limits,
    Listener,
    Worker,
)
from webhooks.server.wsgi import Responder

GET_METRICS = b"GET /metrics HTTP/1.1\r\nHost: pw:9090\r\n\r\n"


class FakeSocket:
    """A non-blocking socket: ``incoming`` chunks to receive (then it would block, or ends
    with ``eof``), sends taken ``take`` bytes at a time (``0``: it would block), or failing."""

    def __init__(
        self,
        fd: int,
        incoming: list[bytes] | None = None,
        *,
        eof: bool = False,
        take: int | None = None,
        broken: bool = False,
    ) -> None:
        self.fd = fd
        self.incoming = list(incoming or [])
        self.eof = eof
        self.take = take
        self.broken = broken
        self.sent = bytearray()
        self.closed = False

    def fileno(self) -> int:
        return self.fd

    def recv(self, size: int) -> bytes:
        if self.incoming:
            return self.incoming.pop(0)
        if self.eof:
            return b""
        raise BlockingIOError

    def send(self, data: bytes | memoryview) -> int:
        if self.broken:
            raise ConnectionResetError
        if self.take == 0:
            raise BlockingIOError
        n = len(data) if self.take is None else min(self.take, len(data))
        self.sent += bytes(data[:n])
        return n

    def close(self) -> None:
        self.closed = True


class FakeSelector:
    """Records which events the loop waits for on each socket."""

    def __init__(self) -> None:
        self.watched: dict[Any, int] = {}

    def register(self, sock: Any, events: int, data: Any = None) -> None:
        assert sock not in self.watched
        self.watched[sock] = events

    def modify(self, sock: Any, events: int, data: Any = None) -> None:
        assert sock in self.watched
        self.watched[sock] = events

    def unregister(self, sock: Any) -> None:
        del self.watched[sock]


def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """Answers every request with its path."""
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [environ["PATH_INFO"].encode()]


def failing_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    raise RuntimeError("the app broke")


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Worker]:
    """A worker after its own set-up, with gunicorn's left out and a recording poller."""
    monkeypatch.setattr(base.Worker, "init_process", lambda self: None)
    made = Worker.__new__(Worker)
    made.init_process()
    made.selector.close()
    made.selector = FakeSelector()
    made.limits = Limits(io_timeout=10.0, keepalive=120.0, max_connections=4, threads=1)
    made.log = logging.getLogger("test-worker")
    yield made


def listener(worker: Worker, *, plain: bool = False, wsgi: Any = app) -> Listener:
    responder = Responder(wsgi, ("127.0.0.1", 8443), "http" if plain else "https", worker.date)
    return Listener(FakeSocket(3), plain, responder)  # type: ignore[arg-type]


def connect(
    worker: Worker, sock: FakeSocket, *, plain: bool = False, phase: int = IDLE, wsgi: Any = app
) -> Connection:
    """``sock`` accepted and waiting for its next request, as ``_accept`` leaves it."""
    conn = Connection(sock, listener(worker, plain=plain, wsgi=wsgi), ("10.0.0.1", 50000), phase)  # type: ignore[arg-type]
    conn.deadline = time.monotonic() + worker.limits.keepalive
    worker.conns[conn.fd] = conn
    worker.idle[conn.fd] = conn
    worker._want(conn, selectors.EVENT_READ)
    return conn


def closed(worker: Worker, conn: Connection) -> bool:
    sock = conn.sock
    assert isinstance(sock, FakeSocket)
    return sock.closed and conn.fd not in worker.conns and sock not in worker.selector.watched


def status_line(sock: Any) -> bytes:
    return bytes(sock.sent).split(b"\r\n", 1)[0]


# ------------------------------------------------------------------ reading


def test_a_complete_request_goes_to_a_thread_and_the_loop_stops_watching_it(
    worker: Worker,
) -> None:
    sock = FakeSocket(10, [post()])
    conn = connect(worker, sock)
    worker._read(conn)
    assert conn.phase == BUSY
    assert sock not in worker.selector.watched and conn.fd not in worker.idle
    queued, request = worker.jobs.get_nowait()  # type: ignore[misc]
    assert queued is conn
    assert (request.head.method, request.head.path) == ("POST", "/mutate")


def test_a_request_split_across_reads_is_dispatched_once_whole(worker: Worker) -> None:
    whole = post()
    sock = FakeSocket(10, [whole[:20]])
    conn = connect(worker, sock)
    worker._read(conn)
    assert conn.phase == READING and worker.jobs.empty()
    sock.incoming.append(whole[20:])
    worker._read(conn)
    assert conn.phase == BUSY and not worker.jobs.empty()


def test_the_first_byte_starts_the_request_deadline_and_ends_the_idle_time(
    worker: Worker,
) -> None:
    conn = connect(worker, FakeSocket(10, [b"POST /mu"]))
    before = time.monotonic()
    worker._read(conn)
    assert conn.phase == READING and conn.fd not in worker.idle
    assert before + 10.0 <= conn.deadline <= time.monotonic() + 10.0


def test_a_client_that_hangs_up_is_closed(worker: Worker) -> None:
    conn = connect(worker, FakeSocket(10, eof=True))
    worker._read(conn)
    assert closed(worker, conn)


def test_a_request_the_reader_refuses_is_answered_by_the_loop_and_closed(
    worker: Worker,
) -> None:
    junk = b"NOT HTTP AT ALL\r\n\r\n"
    reader = RequestReader()
    reader.receive_data(junk)
    refusal = reader.next_event()
    assert isinstance(refusal, Refusal)
    sock = FakeSocket(10, [junk])
    conn = connect(worker, sock)
    worker._read(conn)
    expected = error_response(refusal.status, refusal.reason, worker.date.now())
    assert status_line(sock) == expected.split(b"\r\n", 1)[0]
    assert bytes(sock.sent).endswith(f"{refusal.reason}\n".encode())
    assert closed(worker, conn)
    assert worker.jobs.empty()


def test_expect_100_continue_is_answered_before_the_body_arrives(worker: Worker) -> None:
    head = post(b"", b"Expect: 100-continue", length=len(b'{"kind":"AdmissionReview"}'))
    sock = FakeSocket(10, [head])
    conn = connect(worker, sock)
    worker._read(conn)
    assert bytes(sock.sent) == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert conn.phase == READING and worker.jobs.empty()


def test_one_connection_reads_at_most_its_budget_per_turn(worker: Worker) -> None:
    body = b"x" * (READ_BUDGET + 1)
    half = READ_BUDGET // 2
    sock = FakeSocket(10, [post(body)[:half], b"x" * (half + 10), b"rest"])
    conn = connect(worker, sock)
    worker._read(conn)
    assert worker.again == [conn]
    assert sock.incoming == [b"rest"]


@pytest.mark.parametrize(
    ("request_bytes", "dispatched"),
    [
        (GET_METRICS, True),
        (b"GET /healthz HTTP/1.1\r\nHost: pw\r\n\r\n", True),
        (b"HEAD /readyz HTTP/1.1\r\nHost: pw\r\n\r\n", True),
        (post(), False),
        (b"POST /metrics HTTP/1.1\r\nHost: pw\r\nContent-Length: 0\r\n\r\n", False),
    ],
    ids=[
        "GET /metrics is served",
        "GET /healthz is served",
        "HEAD /readyz is served",
        "a review is not",
        "POST /metrics is not",
    ],
)
def test_the_plain_port_serves_only_metrics_and_probes(
    worker: Worker, request_bytes: bytes, dispatched: bool
) -> None:
    sock = FakeSocket(10, [request_bytes])
    conn = connect(worker, sock, plain=True)
    worker._read(conn)
    if dispatched:
        assert conn.phase == BUSY and not worker.jobs.empty()
        return
    assert status_line(sock) == b"HTTP/1.1 404 Not Found"
    assert bytes(sock.sent).endswith(b"not found: this port serves /metrics, /healthz, /readyz\n")
    assert closed(worker, conn) and worker.jobs.empty()


# ------------------------------------------------------------------ deadlines and room


def test_a_connection_past_its_deadline_is_closed_and_only_a_late_body_gets_408(
    worker: Worker,
) -> None:
    idle = connect(worker, FakeSocket(10))
    late = connect(worker, FakeSocket(11, [post(length=100)]))
    worker._read(late)
    assert late.phase == READING and late.reader.head_received
    busy = connect(worker, FakeSocket(12), phase=BUSY)
    now = time.monotonic() + 1000.0
    worker._sweep(now)
    assert closed(worker, idle) and bytes(idle.sock.sent) == b""  # type: ignore[attr-defined]
    assert closed(worker, late)
    assert status_line(late.sock) == b"HTTP/1.1 408 Request Timeout"
    assert busy.fd in worker.conns, "a connection a thread holds is never swept"


def test_a_connection_within_its_deadline_is_kept(worker: Worker) -> None:
    conn = connect(worker, FakeSocket(10))
    worker._sweep(time.monotonic())
    assert conn.fd in worker.conns


def test_making_room_closes_the_longest_idle_connection(worker: Worker) -> None:
    first = connect(worker, FakeSocket(10))
    second = connect(worker, FakeSocket(11))
    assert worker._evict()
    assert closed(worker, first) and second.fd in worker.conns
    assert worker._evict()
    assert not worker._evict(), "no idle connection left to close"


def test_closing_twice_is_harmless(worker: Worker) -> None:
    conn = connect(worker, FakeSocket(10))
    worker._close(conn)
    worker._close(conn)
    assert closed(worker, conn)


# ------------------------------------------------------------------ answering


@pytest.mark.parametrize(
    ("take", "broken", "rest"),
    [(None, False, None), (3, False, None), (0, False, b"answer"), (None, True, b"")],
    ids=[
        "the socket takes it all: nothing left",
        "a few bytes a call: all of it, in turns",
        "a socket that would block: all of it is left",
        "a broken socket: an empty rest, which means close",
    ],
)
def test_sending_returns_what_the_socket_did_not_take(
    take: int | None, broken: bool, rest: bytes | None
) -> None:
    sock = FakeSocket(10, take=take, broken=broken)
    conn = Connection(sock, None, None, BUSY)  # type: ignore[arg-type]
    left = Worker._send_some(conn, memoryview(b"answer"))
    assert (None if left is None else bytes(left)) == rest
    if rest is None:
        assert bytes(sock.sent) == b"answer"


def serve(worker: Worker) -> None:
    """Run the queued request on this thread, as a request thread would."""
    worker.jobs.put(None)
    worker._serve_jobs()


def test_a_thread_runs_the_app_and_the_loop_then_waits_for_the_next_request(
    worker: Worker,
) -> None:
    sock = FakeSocket(10, [post()])
    conn = connect(worker, sock)
    worker._read(conn)
    serve(worker)
    assert status_line(sock) == b"HTTP/1.1 200 OK"
    assert bytes(sock.sent).endswith(b"\r\n\r\n/mutate")
    worker._finish()
    assert conn.phase == IDLE and conn.fd in worker.idle
    assert worker.selector.watched[sock] == selectors.EVENT_READ
    assert conn.reader.buffered == 0


def test_an_app_that_raises_gets_a_500_and_the_connection_closes(worker: Worker) -> None:
    sock = FakeSocket(10, [post()])
    conn = connect(worker, sock, wsgi=failing_app)
    worker._read(conn)
    serve(worker)
    assert status_line(sock) == b"HTTP/1.1 500 Internal Server Error"
    worker._finish()
    assert closed(worker, conn)


def test_a_pipelined_request_is_dispatched_as_soon_as_the_first_is_answered(
    worker: Worker,
) -> None:
    sock = FakeSocket(10, [post() + GET_METRICS.replace(b"/metrics", b"/validate")])
    conn = connect(worker, sock)
    worker._read(conn)
    serve(worker)
    worker._finish()
    assert conn.phase == BUSY
    _, second = worker.jobs.get_nowait()  # type: ignore[misc]
    assert second.head.path == "/validate"


def test_what_the_socket_did_not_take_is_written_when_it_is_ready(worker: Worker) -> None:
    sock = FakeSocket(10, [post()], take=0)
    conn = connect(worker, sock)
    worker._read(conn)
    serve(worker)
    worker._finish()
    assert conn.phase == WRITING
    assert worker.selector.watched[sock] == selectors.EVENT_WRITE
    sock.take = None
    worker._write(conn)
    assert status_line(sock) == b"HTTP/1.1 200 OK"
    assert conn.phase == IDLE and conn.out is None


@pytest.mark.parametrize(
    "setting",
    ["close_after", "stopping", "keepalive 0"],
    ids=[
        "the app asked to close",
        "the worker is stopping",
        "keep-alive is off",
    ],
)
def test_after_an_answer_the_connection_closes_when(worker: Worker, setting: str) -> None:
    sock = FakeSocket(10, [post()])
    conn = connect(worker, sock)
    worker._read(conn)
    serve(worker)
    if setting == "close_after":
        conn.close_after = True
    elif setting == "stopping":
        worker.stopping = True
    else:
        worker.limits = Limits(keepalive=0.0)
    worker._finish()
    assert closed(worker, conn)


def test_an_answer_for_a_connection_already_closed_is_dropped(worker: Worker) -> None:
    sock = FakeSocket(10, [post()])
    conn = connect(worker, sock)
    worker._read(conn)
    serve(worker)
    worker._close(conn)
    worker._finish()
    assert closed(worker, conn) and not worker.done


# ------------------------------------------------------------------ set-up


class _Options:
    io_timeout = 3.5


class _Cfg:
    keepalive = 30
    worker_connections = 200
    threads = 0


class _App:
    options = _Options()


def test_the_limits_come_from_the_serve_options_and_gunicorns_config(worker: Worker) -> None:
    worker.app = _App()
    worker.cfg = _Cfg()
    assert worker._limits() == Limits(
        io_timeout=3.5, keepalive=30.0, max_connections=200, threads=1
    )
