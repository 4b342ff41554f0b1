"""One listener's connection budget in one worker: how many may be open, and who makes room.

Why per listener: the admission (TLS) port and the metrics (plain HTTP) port used to share
one cap, and the metrics port takes any client without authentication: connections to it
that each sent one byte of a head, and were never evictable, filled the cap, and every
admission connection was then closed as soon as it was accepted. Each listener now counts
against its own budget, so nothing done on one port can take a slot of the other.

Why an eviction order: a full budget admits a newcomer by closing the connection least
likely to be a caller at work. A connection whose head is not finished (handshake, silence
after it, or a head still arriving) is *unfinished*; once :attr:`Budget.head_timeout`
seconds have passed since it began (the accept, or the first byte of a keep-alive
connection's next request) its head is *stalled*. A connection whose head has arrived but
whose body has not, :attr:`Budget.head_timeout` seconds after the head, has a *stalled
body*. Closed first to make room:

1. connections already answered and closing (lingering to let the answer arrive);
2. stalled heads, the oldest first;
3. idle keep-alive connections between requests, the longest idle first;
4. stalled bodies, the oldest first;
5. unfinished connections within their head time, the oldest first.

A connection whose request has arrived whole (the app running, its answer being written)
is never closed to make room, nor is a body within its time: their own deadlines bound
them. Why bodies at all: heads announcing a body that never comes held their slots for the
whole ``--io-timeout``, and enough of them shut admission out as one-byte heads did. The
oldest-first order among unfinished connections is what protects a real caller from a
flood: a review's connection is unfinished for the few milliseconds of its handshake and
head, and it is closed only when a whole budget of newer connections arrives meanwhile.

Pure bookkeeping without I/O or a clock (the caller passes ``now``): the worker keeps the
sockets and calls one method per change of phase. Every method costs O(1).
"""

from __future__ import annotations

import collections
from typing import Generic, Literal, TypeVar

#: Seconds a connection has to finish its head (from the accept, or from the first byte
#: of a keep-alive connection's next request), and then its body (from its head), before
#: it is among the first to make room.
#: Why 2 s: in a cluster a TLS handshake is one round trip plus about a millisecond of
#: key exchange, and the API server writes a review's head in one segment, so a real
#: caller finishes in milliseconds; 2 s leaves a hundredfold margin for a loaded node or a
#: client across a slow link, and is a fifth of the default ``--io-timeout`` (10 s), so
#: stalled connections are made room of long before their own deadline closes them. A
#: body of the largest review (6 MiB) arrives within it at 25 Mbit/s, a tenth of what
#: links between an API server and its nodes carry.
HEAD_TIMEOUT = 2.0
#: Connections per worker on the plain-HTTP (metrics) port. Why 64: its callers are a few
#: Prometheus scrapers (one keep-alive connection each) and the kubelet's probes (a new
#: connection per probe, closed after it), a handful at any moment; 64 is ten times that,
#: and the port's own budget, apart from admission's (``--max-connections``).
MAX_PLAIN_CONNECTIONS = 64

T = TypeVar("T")
#: Why a connection was chosen to make room: its class in the order above.
Reason = Literal["closing", "stalled_head", "idle", "stalled_body", "unfinished"]


class Budget(Generic[T]):
    """The open connections of one listener in one worker, in the order to close them."""

    __slots__ = ("_bodies", "_closing", "_idle", "_unfinished", "cap", "head_timeout", "open")

    def __init__(self, cap: int, head_timeout: float = HEAD_TIMEOUT) -> None:
        self.cap = cap
        self.head_timeout = head_timeout
        self.open = 0
        self._closing: collections.OrderedDict[int, T] = collections.OrderedDict()
        #: By key: (when the head is due, the connection); in order of that time, since
        #: every entry is added with ``now + head_timeout`` and ``now`` never goes back.
        self._unfinished: collections.OrderedDict[int, tuple[float, T]] = collections.OrderedDict()
        self._idle: collections.OrderedDict[int, T] = collections.OrderedDict()
        #: As ``_unfinished``: (when the body is due, the connection), in that order.
        self._bodies: collections.OrderedDict[int, tuple[float, T]] = collections.OrderedDict()

    @property
    def full(self) -> bool:
        """Whether a newcomer needs room made for it (see :meth:`victim`)."""
        return self.open >= self.cap

    def opened(self, key: int, conn: T, now: float) -> None:
        """A connection was accepted: unfinished until its first head has arrived."""
        self.open += 1
        self._unfinished[key] = (now + self.head_timeout, conn)

    def starting(self, key: int, conn: T, now: float) -> None:
        """The first byte of a keep-alive connection's next request: unfinished again."""
        self._idle.pop(key, None)
        if key not in self._unfinished:
            self._unfinished[key] = (now + self.head_timeout, conn)

    def body(self, key: int, conn: T, now: float) -> None:
        """A head arrived and its body is on the way: due within the head time from now."""
        self._unfinished.pop(key, None)
        self._idle.pop(key, None)
        self._bodies[key] = (now + self.head_timeout, conn)

    def under_way(self, key: int) -> None:
        """The request arrived whole: the connection is closed only by its own deadline now."""
        self._unfinished.pop(key, None)
        self._idle.pop(key, None)
        self._bodies.pop(key, None)

    def idle(self, key: int, conn: T) -> None:
        """An answer went out and the connection waits for its next request."""
        self.under_way(key)
        self._idle[key] = conn

    def closing(self, key: int, conn: T) -> None:
        """Answered and about to close (lingering): the first to make room."""
        self.under_way(key)
        self._closing[key] = conn

    def closed(self, key: int) -> None:
        """The connection is gone; its slot is free."""
        self.open -= 1
        self._closing.pop(key, None)
        self.under_way(key)

    def victim(self, now: float) -> tuple[Reason, T] | None:
        """The connection to close to make room and its class (see the module), or ``None``.

        It stays counted until :meth:`closed`; the caller closes it.
        """
        if self._closing:
            return "closing", next(iter(self._closing.values()))
        unfinished = next(iter(self._unfinished.values()), None)
        if unfinished is not None and unfinished[0] <= now:
            return "stalled_head", unfinished[1]
        if self._idle:
            return "idle", next(iter(self._idle.values()))
        body = next(iter(self._bodies.values()), None)
        if body is not None and body[0] <= now:
            return "stalled_body", body[1]
        if unfinished is not None:
            return "unfinished", unfinished[1]
        return None

    def counts(self) -> tuple[int, int, int, int]:
        """(closing, unfinished, idle, bodies) connections now; the rest of :attr:`open` have
        their request whole (the app, or the answer, at work)."""
        return len(self._closing), len(self._unfinished), len(self._idle), len(self._bodies)
