"""The worker's own decisions, without sockets: what the loop does with a connection once the
reader has made something of its bytes, when it closes, evicts and times out, and how an
answer goes out. The sockets and the poller are stand-ins that record what was asked of
them; what the bytes mean is the reader's (tests/server/test_reader.py), and the real
gunicorn over TLS is in tests/e2e."""

from __future__ import annotations

import logging
import selectors
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from gunicorn import util
from gunicorn.workers import base

from tests.server.test_reader import post
from webhooks.server.budget import Budget
from webhooks.server.framing import DRAIN_LIMIT, MAX_HEAD, error_response
from webhooks.server.reader import Refusal, RequestReader
from webhooks.server.worker import (
    ACCEPT_BATCH,
    BUSY,
    HANDSHAKE,
    IDLE,
    LINGER,
    LINGERING,
    READ_BUDGET,
    READING,
    STOP_LINGER,
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
        self.shut = False

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

    def shutdown(self, how: int) -> None:
        self.shut = True

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
    made.limits = Limits(
        io_timeout=10.0, keepalive=120.0, max_connections=4, threads=1, max_plain_connections=2
    )
    made.log = logging.getLogger("test-worker")
    made.budgets = {  # type: ignore[attr-defined]
        False: Budget(made.limits.max_connections, made.limits.head_timeout),
        True: Budget(made.limits.max_plain_connections, made.limits.head_timeout),
    }
    yield made


def listener(worker: Worker, *, plain: bool = False, wsgi: Any = app) -> Listener:
    """The worker's TLS or plain listener (one budget each), answering with ``wsgi``."""
    responder = Responder(wsgi, ("127.0.0.1", 8443), "http" if plain else "https", worker.date)
    budget = worker.budgets[plain]  # type: ignore[attr-defined]
    return Listener(FakeSocket(3), plain, responder, budget)  # type: ignore[arg-type]


def connect(
    worker: Worker, sock: FakeSocket, *, plain: bool = False, phase: int = IDLE, wsgi: Any = app
) -> Connection:
    """``sock`` accepted and waiting for its first request, as ``_accept`` leaves it."""
    conn = Connection(sock, listener(worker, plain=plain, wsgi=wsgi), ("10.0.0.1", 50000), phase)  # type: ignore[arg-type]
    now = time.monotonic()
    conn.deadline = now + worker.limits.keepalive
    worker.conns[conn.fd] = conn
    conn.listener.budget.opened(conn.fd, conn, now)
    worker._want(conn, selectors.EVENT_READ)
    return conn


def kept_alive(worker: Worker, sock: FakeSocket, *, plain: bool = False) -> Connection:
    """``sock`` answered once and waiting for its next request, as ``_answered`` leaves it."""
    conn = connect(worker, sock, plain=plain)
    conn.listener.budget.idle(conn.fd, conn)
    return conn


def closed(worker: Worker, conn: Connection) -> bool:
    sock = conn.sock
    assert isinstance(sock, FakeSocket)
    return sock.closed and conn.fd not in worker.conns and sock not in worker.selector.watched


def lingering(worker: Worker, conn: Connection) -> bool:
    """Answered and closing: writing stopped, reading on to drop what the client still sends."""
    sock = conn.sock
    assert isinstance(sock, FakeSocket)
    return (
        conn.phase == LINGERING
        and sock.shut
        and not sock.closed
        and worker.selector.watched.get(sock) == selectors.EVENT_READ
        and conn.listener.budget.counts()[0] == 1
    )


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
    assert sock not in worker.selector.watched
    assert conn.listener.budget.counts() == (0, 0, 0, 0), "whole: never closed for room"
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
    conn = kept_alive(worker, FakeSocket(10, [b"POST /mu"]))
    before = time.monotonic()
    worker._read(conn)
    assert conn.phase == READING and conn.listener.budget.counts() == (0, 1, 0, 0)
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
    assert lingering(worker, conn)
    assert worker.jobs.empty()


@pytest.mark.parametrize(
    ("incoming", "eof"),
    [
        ([b"the rest of a head"], True),
        ([b"x" * 65536] * (DRAIN_LIMIT // 65536 + 1), False),
    ],
    ids=[
        "the client stops sending: closed at its end",
        "the client sends on: closed past DRAIN_LIMIT dropped bytes",
    ],
)
def test_a_lingering_connection_drops_what_arrives_and_closes(
    worker: Worker, incoming: list[bytes], eof: bool
) -> None:
    """Why it lingers: a close with unread bytes resets the connection, and the reset could
    overtake the answer (a 200 KB head over TLS got a reset instead of its 431)."""
    sock = FakeSocket(10, [b"GET /" + b"a" * (MAX_HEAD + 1)])
    conn = connect(worker, sock)
    worker._read(conn)
    assert status_line(sock) == b"HTTP/1.1 431 Request Header Fields Too Large"
    assert lingering(worker, conn)
    sock.incoming, sock.eof = incoming, eof
    for _ in range(len(incoming) // 16 + 2):  # each turn reads at most READ_BUDGET
        if conn.fd in worker.conns:
            worker._step(conn, selectors.EVENT_READ)
    assert closed(worker, conn)
    assert len(bytes(sock.sent).split(b"HTTP/1.1 ")) == 2, "one answer only"


def test_a_lingering_connection_is_closed_at_its_deadline(worker: Worker) -> None:
    conn = connect(worker, FakeSocket(10, [b"BROKEN\r\n\r\n"]))
    worker._read(conn)
    assert lingering(worker, conn)
    assert conn.deadline <= time.monotonic() + LINGER
    worker._sweep(conn.deadline + 0.01)
    assert closed(worker, conn)


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
    assert lingering(worker, conn) and worker.jobs.empty()


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
    assert lingering(worker, late), "the client may still be sending its body"
    assert status_line(late.sock) == b"HTTP/1.1 408 Request Timeout"
    assert busy.fd in worker.conns, "a connection a thread holds is never swept"


def test_a_connection_within_its_deadline_is_kept(worker: Worker) -> None:
    conn = connect(worker, FakeSocket(10))
    worker._sweep(time.monotonic())
    assert conn.fd in worker.conns


def _unfinished(worker: Worker, fd: int, *, plain: bool = False) -> Connection:
    conn = connect(worker, FakeSocket(fd, [b"GET /metr"]), plain=plain)
    worker._read(conn)
    return conn


def _awaiting_body(worker: Worker, fd: int, *, plain: bool = False) -> Connection:
    conn = connect(worker, FakeSocket(fd, [post(length=100)]), plain=plain)
    worker._read(conn)
    return conn


def _busy(worker: Worker, fd: int, *, plain: bool = False) -> Connection:
    conn = connect(worker, FakeSocket(fd, [post()]), plain=plain)
    worker._read(conn)
    assert conn.phase == BUSY
    return conn


def _lingering(worker: Worker, fd: int, *, plain: bool = False) -> Connection:
    conn = connect(worker, FakeSocket(fd, [b"BROKEN\r\n\r\n"]), plain=plain)
    worker._read(conn)
    return conn


def _idle(worker: Worker, fd: int, *, plain: bool = False) -> Connection:
    return kept_alive(worker, FakeSocket(fd), plain=plain)


#: id, the connections in the order they arrive (by how they are made), how many seconds
#: later room is made, and which (by position) is closed; ``None``: none may be.
ROOM: list[tuple[str, list[Any], float, int | None]] = [
    (
        "a connection answered and closing goes first",
        [_idle, _unfinished, _lingering],
        5.0,
        2,
    ),
    (
        "then one that has not finished its head in time, even before an idle one",
        [_idle, _unfinished, _idle],
        5.0,
        1,
    ),
    ("then the longest idle", [_busy, _awaiting_body, _idle, _idle, _unfinished], 0.0, 2),
    ("then a body not arrived in time", [_busy, _awaiting_body, _busy], 5.0, 1),
    ("never a body within its time", [_busy, _awaiting_body, _busy], 0.0, None),
    (
        "then the oldest unfinished one within its time",
        [_busy, _awaiting_body, _unfinished, _unfinished],
        0.0,
        2,
    ),
    ("never one whose request arrived whole", [_busy, _busy, _busy, _busy], 5.0, None),
]


@pytest.mark.parametrize(
    ("made", "later", "chosen"), [r[1:] for r in ROOM], ids=[r[0] for r in ROOM]
)
def test_room_is_made_by_closing_in_this_order(
    worker: Worker, made: list[Any], later: float, chosen: int | None
) -> None:
    conns = [make(worker, 10 + i) for i, make in enumerate(made)]
    tls = conns[0].listener
    made_room = worker._evict(tls, time.monotonic() + later)
    assert made_room is (chosen is not None)
    for i, conn in enumerate(conns):
        assert (conn.fd not in worker.conns) is (i == chosen), i


def test_a_flood_of_unfinished_connections_only_ever_closes_its_oldest(worker: Worker) -> None:
    """A review's connection is unfinished for the milliseconds of its handshake and head: it
    is closed only once a whole budget of newer connections has arrived meanwhile."""
    review = _unfinished(worker, 10)
    flood = [_unfinished(worker, 11 + i) for i in range(3)]
    now = time.monotonic()
    assert worker._evict(review.listener, now) and review.fd not in worker.conns
    for i in range(3):
        worker._evict(review.listener, now)
        assert flood[i].fd not in worker.conns and all(c.fd in worker.conns for c in flood[i + 1 :])


def test_a_turn_reads_waiting_bytes_before_it_accepts_newcomers(
    worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why: under a flood every newcomer closes the oldest unfinished connection; a caller
    whose head has arrived is read first, and is then under way, never closed for room."""
    caller = _unfinished(worker, 10)
    caller.sock.incoming.append(b"rics HTTP/1.1\r\n\r\n")  # type: ignore[attr-defined]
    tls = caller.listener
    order: list[str] = []
    monkeypatch.setattr(worker, "_accept", lambda listener: order.append("accept"))
    monkeypatch.setattr(worker, "_dispatch", lambda conn, request: order.append("read"))

    class Key:
        def __init__(self, data: Any) -> None:
            self.data = data

    events = [(Key(tls), selectors.EVENT_READ), (Key(caller), selectors.EVENT_READ)]
    worker.selector.select = lambda timeout: events  # type: ignore[attr-defined]
    worker._turn(0.0)
    assert order == ["read", "accept"]


@pytest.mark.parametrize(
    ("cap", "batch"),
    [(1000, ACCEPT_BATCH), (64, 32), (16, 8)],
    ids=["a large budget: the batch", "the metrics port's: half of it", "a small one: half"],
)
def test_a_turn_accepts_at_most_half_a_budget(
    worker: Worker, monkeypatch: pytest.MonkeyPatch, cap: int, batch: int
) -> None:
    """So a connection accepted in one turn is still open when the next turn reads it."""

    class Backlog:
        """A listening socket with a thousand connections waiting."""

        def __init__(self) -> None:
            self.waiting = [FakeSocket(100 + i) for i in range(1000)]

        def accept(self) -> tuple[FakeSocket, tuple[str, int]]:
            if not self.waiting:
                raise BlockingIOError
            return self.waiting.pop(0), ("10.0.0.2", 40000)

    monkeypatch.setattr(FakeSocket, "family", socket.AF_UNIX, raising=False)
    monkeypatch.setattr(FakeSocket, "setblocking", lambda self, flag: None, raising=False)
    monkeypatch.setattr(util, "close_on_exec", lambda fd: None)
    worker.contexts = None
    backlog = Backlog()
    plain = listener(worker, plain=True)
    plain.sock, plain.budget = backlog, Budget(cap)  # type: ignore[assignment]
    worker._accept(plain)
    assert len(worker.conns) == batch and len(backlog.waiting) == 1000 - batch


def test_the_plain_port_makes_room_only_among_its_own_connections(worker: Worker) -> None:
    """Why two budgets: the metrics port takes any client; held there, connections that each
    sent one byte of a head filled a cap shared with admission, and then every admission
    connection was closed as soon as it was accepted."""
    admission = [_busy(worker, 10 + i) for i in range(4)]
    plain = [_unfinished(worker, 20 + i, plain=True) for i in range(2)]
    tls, metrics = admission[0].listener, plain[0].listener
    assert tls.budget.full and metrics.budget.full
    later = time.monotonic() + 1000.0
    assert worker._evict(metrics, later) and plain[0].fd not in worker.conns
    assert not worker._evict(tls, later), "a review under way is never closed for room"
    assert all(conn.fd in worker.conns for conn in admission)
    worker._close(admission[0])
    assert not tls.budget.full, "an admission slot freed is admission's"


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
    assert conn.phase == IDLE and conn.listener.budget.counts() == (0, 0, 1, 0)
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
    ["close_after", "stopping before the thread", "keepalive 0"],
    ids=[
        "the app asked to close",
        "the worker was stopping when the request began (the answer says so)",
        "keep-alive is off",
    ],
)
def test_after_an_answer_the_connection_closes_when(worker: Worker, setting: str) -> None:
    sock = FakeSocket(10, [post()])
    conn = connect(worker, sock)
    worker._read(conn)
    if setting == "stopping before the thread":
        worker.stopping = True
    serve(worker)
    if setting == "close_after":
        conn.close_after = True
    elif setting == "keepalive 0":
        worker.limits = Limits(keepalive=0.0)
    worker._finish()
    assert closed(worker, conn)
    if setting == "stopping before the thread":
        assert b"\r\nConnection: close\r\n" in bytes(sock.sent)


# ------------------------------------------------------------------ stopping


def stop(worker: Worker) -> None:
    """What a graceful stop does before its loop: as ``_drain`` begins."""
    worker.listeners = []
    worker.pid = 4242
    worker._stop_accepting()


@pytest.mark.parametrize(
    ("phase", "received"),
    [
        (HANDSHAKE, b""),
        (IDLE, b""),
        (READING, b"POST /mutate HTTP/1.1\r\nHost: "),
        (READING, post(length=100)),
        (BUSY, b""),
        (WRITING, b""),
    ],
    ids=[
        "in its TLS handshake: the handshake goes on",
        "between requests: it may still send one",
        "half a head received: the rest is read",
        "the head and part of the body received: the rest is read",
        "its request with a thread: the answer goes out",
        "its answer half-written: the rest is written",
    ],
)
def test_a_stopping_worker_closes_no_connection_it_accepted(
    worker: Worker, phase: int, received: bytes
) -> None:
    sock = FakeSocket(10, [received] if received else [])
    conn = connect(worker, sock, phase=HANDSHAKE if phase == HANDSHAKE else IDLE)
    if received:
        worker._read(conn)
    conn.phase = phase
    before = conn.deadline
    stop(worker)
    assert conn.fd in worker.conns and not sock.closed
    if phase == IDLE:
        assert conn.deadline <= time.monotonic() + STOP_LINGER, "kept for a while, not forever"
    else:
        assert conn.deadline == before, "served or timed out as it would have been"


def test_an_answer_that_left_before_the_stop_keeps_its_connection_for_one_more_request(
    worker: Worker,
) -> None:
    sock = FakeSocket(10, [post()])
    conn = connect(worker, sock)
    worker._read(conn)
    serve(worker)  # the thread began before the stop: its answer keeps the connection
    assert b"Connection: close" not in bytes(sock.sent)
    stop(worker)
    worker._finish()
    assert conn.phase == IDLE and not sock.closed
    assert worker.selector.watched[sock] == selectors.EVENT_READ
    assert conn.deadline <= time.monotonic() + STOP_LINGER
    sock.sent.clear()
    sock.incoming.append(post())
    worker._read(conn)
    serve(worker)
    assert status_line(sock) == b"HTTP/1.1 200 OK"
    assert b"\r\nConnection: close\r\n" in bytes(sock.sent)
    worker._finish()
    assert closed(worker, conn)


def test_a_pipelined_request_behind_an_answer_that_left_before_the_stop_is_answered(
    worker: Worker,
) -> None:
    sock = FakeSocket(10, [post() + post()])
    conn = connect(worker, sock)
    worker._read(conn)
    serve(worker)
    stop(worker)
    worker._finish()
    assert conn.phase == BUSY, "the second request went to a thread"
    sock.sent.clear()
    serve(worker)
    assert b"\r\nConnection: close\r\n" in bytes(sock.sent)
    worker._finish()
    assert closed(worker, conn)


def test_a_stopping_worker_closes_a_silent_connection_once_the_linger_passes(
    worker: Worker,
) -> None:
    conn = connect(worker, FakeSocket(10))
    stop(worker)
    worker._sweep(time.monotonic() + STOP_LINGER + 0.01)
    assert closed(worker, conn)


def test_after_an_answer_to_a_body_left_unread_the_connection_lingers(worker: Worker) -> None:
    """A body too large to drain is still on its way when the 413 goes out."""
    sock = FakeSocket(10, [post(length=DRAIN_LIMIT + 1)])
    conn = connect(worker, sock)
    worker._read(conn)
    serve(worker)
    worker._finish()
    assert status_line(sock) == b"HTTP/1.1 200 OK"
    assert lingering(worker, conn)


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
    max_metrics_connections = 8
    head_timeout = 1.5


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
        io_timeout=3.5,
        keepalive=30.0,
        max_connections=200,
        threads=1,
        max_plain_connections=8,
        head_timeout=1.5,
    )
