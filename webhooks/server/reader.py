"""The request phases of one connection, without I/O: bytes in, events out.

Why an object of its own, shaped like h11's ``Connection``: every decision about a
request's bytes (where its head ends, whether it is well framed, when to say ``100
Continue``, whether an oversized body is read and thrown away or the connection given up)
lives here, where a test feeds bytes and reads events with no socket, thread or clock. The
worker only moves bytes between sockets and readers, keeps deadlines, and schedules the
app on threads.

A reader is fed with :meth:`RequestReader.receive_data` and asked for
:meth:`RequestReader.next_event` until it answers :data:`NEED_DATA`. Per request the
events are a :class:`HeadReceived`, perhaps :data:`CONTINUE`, then one :class:`Request`;
or a :class:`Refusal` at any point before the request, after which the connection must be
answered and closed. After a request the reader pauses (:data:`PAUSED`) until
:meth:`RequestReader.start_next_cycle`, so pipelined bytes wait their turn. The cost of
every call is linear in the bytes it is given, and what it buffers is bounded: a head by
:data:`MAX_HEAD`, a body by :data:`MAX_BODY`, plus one read.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from webhooks.server.framing import (
    DRAIN_LIMIT,
    MAX_BODY,
    MAX_HEAD,
    FramingError,
    Head,
    head_end,
    parse_head,
)


class Phase(enum.Enum):
    """Where a connection is in its request cycle, as far as its bytes tell."""

    #: Between requests: no byte of the next one yet (the keep-alive wait).
    IDLE = "idle"
    #: Part of a head has arrived.
    HEAD = "head"
    #: The head is parsed and its body is arriving.
    BODY = "body"
    #: The head is parsed; its oversized body is being read and thrown away.
    DISCARD = "discard"
    #: The head is parsed; its oversized body will not be read (the request follows at once).
    UNREAD = "unread"
    #: A request was handed out; waiting for :meth:`RequestReader.start_next_cycle`.
    DONE = "done"
    #: Refused, or a body left unread: no further request can be framed.
    CLOSED = "closed"


class _Signal:
    """An event without data (a named singleton)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: More bytes are needed before anything else can happen.
NEED_DATA = _Signal("NEED_DATA")
#: The client waits for ``100 Continue`` before it sends the body: send it now.
CONTINUE = _Signal("CONTINUE")
#: A request was handed out (or the connection refused): nothing until the next cycle.
PAUSED = _Signal("PAUSED")


@dataclass(frozen=True, slots=True)
class HeadReceived:
    """A request's head has arrived and is well framed; its body, if any, follows.

    The worker refuses here what a listener does not serve (the plain port's paths), so
    such a body is never read.
    """

    head: Head


@dataclass(frozen=True, slots=True)
class Request:
    """A request ready for the app.

    ``intact`` says the connection's framing survived it: the body was read whole, or,
    when over :data:`MAX_BODY`, read whole and thrown away. When it is false the body was
    left unread (too large to drain, or its client is waiting for ``100 Continue``): the
    answer must close the connection.
    """

    head: Head
    body: bytes
    intact: bool


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request that cannot be framed: answer ``status`` with ``reason``, then close."""

    status: int
    reason: str


Event = _Signal | HeadReceived | Request | Refusal


class RequestReader:
    """The request phases of one connection: a state machine fed with bytes (see the module)."""

    __slots__ = ("_buf", "_continued", "_discard", "_have", "_head", "_parts", "_scanned", "phase")

    def __init__(self) -> None:
        self.phase = Phase.IDLE
        self._buf = bytearray()
        #: A body's reads, joined once when the last arrives (see :meth:`receive_data`).
        self._parts: list[bytes] = []
        self._have = 0
        self._scanned = 0
        self._head: Head | None = None
        self._discard = 0
        self._continued = False

    @property
    def buffered(self) -> int:
        """Bytes held: of a head, a body, or pipelined requests (bounded; see the module)."""
        return len(self._buf) + self._have

    @property
    def head_received(self) -> bool:
        """Whether a head has arrived and its body not yet (a late client then gets a 408)."""
        return self.phase in (Phase.BODY, Phase.DISCARD)

    def receive_data(self, data: bytes) -> None:
        """Take bytes the client sent; call :meth:`next_event` afterwards.

        Bytes of an oversized body are dropped as they arrive, so discarding up to
        :data:`DRAIN_LIMIT` costs no memory. A body's reads are kept as they came and joined
        once: appended to one buffer, a body of a few MiB was copied at every growth of
        the buffer, and its cost per byte rose with its size (``bench/growth/http.py``).
        """
        if self.phase is Phase.BODY:
            self._parts.append(data)
            self._have += len(data)
            return
        if self.phase is Phase.DISCARD and not self._buf:
            taken = min(self._discard, len(data))
            self._discard -= taken
            data = data[taken:]
        if data and self.phase is Phase.IDLE:
            self.phase = Phase.HEAD
        self._buf += data

    def next_event(self) -> Event:
        """What the bytes received so far make of the current request (see the module)."""
        phase = self.phase
        if phase is Phase.BODY:
            return self._body()
        if phase is Phase.HEAD:
            return self._parse_head()
        if phase is Phase.DISCARD:
            return self._discarded()
        if phase is Phase.UNREAD:
            assert self._head is not None
            self.phase = Phase.CLOSED
            return Request(self._head, b"", intact=False)
        return NEED_DATA if phase is Phase.IDLE else PAUSED

    def start_next_cycle(self) -> None:
        """The answer went out: read the next request (bytes already here are its start).

        Raises ``RuntimeError`` unless a request was handed out and framing is intact.
        """
        if self.phase is not Phase.DONE:
            raise RuntimeError(f"no next request can be read in phase {self.phase.value}")
        self._head = None
        self._continued = False
        self.phase = Phase.HEAD if self._buf else Phase.IDLE

    # ---------------------------------------------------------------- phases

    def _refuse(self, status: int, reason: str) -> Refusal:
        self.phase = Phase.CLOSED
        self._buf.clear()
        self._parts.clear()
        self._have = 0
        return Refusal(status, reason)

    def _parse_head(self) -> Event:
        buf = self._buf
        end = head_end(buf, self._scanned)
        if end < 0:
            self._scanned = len(buf)
            if len(buf) > MAX_HEAD:
                return self._refuse(431, "request head too large")
            return NEED_DATA
        if end > MAX_HEAD:
            return self._refuse(431, "request head too large")
        try:
            head = parse_head(bytes(buf[:end]))
        except FramingError as exc:
            return self._refuse(exc.status, exc.reason)
        del buf[:end]
        self._scanned = 0
        self._head = head
        length = head.content_length
        if length <= MAX_BODY:
            self.phase = Phase.BODY
            if length and buf:  # the body's first bytes came with the head
                self._parts.append(bytes(buf))
                self._have = len(buf)
                buf.clear()
        elif length > DRAIN_LIMIT or head.expect_continue:
            # Too large to drain, or a client that sends nothing until it hears 100: the
            # answer (413) goes out at once and the connection closes after it.
            self.phase = Phase.UNREAD
        else:
            self.phase = Phase.DISCARD
            self._discard = length
        return HeadReceived(head)

    def _body(self) -> Event:
        head = self._head
        assert head is not None
        length = head.content_length
        if self._have < length:
            if head.expect_continue and not self._continued:
                self._continued = True
                return CONTINUE
            return NEED_DATA
        parts = self._parts
        body = parts[0] if len(parts) == 1 else b"".join(parts)
        parts.clear()
        self._have = 0
        if len(body) > length:  # the next request has begun: it waits in the buffer
            self._buf += memoryview(body)[length:]
            body = body[:length]
        self.phase = Phase.DONE
        return Request(head, body, intact=True)

    def _discarded(self) -> Event:
        buf = self._buf
        if buf:
            taken = min(self._discard, len(buf))
            del buf[:taken]
            self._discard -= taken
        if self._discard:
            return NEED_DATA
        assert self._head is not None
        self.phase = Phase.DONE
        return Request(self._head, b"", intact=True)
