"""Holding a port on 127.0.0.1 without listening on it.

Why: a bound socket that does not listen refuses connections and keeps every other socket
off the port. The fake keeps its port that way while it is stopped, and a test that needs an
address nothing answers on gets one; no test picks a port that another process may take
before it is used.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator


def reserve(port: int = 0) -> socket.socket:
    """A socket bound to 127.0.0.1:``port`` (0: one the kernel picks) that does not listen.

    Why: while it is bound, connections to the port are refused and no other socket can
    bind it, except another of ours with ``SO_REUSEPORT``;
    :meth:`~bench.fakeapi.server.FakeApiServer.stop` binds one beside its listener before
    closing that, so the port is never free.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    return sock


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections until the block ends.

    Why not a port that was free a moment ago: another process may start listening on it
    before the test connects; a bound socket that does not listen holds the port.
    """
    with reserve() as sock:
        yield int(sock.getsockname()[1])
