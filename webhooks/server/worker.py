"""A gunicorn worker whose poller, not its threads, waits on clients.

Why: every pod creation waits on this server, so no client may be able to stall it. The
threaded worker handed each new connection to a thread that waited for the client's
bytes, and read bodies at the client's pace; a few hundred silent connections, or twenty
bodies sent a byte a second, held every thread. Here one loop per worker (``selectors``)
accepts connections, drives each TLS handshake without blocking, feeds what each client
sends to that connection's :class:`~webhooks.server.reader.RequestReader`, and hands a
request to a thread only once the reader says it is complete. The loop does I/O and
scheduling only: what the bytes mean is the reader's to decide, and it costs time linear
in them, so no client's bytes can hold the loop. A thread never touches a socket that
might not be ready: it runs the app and writes the answer with a non-blocking send, and
whatever the socket does not take goes back to the loop.

Bounds, all per worker: a total deadline per handshake and per request (``--io-timeout``,
counted from the first byte, so a byte a second does not extend it), the keep-alive idle
time for connections between requests, and a connection budget per listener
(``--max-connections`` for admission, ``--max-metrics-connections`` for the plain port):
when one is full, a newcomer is admitted by closing a connection of the same listener
that has not finished its head (or its body) in time, or is idle
(:mod:`webhooks.server.budget` says which, and why). A connection refused or answered
while its client may still be sending lingers: it stops writing and drops what arrives
for a moment, so the client reads its answer instead of a reset.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import queue
import selectors
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any

from gunicorn import util
from gunicorn.workers import base

from webhooks.server.budget import HEAD_TIMEOUT, MAX_PLAIN_CONNECTIONS, Budget
from webhooks.server.framing import DRAIN_LIMIT, error_response
from webhooks.server.metrics import loop_series
from webhooks.server.reader import (
    CONTINUE,
    NEED_DATA,
    HeadReceived,
    Phase,
    Refusal,
    Request,
    RequestReader,
)
from webhooks.server.wsgi import HttpDate, Responder

#: How much one connection may read per loop turn before others get theirs.
READ_BUDGET = 1 << 20
#: The most connections one listener accepts per loop turn (fewer for a small budget).
ACCEPT_BATCH = 64
#: Deadlines are checked this often; they are seconds long, so this is precise enough.
SWEEP_INTERVAL = 0.25
#: On a graceful stop, a connection that may send a request (idle between requests, just
#: past its handshake, or just answered without ``Connection: close``) is kept this long for
#: it, and the request is answered with ``Connection: close``. Why 2 s: a client holding a
#: keep-alive connection sends on it within milliseconds when it has work, so one that stays
#: silent this long is most likely done with it; and every stop (each SIGHUP reload
#: included) lasts at least this long when such a connection is open.
STOP_LINGER = 2.0
#: Paths the plain-HTTP (metrics) listener serves; everything else there is 404.
PLAIN_PATHS = frozenset({"/metrics", "/healthz", "/readyz"})
#: A connection closed while its client may still be sending (a refused head, a body left
#: unread, a late body's 408) first stops writing, then reads and drops what arrives for
#: at most this long and at most ``DRAIN_LIMIT`` bytes before it closes. Why: closing a
#: socket with unread bytes makes the kernel send a reset, which can overtake the answer,
#: so a client sending a 200 KB head saw a reset instead of its 431. Two seconds are far
#: more than a client on the same network needs to read a short answer.
LINGER = 2.0

#: What the loop does with a connection: wait for its handshake, for its next request, for
#: the rest of a request; nothing while a thread has it; send what the socket did not take;
#: drop what a client still sends after its answer, until it stops or time is up.
HANDSHAKE, IDLE, READING, BUSY, WRITING, LINGERING = range(6)
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


@dataclass(frozen=True, slots=True)
class Limits:
    """What bounds one worker's connections (from ``ServeOptions`` and gunicorn's config)."""

    io_timeout: float = 10.0
    keepalive: float = 120.0
    #: Admission (TLS) connections; the plain port has its own budget, never these.
    max_connections: int = 1000
    threads: int = 4
    max_plain_connections: int = MAX_PLAIN_CONNECTIONS
    head_timeout: float = HEAD_TIMEOUT


class Connection:
    """One client connection and where it is in its request cycle."""

    __slots__ = (
        "addr",
        "close_after",
        "deadline",
        "dropped",
        "events",
        "fd",
        "listener",
        "out",
        "peer_certificate",
        "phase",
        "reader",
        "sock",
    )

    def __init__(self, sock: socket.socket, listener: Listener, addr: Any, phase: int) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.listener = listener
        self.addr = addr if isinstance(addr, tuple) else None
        self.phase = phase
        self.reader = RequestReader()
        self.deadline = 0.0
        self.events = 0
        self.out: memoryview | None = None
        self.close_after = False
        self.peer_certificate = False
        self.dropped = 0


@dataclass(slots=True)
class Listener:
    """A listening socket: TLS (admission) or plain HTTP (metrics and probes), and its budget."""

    sock: socket.socket
    plain: bool
    responder: Responder
    budget: Budget[Connection]

    @property
    def port(self) -> str:
        """The listener's name in metrics: ``admission`` or ``metrics``."""
        return "metrics" if self.plain else "admission"


class Worker(base.Worker):  # type: ignore[misc]
    """gunicorn worker: a poller that frames requests, threads that run the app."""

    def init_process(self) -> None:
        """Set up the loop's plumbing after fork, then let gunicorn load the app and run."""
        self.conns: dict[int, Connection] = {}
        self.series = loop_series()
        self.again: list[Connection] = []
        self.done: collections.deque[tuple[Connection, memoryview | None, bool]] = (
            collections.deque()
        )
        self.jobs: queue.SimpleQueue[tuple[Connection, Request] | None] = queue.SimpleQueue()
        self.date = HttpDate()
        self.selector = selectors.DefaultSelector()
        self.stopping = False
        #: True while the loop may block in select(): only then must a request thread wake
        #: it through the pipe (a write and a read fewer per request under load).
        self.sleeping = False
        super().init_process()

    # ------------------------------------------------------------------ set-up

    def _limits(self) -> Limits:
        options = getattr(self.app, "options", None)
        io_timeout = float(getattr(options, "io_timeout", 10.0))
        return Limits(
            io_timeout=io_timeout,
            keepalive=float(self.cfg.keepalive),
            max_connections=int(self.cfg.worker_connections),
            threads=max(1, int(self.cfg.threads)),
            max_plain_connections=int(
                getattr(options, "max_metrics_connections", MAX_PLAIN_CONNECTIONS)
            ),
            head_timeout=float(getattr(options, "head_timeout", HEAD_TIMEOUT)),
        )

    def _listeners(self) -> list[Listener]:
        plain_addr = getattr(self.app, "plain_address", None)
        listeners = []
        for sock in self.sockets:
            plain = plain_addr is not None and getattr(sock, "cfg_addr", None) == plain_addr
            name = sock.getsockname()
            server = (str(name[0]), int(name[1])) if isinstance(name, tuple) else (str(name), 0)
            responder = Responder(self.wsgi, server, "http" if plain else "https", self.date)
            cap = self.limits.max_plain_connections if plain else self.limits.max_connections
            budget: Budget[Connection] = Budget(cap, self.limits.head_timeout)
            raw = sock.sock if hasattr(sock, "sock") else sock
            listeners.append(Listener(raw, plain, responder, budget))
        return listeners

    def run(self) -> None:
        """The loop: accept, handshake, read, dispatch, write, expire; then drain and stop."""
        self.limits = self._limits()
        self.contexts = getattr(self.app, "contexts", None)
        self.listeners = self._listeners()
        for listener in self.listeners:
            listener.sock.setblocking(False)
            self.selector.register(listener.sock, selectors.EVENT_READ, listener)
        self.selector.register(self.PIPE[0], selectors.EVENT_READ, None)
        threads = [
            threading.Thread(target=self._serve_jobs, name=f"request-{i}", daemon=True)
            for i in range(self.limits.threads)
        ]
        for thread in threads:
            thread.start()
        try:
            self._loop()
            self._drain()
        finally:
            for _ in threads:
                self.jobs.put(None)
            for conn in list(self.conns.values()):
                self._close(conn)
            self.selector.close()
            for listener in self.listeners:
                listener.sock.close()
            closer = getattr(self.app, "close_worker", None)
            if closer is not None:
                closer()

    def _loop(self) -> None:
        next_sweep = next_notify = 0.0
        while self.alive:
            now = time.monotonic()
            if now >= next_notify:
                self.notify()
                next_notify = now + 1.0
            self._turn(0.0 if self.again else SWEEP_INTERVAL)
            now = time.monotonic()
            if now >= next_sweep:
                next_sweep = now + SWEEP_INTERVAL
                self._sweep(now)
                if self.ppid != os.getppid():
                    self.log.info("Parent changed, shutting down: %s", self)
                    break

    def _drain(self) -> None:
        """Stop accepting; serve every connection already accepted, within the graceful timeout.

        Why nothing accepted is dropped: a stop is also how a SIGHUP reload retires the old
        workers, while new ones take over the listeners (connections not yet accepted wait
        there for them). A client whose connection this worker accepted has no other
        worker to turn to, so each one is served to the end of its request cycle: a
        handshake under way finishes (within ``--io-timeout`` of the connect), a request
        half-received is read and answered, an answer half-written is written, and every
        request that arrives from now on is answered with ``Connection: close``. What
        closes a connection without an answer is only what would close it anyway (a
        deadline, the client hanging up), or silence for :data:`STOP_LINGER` where a
        request could come next (see :meth:`_await_last_request`).
        """
        self._stop_accepting()
        until = time.monotonic() + self.cfg.graceful_timeout
        while self.conns and time.monotonic() < until:
            self.notify()
            self._turn(0.0 if self.again else 0.1)
            self._sweep(time.monotonic())

    def _stop_accepting(self) -> None:
        """Leave the listeners to the other workers; from now on every answer closes.

        Only connections between requests get a new deadline
        (:meth:`_await_last_request`): every other phase keeps the deadline it has, so it is
        served or times out as it would.
        """
        self.stopping = True
        for listener in self.listeners:
            self.selector.unregister(listener.sock)
        self.log.info(
            "Stopping: finishing %d open connections (pid: %s)", len(self.conns), self.pid
        )
        now = time.monotonic()
        for conn in list(self.conns.values()):
            if conn.phase == IDLE:
                self._await_last_request(conn, now)

    def _await_last_request(self, conn: Connection, now: float) -> None:
        """While stopping, wait at most :data:`STOP_LINGER` for the connection's next request.

        Why not close at once: the client may already be sending it, and closing an idle
        connection under a request in flight loses that request (a reset, or an EOF before
        any answer); answered with ``Connection: close`` it is served and the client moves
        to a new connection, which the new workers accept.
        """
        conn.deadline = min(conn.deadline, now + STOP_LINGER)

    def _turn(self, timeout: float) -> None:
        self.sleeping = True
        if self.done:  # checked after announcing the sleep: see _serve_jobs
            timeout = 0.0
        events = self.selector.select(timeout)
        self.sleeping = False
        ready: list[Listener] = []
        for key, mask in events:
            data = key.data
            if data is None:
                self._wake()
            elif isinstance(data, Listener):
                ready.append(data)
            else:
                self._step(data, mask)
        if self.done:
            self._finish()
        if self.again:
            again, self.again = self.again, []
            for conn in again:
                if self.conns.get(conn.fd) is conn and conn.phase in (IDLE, READING):
                    self._read(conn)
        # Accepted last: a connection whose bytes are waiting is read before newcomers may
        # close it to make room (see ``_accept``).
        for listener in ready:
            self._accept(listener)

    # ------------------------------------------------------------------ connections

    def _accept(self, listener: Listener) -> None:
        """Accept what is waiting, at most half the listener's budget per turn.

        Why half, and after the turn's reads: when newcomers arrive faster than the loop
        turns (a flood), each closes the oldest unfinished connection; a real caller's
        connection, accepted in one turn, then always has its bytes read in the next before
        it can be among those closed, and once its head is in it is never closed for room.
        """
        for _ in range(min(ACCEPT_BATCH, max(1, listener.budget.cap // 2))):
            try:
                sock, addr = listener.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno not in (errno.ECONNABORTED, errno.EPROTO):
                    self.log.warning("accept failed: %s", exc)
                return
            now = time.monotonic()
            if listener.budget.full and not self._evict(listener, now):
                self.series.closed(listener.port, "full")
                sock.close()
                continue
            sock.setblocking(False)
            util.close_on_exec(sock.fileno())
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if listener.plain or self.contexts is None:
                conn = Connection(sock, listener, addr, IDLE)
                conn.deadline = now + self.limits.io_timeout
            else:
                try:
                    wrapped = self.contexts.get().wrap_socket(
                        sock, server_side=True, do_handshake_on_connect=False
                    )
                except (OSError, ValueError):
                    sock.close()
                    continue
                conn = Connection(wrapped, listener, addr, HANDSHAKE)
                conn.deadline = now + self.limits.io_timeout
            self.conns[conn.fd] = conn
            listener.budget.opened(conn.fd, conn, now)
            self._want(conn, selectors.EVENT_READ)

    def _evict(self, listener: Listener, now: float) -> bool:
        """Close a connection of ``listener`` to make room (its budget says which); if any."""
        chosen = listener.budget.victim(now)
        if chosen is None:
            return False
        reason, victim = chosen
        self.series.closed(listener.port, reason)
        self._close(victim)
        return True

    def _want(self, conn: Connection, events: int) -> None:
        if conn.events == events:
            return
        if conn.events == 0:
            self.selector.register(conn.sock, events, conn)
        elif events == 0:
            self.selector.unregister(conn.sock)
        else:
            self.selector.modify(conn.sock, events, conn)
        conn.events = events

    def _close(self, conn: Connection) -> None:
        if self.conns.get(conn.fd) is not conn:
            return
        del self.conns[conn.fd]
        conn.listener.budget.closed(conn.fd)
        if conn.events:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.selector.unregister(conn.sock)
            conn.events = 0
        with contextlib.suppress(OSError):
            conn.sock.close()

    def _sweep(self, now: float) -> None:
        """Close connections past their deadline; a late request body gets a 408 first."""
        for conn in [c for c in self.conns.values() if c.phase != BUSY and c.deadline < now]:
            if conn.phase == READING and conn.reader.head_received:
                self._refuse(conn, 408, "request not received in time")
            else:
                self._close(conn)

    def _step(self, conn: Connection, mask: int) -> None:
        if conn.phase == HANDSHAKE:
            self._handshake(conn)
        elif conn.phase == WRITING:
            self._write(conn)
        elif conn.phase == LINGERING:
            self._drop(conn)
        elif conn.phase != BUSY:
            self._read(conn)

    def _handshake(self, conn: Connection) -> None:
        sock = conn.sock
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self._want(conn, selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            self._want(conn, selectors.EVENT_WRITE)
            return
        except (ssl.SSLError, OSError, ValueError):
            self._close(conn)
            return
        conn.phase = IDLE
        now = time.monotonic()
        conn.deadline = now + self.limits.keepalive
        if self.stopping:
            self._await_last_request(conn, now)
        conn.peer_certificate = bool(sock.getpeercert())
        self._want(conn, selectors.EVENT_READ)
        if sock.pending():
            self.again.append(conn)

    # ------------------------------------------------------------------ reading

    def _read(self, conn: Connection) -> None:
        budget = READ_BUDGET
        sock = conn.sock
        while True:
            try:
                data = sock.recv(65536)
            except (ssl.SSLWantReadError, BlockingIOError, InterruptedError):
                return
            except ssl.SSLWantWriteError:
                self._want(conn, selectors.EVENT_READ | selectors.EVENT_WRITE)
                return
            except (OSError, ValueError):
                self._close(conn)
                return
            if not data:
                self._close(conn)
                return
            if conn.phase == IDLE:
                self._begin(conn)
            conn.reader.receive_data(data)
            if self._advance(conn):
                return
            budget -= len(data)
            if budget <= 0:
                self.again.append(conn)
                return

    def _begin(self, conn: Connection) -> None:
        """The first byte of a request arrived: its deadline runs from now."""
        conn.phase = READING
        now = time.monotonic()
        conn.deadline = now + self.limits.io_timeout
        conn.listener.budget.starting(conn.fd, conn, now)

    def _advance(self, conn: Connection) -> bool:
        """Act on what the reader makes of the bytes; True when the connection left reading."""
        reader = conn.reader
        while True:
            event = reader.next_event()
            if event is NEED_DATA:
                return False
            if event is CONTINUE:
                self._send_nowait(conn, _CONTINUE)
            elif isinstance(event, HeadReceived):
                head = event.head
                conn.listener.budget.body(conn.fd, conn, time.monotonic())
                if conn.listener.plain and (
                    head.path not in PLAIN_PATHS or head.method not in ("GET", "HEAD")
                ):
                    self._refuse(
                        conn, 404, "not found: this port serves /metrics, /healthz, /readyz"
                    )
                    return True
            elif isinstance(event, Request):
                self._dispatch(conn, event)
                return True
            elif isinstance(event, Refusal):
                self._refuse(conn, event.status, event.reason)
                return True
            else:  # PAUSED: a request is already out (not reached while reading)
                return False

    def _refuse(self, conn: Connection, status: int, reason: str) -> None:
        """Answer ``status`` without the app, counted, and close (lingering: see ``LINGER``)."""
        self.series.refused(conn.listener.port, status)
        self._send_nowait(conn, error_response(status, reason, self.date.now()))
        self._linger(conn)

    def _linger(self, conn: Connection) -> None:
        """Stop writing, then drop what the client still sends until it stops or time is up.

        Why: the client may be sending the rest of a head or body that will never be read;
        a close with those bytes unread resets the connection, and the reset can reach the
        client before the answer does. After ``shutdown`` an ``SSLSocket`` reads the raw
        socket, so the dropped TLS records are not even decrypted.
        """
        if self.conns.get(conn.fd) is not conn:
            return
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except (OSError, ValueError):
            self._close(conn)
            return
        conn.phase = LINGERING
        conn.deadline = time.monotonic() + LINGER
        conn.dropped = 0
        conn.listener.budget.closing(conn.fd, conn)
        self._want(conn, selectors.EVENT_READ)

    def _drop(self, conn: Connection) -> None:
        """Read and drop what a lingering connection's client sent; close at its end or limit."""
        budget = READ_BUDGET
        while budget > 0:
            try:
                data = conn.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except (OSError, ValueError):
                data = b""
            conn.dropped += len(data)
            if not data or conn.dropped > DRAIN_LIMIT:
                self._close(conn)
                return
            budget -= len(data)

    def _send_nowait(self, conn: Connection, data: bytes) -> None:
        """Best effort for short answers the loop gives itself (errors, 100 Continue)."""
        with contextlib.suppress(OSError, ValueError):
            conn.sock.send(data)

    # ------------------------------------------------------------------ requests

    def _dispatch(self, conn: Connection, request: Request) -> None:
        conn.listener.budget.under_way(conn.fd)
        conn.phase = BUSY
        self._want(conn, 0)
        self.jobs.put((conn, request))

    def _serve_jobs(self) -> None:
        """A request thread: run the app on complete requests, send without blocking."""
        while True:
            job = self.jobs.get()
            if job is None:
                return
            conn, request = job
            head = request.head
            keep_alive = head.keep_alive and request.intact and not self.stopping
            try:
                extra: dict[str, Any] = {
                    "webhooks.peer_certificate": conn.peer_certificate,
                    "webhooks.port": conn.listener.port,
                }
                responder = conn.listener.responder
                env = responder.environ(head, request.body, conn.addr, extra)
                out, close = responder.respond(env, keep_alive)
            except Exception:
                self.log.exception("Error handling request %s %s", head.method, head.path)
                out, close = error_response(500, "internal server error", self.date.now()), True
            rest = self._send_some(conn, memoryview(out))
            self.done.append((conn, rest, close))
            # Appended before reading the flag, which the loop sets before checking ``done``:
            # either the loop sees this entry, or this thread sees it asleep and wakes it.
            if self.sleeping:
                with contextlib.suppress(BlockingIOError):  # a full pipe wakes it anyway
                    os.write(self.PIPE[1], b".")

    @staticmethod
    def _send_some(conn: Connection, data: memoryview) -> memoryview | None:
        """Send what the socket takes now; the rest (``None`` when all went, empty on error)."""
        sock = conn.sock
        try:
            while data:
                sent = sock.send(data)
                data = data[sent:]
        except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError, InterruptedError):
            return data
        except (OSError, ValueError):
            return memoryview(b"")
        return None

    def _wake(self) -> None:
        try:
            while os.read(self.PIPE[0], 4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def _finish(self) -> None:
        while self.done:
            conn, rest, close = self.done.popleft()
            if self.conns.get(conn.fd) is not conn:
                continue
            conn.close_after = conn.close_after or close
            if rest is not None:
                if not rest:
                    self._close(conn)
                    continue
                conn.out = rest
                conn.phase = WRITING
                conn.deadline = time.monotonic() + self.limits.io_timeout
                self._want(conn, selectors.EVENT_WRITE)
                continue
            self._answered(conn)

    def _write(self, conn: Connection) -> None:
        assert conn.out is not None
        rest = self._send_some(conn, conn.out)
        if rest is None:
            conn.out = None
            self._answered(conn)
        elif not rest:
            self._close(conn)
        else:
            conn.out = rest

    def _answered(self, conn: Connection) -> None:
        """A response went out: close, or wait for the next request on the connection.

        Why a stopping worker does not close after every answer: an answer that left
        without ``Connection: close`` (its thread began before the stop) told the client
        it may send another request, so the connection waits for it
        (:meth:`_await_last_request`).
        """
        reader = conn.reader
        if reader.phase is not Phase.DONE:  # its body left unread: framing is lost
            self._linger(conn)
            return
        if conn.close_after or self.limits.keepalive <= 0:
            self._close(conn)
            return
        conn.phase = IDLE
        now = time.monotonic()
        conn.deadline = now + self.limits.keepalive
        if self.stopping:
            self._await_last_request(conn, now)
        conn.listener.budget.idle(conn.fd, conn)
        self._want(conn, selectors.EVENT_READ)
        reader.start_next_cycle()
        if reader.buffered:  # pipelined: the next request has begun
            self._begin(conn)
            if self._advance(conn):
                return
        sock = conn.sock
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            self.again.append(conn)
