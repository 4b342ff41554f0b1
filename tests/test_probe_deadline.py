"""The probe's timeout is one deadline for the whole round trip, and its answer is bounded.

Each row is a real local server that misbehaves as a slow or hostile peer would: it dribbles
its answer a byte at a time (every read well within a per-read timeout, the whole far past
the deadline), never ends its head, sends an endless body, or accepts TCP and never speaks
TLS. The probe must give up with a failure that says why. The only time bound asserted is a
loose guard against hanging (the round trip runs in a thread given 30 s), never a timing.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Callable
from types import TracebackType

import pytest

from tests.command import run_cli
from webhooks.certs import pki
from webhooks.install.probe import ANSWER_LIMIT, Outcome, Target, round_trip

#: The probe's timeout in these tests, and how long a dribbling server waits between bytes:
#: far less than the timeout, so no single read ever times out.
TIMEOUT = 1.0
DRIBBLE = 0.2
#: How long the test waits for a round trip before calling it hung (a guard, not a timing).
GUARD = 30.0
#: What an "endless" stream sends at most, so a probe that reads everything still stops.
ENDLESS = 4 * ANSWER_LIMIT

Behaviour = Callable[[ssl.SSLSocket, bytes, threading.Event], None]


def _answer(request: bytes, padding: int = 0) -> bytes:
    """An answer the API server accepts for ``request``: allowed, with ``padding`` blanks."""
    uid = json.loads(request.partition(b"\r\n\r\n")[2])["request"]["uid"]
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": uid, "allowed": True},
    }
    body = json.dumps(review).encode() + b" " * padding
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + (
        f"Content-Length: {len(body)}\r\n\r\n".encode() + body
    )


def _dribble(tls: ssl.SSLSocket, data: bytes, stop: threading.Event) -> None:
    for index in range(len(data)):
        if stop.wait(DRIBBLE):
            return
        tls.sendall(data[index : index + 1])


def _flood(tls: ssl.SSLSocket, head: bytes, piece: bytes) -> None:
    tls.sendall(head)
    sent = 0
    while sent < ENDLESS:
        tls.sendall(piece)
        sent += len(piece)


def dribbled_answer(tls: ssl.SSLSocket, request: bytes, stop: threading.Event) -> None:
    _dribble(tls, _answer(request), stop)


def endless_dribbled_head(tls: ssl.SSLSocket, request: bytes, stop: threading.Event) -> None:
    _dribble(tls, b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100_000, stop)


def endless_body(tls: ssl.SSLSocket, request: bytes, stop: threading.Event) -> None:
    _flood(tls, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n", b" " * 65536)


def endless_chunks(tls: ssl.SSLSocket, request: bytes, stop: threading.Event) -> None:
    piece = b"10000\r\n" + b" " * 65536 + b"\r\n"
    _flood(tls, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", piece)


def declared_huge(tls: ssl.SSLSocket, request: bytes, stop: threading.Event) -> None:
    _flood(tls, b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n", b" " * 65536)


def huge_head(tls: ssl.SSLSocket, request: bytes, stop: threading.Event) -> None:
    _flood(tls, b"HTTP/1.1 200 OK\r\n", b"X-Filler: " + b"a" * 1000 + b"\r\n")


def answer_at_the_limit(tls: ssl.SSLSocket, request: bytes, stop: threading.Event) -> None:
    head_and_review = _answer(request)
    body_length = len(head_and_review.partition(b"\r\n\r\n")[2])
    tls.sendall(_answer(request, padding=ANSWER_LIMIT - body_length))


def answer_at_once(tls: ssl.SSLSocket, request: bytes, stop: threading.Event) -> None:
    tls.sendall(_answer(request))


def _read_request(tls: ssl.SSLSocket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = tls.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += tls.recv(65536)
    return head + b"\r\n\r\n" + body


class Hostile:
    """A local server on 127.0.0.1 that answers each connection with ``behaviour``
    (``None``: it accepts TCP and then says nothing, not even TLS)."""

    def __init__(self, chain: pki.CertPaths, behaviour: Behaviour | None) -> None:
        self.behaviour = behaviour
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(chain.cert, chain.key)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def __enter__(self) -> Hostile:
        self._spawn(self._accept)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(GUARD)
        self.listener.close()

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self.threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            self._spawn(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            if self.behaviour is None:
                self.stop.wait()
                return
            conn.settimeout(GUARD)
            try:
                with self.context.wrap_socket(conn, server_side=True) as tls:
                    self.behaviour(tls, _read_request(tls), self.stop)
            except OSError:
                pass  # the probe gave up and closed: what it should do


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> pki.CertPaths:
    return pki.generate(tmp_path_factory.mktemp("hostile"), hosts=["localhost"])


def _probe(chain: pki.CertPaths, port: int) -> Outcome:
    """The round trip, in a thread given :data:`GUARD` seconds (else the test fails)."""
    target = Target(f"https://localhost:{port}/validate", chain.ca.read_bytes(), ("v",))
    done: list[Outcome] = []
    worker = threading.Thread(
        target=lambda: done.append(round_trip(target, "default", TIMEOUT)), daemon=True
    )
    worker.start()
    worker.join(GUARD)
    assert done, f"the round trip was still running after {GUARD:g} s"
    return done[0]


DEADLINE = "no complete answer within the 1 s timeout"
TOO_LARGE = f"the probe reads at most ANSWER_LIMIT ({ANSWER_LIMIT} bytes)"


@pytest.mark.parametrize(
    ("behaviour", "problem"),
    [
        pytest.param(
            dribbled_answer,
            DEADLINE,
            id="an answer dribbled a byte at a time fails at the deadline, not when it ends",
        ),
        pytest.param(
            endless_dribbled_head, DEADLINE, id="a head that never ends, dribbled, fails at it"
        ),
        pytest.param(
            None, DEADLINE, id="a server that accepts TCP and never speaks TLS fails at it"
        ),
        pytest.param(
            endless_body, TOO_LARGE, id="an endless body is read no further than ANSWER_LIMIT"
        ),
        pytest.param(
            endless_chunks, TOO_LARGE, id="endless chunks are read no further than ANSWER_LIMIT"
        ),
        pytest.param(
            declared_huge,
            "says it is 100000000 bytes long",
            id="a Content-Length over ANSWER_LIMIT is refused before the body is read",
        ),
        pytest.param(
            huge_head, "got more than 100 headers", id="a huge head is refused as it arrives"
        ),
    ],
)
def test_a_slow_or_endless_answer_fails_the_probe(
    chain: pki.CertPaths, behaviour: Behaviour | None, problem: str
) -> None:
    with Hostile(chain, behaviour) as server:
        outcome = _probe(chain, server.port)
    assert problem in outcome.problem
    assert outcome.allowed is None


@pytest.mark.parametrize(
    "behaviour",
    [
        pytest.param(answer_at_once, id="an answer sent at once is accepted"),
        pytest.param(answer_at_the_limit, id="an answer of exactly ANSWER_LIMIT bytes is read"),
    ],
)
def test_an_answer_within_the_bounds_is_accepted(
    chain: pki.CertPaths, behaviour: Behaviour
) -> None:
    with Hostile(chain, behaviour) as server:
        outcome = _probe(chain, server.port)
    assert outcome.problem == "" and outcome.allowed is True


def test_probe_timeout_2_fails_an_answer_that_takes_longer(chain: pki.CertPaths) -> None:
    """The issue's case through the command: ``--timeout 2`` printed ok for a 20 s answer."""
    with Hostile(chain, dribbled_answer) as server:
        result = run_cli(
            "probe",
            f"--url=https://localhost:{server.port}/validate",
            f"--ca-file={chain.ca}",
            "--timeout=2",
            timeout=GUARD,
        )
    assert result.returncode == 1, result.stdout
    assert "no complete answer within the 2 s timeout" in result.stderr
    assert "ok " not in result.stdout


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        pytest.param("https://localhost:99999/v", "Port out of range", id="a port past 65535"),
        pytest.param("https://localhost:https/v", "not a usable URL", id="a port that is a word"),
        pytest.param("https://localhost/a b", "not a usable path", id="a path with a blank"),
        pytest.param("http://localhost/v", "not an https URL", id="plain HTTP"),
    ],
)
def test_an_unusable_url_is_a_problem_not_an_exception(
    chain: pki.CertPaths, url: str, problem: str
) -> None:
    outcome = round_trip(Target(url, chain.ca.read_bytes(), ("v",)), "default", TIMEOUT)
    assert problem in outcome.problem
