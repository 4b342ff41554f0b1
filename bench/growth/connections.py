"""Growth surfaces of the connection budgets: N connections that never finish, and a review.

Why through a real server: the budgets live in the worker's loop (accept, evict, sweep), so
only a real worker shows what holding or turning away N stalled connections costs. Each
sample starts a bare-app server (1 worker, the default budgets: 1000 admission and 64
metrics connections), opens N connections that each send one byte of a head (the metrics
port) or nothing at all (the TLS port, a handshake never begun), then sends one review on
a new TLS connection, which must be answered 200. Time is the wall time from the first
connect to that answer; memory the worker's peak RSS over what it held before the flood.

Below a budget, the worker holds every connection: time and memory grow with N. Past it,
each newcomer closes the oldest stalled one, so memory stays flat and only time grows.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import time
from collections.abc import Callable

from bench.growth.http import certificates
from bench.growth.measure import Sample, Surface
from bench.servers import memory_mib, start, stop, workers
from controlplane.harness.process import free_port


def _worker_kib(master: int) -> tuple[float, float]:
    (pid,) = workers(master)
    rss, hwm = memory_mib(pid)
    return rss * 1024, hwm * 1024


def flood(plain: bool) -> Callable[[int], Sample]:
    """A sampler: N stalled connections to one port of a fresh server, then a review."""

    def sample(n: int) -> Sample:
        certs = certificates()
        metrics_port = free_port()
        proc, port = start("wsgi", certs, workers=1, metrics_port=metrics_port)
        held: list[socket.socket] = []
        try:
            before, _ = _worker_kib(proc.pid)
            started = time.perf_counter()
            for _ in range(n):
                sock = socket.create_connection(("127.0.0.1", metrics_port if plain else port))
                if plain:
                    sock.sendall(b"G")
                held.append(sock)
            ctx = ssl.create_default_context(cafile=str(certs / "ca.crt"))
            conn = http.client.HTTPSConnection("localhost", port, context=ctx, timeout=60)
            conn.request(
                "POST",
                "/mutate",
                body=b'{"request":{"uid":"growth"},"kind":"AdmissionReview"}',
                headers={"Content-Type": "application/json"},
            )
            response = conn.getresponse()
            response.read()
            seconds = time.perf_counter() - started
            if response.status != 200:
                raise AssertionError(f"HTTP {response.status} under a flood of {n}")
            conn.close()
            _, peak = _worker_kib(proc.pid)
        finally:
            for sock in held:
                with contextlib.suppress(OSError):
                    sock.close()
            stop(proc)
        return Sample(seconds, int(max(peak - before, 0) * 1024))

    return sample


SURFACES = [
    Surface(
        "connections: handshakes never begun on the TLS port (below its budget of 1000)",
        "connections",
        400,
        flood(plain=False),
    ),
    Surface(
        "connections: one-byte heads on the metrics port (past its budget of 64)",
        "connections",
        2000,
        flood(plain=True),
    ),
]
