"""Hostile request heads and a legitimate review's wait for them, against a running server.

The corpus and the measurement of ``tests/e2e/test_front_door.py``, which bounds the wait;
run as a module it prints the figures instead of judging them, for this tree or another
(docs/performance.md, "Request framing"):

    python -m tests.e2e.hostileheads [--trials 5] [--tree PATH] [--timeout 15]

``--tree`` serves another checkout (an older commit, say) with this corpus; ``--timeout``
lets a client wait longer than 15 s, to see how long a stalled server holds a review.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import re
import socket
import ssl
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from tests.e2e import serving as serving_module
from tests.e2e.clientcert import client_pair
from tests.e2e.serving import Server, serving
from tests.reviews import pod, review


@dataclass
class Front:
    """A running server, how a legitimate caller reaches it, and how long clients wait."""

    server: Server
    context: ssl.SSLContext
    authed: bool
    timeout: float = 15.0


# --------------------------------------------------------------------------- the corpus

REVIEW = orjson.dumps(review(pod(), uid="hostile"))


def _head(request_line: bytes, header: bytes, body: bytes = b"") -> bytes:
    lines = [request_line, b"Host: localhost", b"Connection: close"]
    if body:
        lines += [b"Content-Type: application/json", b"Content-Length: %d" % len(body)]
    return b"\r\n".join([*lines, header]) + b"\r\n\r\n" + body


def on_tls(header: bytes, path: bytes = b"/mutate") -> bytes:
    """A review, as the API server would send it, carrying one hostile header."""
    return _head(b"POST " + path + b" HTTP/1.1", header, REVIEW)


def on_plain(header: bytes, path: bytes = b"/healthz") -> bytes:
    """A probe of the metrics port carrying one hostile header."""
    return _head(b"GET " + path + b" HTTP/1.1", header)


UNENDED = b"GET /healthz HTTP/1.1\r\nX: " + b" " * (64 * 1024)
LONG = b"a" * 60_000

#: id, the bytes on the TLS port, on the plain port, and the statuses each gets: on the
#: TLS port, there with a client CA (no certificate), and on the plain port.
CORPUS: list[tuple[str, bytes, bytes, tuple[int, int, int]]] = [
    (
        "a letter, 60,000 blanks and a letter",
        on_tls(b"X: a" + b" " * 60_000 + b"b"),
        on_plain(b"X: a" + b" " * 60_000 + b"b"),
        (200, 401, 200),
    ),
    (
        "60,000 blanks and tabs alone",
        on_tls(b"X:" + b" \t" * 30_000),
        on_plain(b"X:" + b" \t" * 30_000),
        (200, 401, 200),
    ),
    (
        "60,000 blanks before a control character",
        on_tls(b"X: a" + b" " * 60_000 + b"\x01"),
        on_plain(b"X: a" + b" " * 60_000 + b"\x01"),
        (400, 400, 400),
    ),
    (
        "15,000 empty headers",
        on_tls(b"\r\n".join([b"X:"] * 15_000)),
        on_plain(b"\r\n".join([b"X:"] * 15_000)),
        (431, 431, 431),
    ),
    (
        "a 60,000-byte path",
        on_tls(b"X: y", b"/mutate/" + LONG),
        on_plain(b"X: y", b"/healthz/" + LONG),
        (404, 401, 404),
    ),
    ("64 KiB of blanks and no end", UNENDED, UNENDED, (431, 431, 431)),
]


# --------------------------------------------------------------------------- clients


def connect(front: Front, plain: bool, certificate: bool) -> socket.socket:
    """A connection ready for a request: TCP to the plain port, TLS (handshake done) else."""
    server = front.server
    raw = socket.create_connection(
        ("127.0.0.1", server.metrics_port if plain else server.port), timeout=front.timeout
    )
    if plain:
        return raw
    context = front.context if certificate else server.context()
    return context.wrap_socket(raw, server_hostname="localhost")


def status(sock: socket.socket) -> int:
    """The status of the answer, read until the server closes (every request here closes).

    0 when the server closed or reset the connection without an answer.
    """
    data = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            data += chunk
    match = re.match(rb"HTTP/1\.1 (\d{3}) ", data)
    return int(match.group(1)) if match else 0


def statuses(socks: list[socket.socket], into: list[int]) -> None:
    """Each connection's answer status, in order (a thread's target)."""
    into.extend(status(sock) for sock in socks)


def pooled(front: Front) -> http.client.HTTPSConnection:
    """A keep-alive connection with its handshake done, as the API server pools them."""
    conn = http.client.HTTPSConnection(
        "localhost", front.server.port, context=front.context, timeout=front.timeout
    )
    conn.connect()
    return conn


def timed_review(front: Front, uid: str, conn: http.client.HTTPSConnection) -> float:
    """Seconds from sending a review on ``conn`` to its whole answer."""
    body = orjson.dumps(review(pod(), uid=uid))
    started = time.perf_counter()
    status, answer = front.server.request("POST", "/mutate", body, conn=conn)
    seconds = time.perf_counter() - started
    assert status == 200 and orjson.loads(answer)["response"]["uid"] == uid
    return seconds


@dataclass
class Attack:
    """What :func:`under_attack` saw: the slowest review per trial alone and attacked, in
    seconds; every hostile connection's status (0: closed without an answer); and the
    reviews that failed (what went wrong)."""

    alone: list[float] = field(default_factory=list)
    attacked: list[float] = field(default_factory=list)
    answers: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def _review(front: Front, uid: str, conn: http.client.HTTPSConnection, attack: Attack) -> float:
    """A timed review that records a failure instead of raising (seconds until it failed)."""
    started = time.perf_counter()
    try:
        return timed_review(front, uid, conn)
    except (OSError, http.client.HTTPException, AssertionError) as exc:
        attack.failures.append(type(exc).__name__)
        conn.close()
        return time.perf_counter() - started


def under_attack(front: Front, sends: list[tuple[bool, bytes]], trials: int) -> Attack:
    """The slowest review alone, and while the hostile heads are answered, trials interleaved.

    Reviews go on a connection opened (handshake done) before the hostile bytes are sent,
    so the first reaches the server after them; more follow, one after another, until
    every hostile connection has its answer, so a loop busy with the heads holds one of
    them whenever it gets to them.
    """
    attack = Attack()
    for trial in range(trials):
        with contextlib.closing(pooled(front)) as conn:
            alone = [_review(front, f"alone-{trial}-{i}", conn, attack) for i in range(2)]
        attack.alone.append(max(alone))
        socks = [connect(front, plain, certificate=False) for plain, _ in sends]
        answers: list[int] = []
        listener = threading.Thread(target=statuses, args=(socks, answers))
        try:
            with contextlib.closing(pooled(front)) as conn:
                for sock, (_, data) in zip(socks, sends, strict=True):
                    sock.sendall(data)
                listener.start()
                waits = [_review(front, f"attacked-{trial}-0", conn, attack)]
                while listener.is_alive() and len(waits) < 100:  # reconnects after a failure
                    waits.append(_review(front, f"attacked-{trial}-{len(waits)}", conn, attack))
            listener.join()
            attack.attacked.append(max(waits))
            attack.answers += answers
        finally:
            for sock in socks:
                sock.close()
    return attack


# --------------------------------------------------------------------------- figures


def _print(label: str, attack: Attack) -> None:
    alone = statistics.median(attack.alone) * 1000
    attacked = statistics.median(attack.attacked) * 1000
    failed = (
        f"; reviews failed: {', '.join(sorted(set(attack.failures)))}" if attack.failures else ""
    )
    print(
        f"{label:<64} alone {alone:8.1f}  attacked {attacked:9.1f}  delay {attacked - alone:9.1f}"
        f"  worst {max(attack.attacked) * 1000:9.1f} ms; answers {sorted(set(attack.answers))}"
        + failed,
        flush=True,
    )


def main() -> None:
    """Serve this tree (or ``--tree``) twice, one worker each, and print each case's figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=serving_module.ROOT)
    parser.add_argument("--timeout", type=float, default=15.0, help="seconds a client waits")
    args = parser.parse_args()
    serving_module.ROOT = args.tree.resolve()
    work = Path(tempfile.mkdtemp(prefix="hostile-heads-"))
    (work / "open").mkdir()
    (work / "guarded").mkdir()
    client_ca, cert, key = client_pair(work / "guarded")
    one = ("--workers", "1", "--threads", "4")
    with (
        serving(work / "open", *one) as open_server,
        serving(work / "guarded", *one, "--client-ca", str(client_ca)) as guarded_server,
    ):
        context = guarded_server.context()
        context.load_cert_chain(str(cert), str(key))
        front = Front(open_server, open_server.context(), authed=False, timeout=args.timeout)
        guarded = Front(guarded_server, context, authed=True, timeout=args.timeout)
        print(f"serving {args.tree}; ms, median of {args.trials} trials", file=sys.stderr)
        places = [("TLS", front, False), ("TLS, client CA, no cert", guarded, False)]
        places.append(("metrics port", front, True))
        for name, tls_bytes, plain_bytes, _ in CORPUS:
            for place, where, plain in places:
                sends = [(plain, plain_bytes if plain else tls_bytes)] * 2
                _print(f"{name} / {place}", under_attack(where, sends, args.trials))
        blanks = b"X: a" + b" " * 60_000 + b"b"
        sends = [(False, on_tls(blanks))] * 2 + [(True, on_plain(blanks))] * 2
        _print(
            "two on each port at once: a, 60,000 blanks, b", under_attack(front, sends, args.trials)
        )


if __name__ == "__main__":
    main()
