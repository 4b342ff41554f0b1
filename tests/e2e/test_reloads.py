"""SIGHUP reloads of the real server (gunicorn, TLS): no request is lost in any phase of its
connection, and no config file, however broken, takes the server down.

A reload starts new workers, waits until they serve, then stops the old ones, which serve
every connection they had accepted to its end. The phases are held one at a time, each on a
connection an old worker accepted before the SIGHUP and continued once that worker has begun
to stop; a steady stream of reviews on new and on keep-alive connections covers the moments
between them.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import os
import re
import signal
import socket
import ssl
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.e2e.serving import Server, serving
from tests.reviews import pod, review
from tests.server.test_reloadcheck import BAD_FILES
from webhooks.server.framing import MAX_BODY
from webhooks.server.reloadcheck import REASON_CHARS

pytestmark = pytest.mark.e2e

GOOD = "plugins:\n  default-toleration-seconds:\n    notReadySeconds: {seconds}\n"
WORKERS = 2
#: Reloads under the steady stream; before the fix each lost 2-4 requests.
RELOADS = 5


def children(pid: int) -> set[int]:
    """The master's children: its workers (and, briefly, a config check)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return {int(p) for p in path.read_text().split()} if path.exists() else set()


def wait_for(what: str, done: Callable[[], bool], server: Server, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if server.process.poll() is not None:
            raise AssertionError(f"the server exited while waiting for {what}:\n{server.output()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {seconds}s:\n{server.output()[-4000:]}")
        time.sleep(0.02)


def _queue(port: int, state: str) -> int:
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == state and int(fields[1].rsplit(":", 1)[1], 16) == port:
            return int(fields[4].split(":")[1], 16)
    raise AssertionError(f"no socket on port {port} in state {state}")


def accept_queue(port: int) -> int:
    """Connections waiting in the listen queue of ``port`` (not yet accepted by a worker)."""
    return _queue(port, "0A")


def receive_queue(port: int) -> int:
    """Bytes received and not yet read by the connected socket whose own port is ``port``."""
    return _queue(port, "01")


def settled(server: Server) -> None:
    """Wait until the master has just its workers (no earlier generation still stopping)."""
    wait_for(f"{WORKERS} workers", lambda: len(children(server.process.pid)) == WORKERS, server)


def reload_until_the_old_workers_stop(server: Server) -> set[int]:
    """SIGHUP, then wait until every old worker has begun to stop; the old workers' pids."""
    settled(server)
    old = children(server.process.pid)
    os.kill(server.process.pid, signal.SIGHUP)
    stopping = [re.compile(rf"Stopping: finishing \d+ open connections \(pid: {p}\)") for p in old]
    wait_for(
        "old workers stopping",
        lambda: all(pattern.search(server.output()) for pattern in stopping),
        server,
    )
    return old


# ------------------------------------------------------------------ HTTP on raw connections


def request(uid: str, obj: dict[str, Any] | None = None, path: str = "/mutate") -> bytes:
    body = orjson.dumps(review(obj or pod(), uid=uid))
    head = (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


@dataclass(frozen=True)
class Answer:
    status: int
    uid: str
    closes: bool


class Answers:
    """Responses read one by one from any byte source (``recv() -> b""`` at the end)."""

    def __init__(self, recv: Callable[[], bytes]) -> None:
        self.recv = recv
        self.buf = b""

    def _fill(self) -> bool:
        data = self.recv()
        self.buf += data
        return bool(data)

    def next(self) -> Answer | None:
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                assert not self.buf, f"the connection ended inside an answer: {self.buf[:200]!r}"
                return None
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, v in (h.split(":", 1) for h in lines[1:])}
        length = int(headers["content-length"])
        while len(self.buf) < length:
            assert self._fill(), "the connection ended inside an answer's body"
        body, self.buf = self.buf[:length], self.buf[length:]
        uid = orjson.loads(body)["response"]["uid"] if body.startswith(b"{") else ""
        closes = headers.get("connection", "").lower() == "close"
        return Answer(int(lines[0].split()[1]), uid, closes)

    def ended(self) -> bool:
        return not self.buf and not self._fill()


def tls(server: Server, sock: socket.socket) -> ssl.SSLSocket:
    return server.context().wrap_socket(sock, server_hostname="localhost")


def connect(server: Server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


# ------------------------------------------------------------------ phases held across a reload
#
# Each phase is a generator: it opens its connection and brings it to the phase, yields while
# the old workers begin to stop, then goes on as its client would, and returns what it sent
# (uids) and the answers it read until the server ended the connection.

Held = Generator[None, None, tuple[list[str], list[Answer]]]


def _read_all(answers: Answers, sent: list[str]) -> tuple[list[str], list[Answer]]:
    got: list[Answer] = []
    while len(got) < len(sent):
        answer = answers.next()
        if answer is None:
            break
        got.append(answer)
        if answer.closes:
            assert answers.ended(), "bytes after an answer that closed the connection"
            break
    return sent, got


def before_client_hello(server: Server, uid: str) -> Held:
    with connect(server) as sock:
        yield
        with tls(server, sock) as conn:
            conn.sendall(request(uid))
            return _read_all(Answers(lambda: conn.recv(65536)), [uid])


def mid_handshake(server: Server, uid: str) -> Held:
    with connect(server) as sock:
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        conn = server.context().wrap_bio(incoming, outgoing, server_hostname="localhost")
        with contextlib.suppress(ssl.SSLWantReadError):
            conn.do_handshake()
        sock.sendall(outgoing.read())  # the ClientHello
        incoming.write(sock.recv(65536))  # the server's first flight: a worker has it
        yield

        def recv() -> bytes:
            sock.sendall(outgoing.read())
            data = sock.recv(65536)
            if data:
                incoming.write(data)
            return data

        while True:
            try:
                conn.do_handshake()
                break
            except ssl.SSLWantReadError:
                assert recv(), "the server ended the connection during its handshake"
        conn.write(request(uid))

        def read() -> bytes:
            while True:
                try:
                    return conn.read(65536)
                except ssl.SSLWantReadError:
                    if not recv():
                        return b""
                except ssl.SSLZeroReturnError:
                    return b""

        return _read_all(Answers(read), [uid])


def after_handshake(server: Server, uid: str) -> Held:
    with tls(server, connect(server)) as conn:
        yield
        conn.sendall(request(uid))
        return _read_all(Answers(lambda: conn.recv(65536)), [uid])


def half_a_head(server: Server, uid: str) -> Held:
    with tls(server, connect(server)) as conn:
        whole = request(uid)
        conn.sendall(whole[:40])
        yield
        conn.sendall(whole[40:])
        return _read_all(Answers(lambda: conn.recv(65536)), [uid])


def half_a_body(server: Server, uid: str) -> Held:
    with tls(server, connect(server)) as conn:
        whole = request(uid)
        conn.sendall(whole[: len(whole) - 200])
        yield
        conn.sendall(whole[len(whole) - 200 :])
        return _read_all(Answers(lambda: conn.recv(65536)), [uid])


def idle_keep_alive(server: Server, uid: str) -> Held:
    with tls(server, connect(server)) as conn:
        answers = Answers(lambda: conn.recv(65536))
        conn.sendall(request(f"{uid}-first"))
        first = answers.next()
        assert first is not None and not first.closes
        yield
        conn.sendall(request(uid))
        sent, got = _read_all(answers, [uid])
        return [f"{uid}-first", *sent], [first, *got]


def _big_answer_request(uid: str) -> bytes:
    """A review whose answer is larger than any send buffer the kernel gives a socket."""
    wmem_max = int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
    count = (wmem_max + (1 << 20)) // 100  # each refused toleration is ~100 bytes of answer
    obj = pod()
    obj["spec"]["tolerations"] = [{"key": f"k{i}", "operator": "Bogus"} for i in range(count)]
    whole = request(uid, obj, path="/validate")
    if len(whole) > MAX_BODY:
        pytest.skip(f"tcp_wmem allows {wmem_max} bytes of send buffer: no answer outgrows it")
    return whole


def answer_being_written(server: Server, uid: str) -> Held:
    big = _big_answer_request(f"{uid}-big")
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small receive window
        sock.settimeout(30)
        sock.connect(("127.0.0.1", server.port))
        with tls(server, sock) as conn:
            conn.sendall(big)
            port = conn.getsockname()[1]
            # Our receive window is full: the server is writing and cannot finish.
            wait_for("the answer's first bytes", lambda: receive_queue(port) >= 4096, server)
            yield
            answers = Answers(lambda: conn.recv(1 << 20))
            first = answers.next()
            assert first is not None and not first.closes, "decided before the stop"
            conn.sendall(request(uid))
            sent, got = _read_all(answers, [uid])
            return [f"{uid}-big", *sent], [first, *got]


PHASES = [
    pytest.param(before_client_hello, id="a TCP connection that has not sent its ClientHello"),
    pytest.param(mid_handshake, id="a TLS handshake half done"),
    pytest.param(after_handshake, id="a connection past its handshake that sent nothing yet"),
    pytest.param(half_a_head, id="half a request head sent"),
    pytest.param(half_a_body, id="the head and part of the body sent"),
    pytest.param(idle_keep_alive, id="an idle keep-alive connection that sends its next review"),
    pytest.param(
        answer_being_written,
        id="an answer being written when the stop comes, then the connection's next review",
    ),
]


@pytest.fixture(scope="module")
def reloading(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("reloading")
    config = workdir / "config.yaml"
    config.write_text(GOOD.format(seconds=300), encoding="utf-8")
    with serving(workdir, "--config", str(config), "--workers", str(WORKERS)) as server:
        yield server


@pytest.mark.parametrize("phase", PHASES)
def test_a_reload_serves_a_connection_an_old_worker_holds(
    reloading: Server, phase: Callable[[Server, str], Held]
) -> None:
    server = reloading
    settled(server)
    held = phase(server, f"held-{phase.__name__}")
    try:
        next(held)
        wait_for("every connection accepted", lambda: accept_queue(server.port) == 0, server)
        reload_until_the_old_workers_stop(server)
        next(held)
    except StopIteration as finished:
        sent, got = finished.value
    else:
        raise AssertionError("the phase yielded twice")
    finally:
        held.close()
    assert got, "no answer at all"
    assert [(a.status, a.uid) for a in got] == [(200, uid) for uid in sent[: len(got)]]
    assert got[-1].closes or len(got) == len(sent), (
        "the connection ended after an answer that kept it open: "
        f"{len(sent) - len(got)} requests lost"
    )
    assert not any(a.closes for a in got[:-1])


# ------------------------------------------------------------------ a steady stream


def test_reviews_on_new_and_keep_alive_connections_see_no_failure_across_reloads(
    tmp_path: Path,
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(GOOD.format(seconds=300), encoding="utf-8")
    with serving(tmp_path, "--config", str(config), "--workers", str(WORKERS)) as server:
        body = orjson.dumps(review(pod(), uid="stream"))
        headers = {"Content-Type": "application/json"}
        stop = threading.Event()
        failures: list[str] = []
        answered = [0, 0]

        def post(conn: http.client.HTTPSConnection) -> http.client.HTTPResponse:
            conn.request("POST", "/mutate", body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                failures.append(f"status {response.status}")
            return response

        def new_connections() -> None:
            while not stop.is_set():
                conn = server.connect()
                try:
                    post(conn)
                    answered[0] += 1
                except (OSError, http.client.HTTPException) as exc:
                    failures.append(f"new connection: {exc!r}")
                finally:
                    conn.close()

        def keep_alive() -> None:
            conn = server.connect()
            while not stop.is_set():
                try:
                    if post(conn).will_close:
                        conn.close()
                        conn = server.connect()
                    answered[1] += 1
                except (OSError, http.client.HTTPException) as exc:
                    failures.append(f"keep-alive: {exc!r}")
                    conn.close()
                    conn = server.connect()
                time.sleep(0.005)
            conn.close()

        clients = [threading.Thread(target=new_connections) for _ in range(3)]
        clients += [threading.Thread(target=keep_alive) for _ in range(2)]
        for client in clients:
            client.start()
        try:
            for _ in range(RELOADS):
                reload_until_the_old_workers_stop(server)
                settled(server)
        finally:
            stop.set()
            for client in clients:
                client.join(timeout=30)
        assert failures == [], failures[:10]
        assert answered[0] > 0 and answered[1] > 0


# ------------------------------------------------------------------ config files


def not_ready_seconds(body: bytes) -> int:
    response = orjson.loads(body)["response"]
    for op in orjson.loads(base64.b64decode(response["patch"])):
        for toleration in op["value"] if isinstance(op["value"], list) else [op["value"]]:
            if toleration.get("key") == "node.kubernetes.io/not-ready":
                return int(toleration["tolerationSeconds"])
    raise AssertionError("no not-ready toleration")


def reload_counts(server: Server) -> dict[str, float]:
    status, text = server.plain("GET", "/metrics")
    assert status == 200
    found = re.findall(
        rb'^placement_webhooks_config_reloads_total\{outcome="(\w+)"\} (\S+)$', text, re.M
    )
    return {outcome.decode(): float(value) for outcome, value in found}


@dataclass
class Configured:
    server: Server
    path: Path


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Configured]:
    workdir = tmp_path_factory.mktemp("configured")
    path = workdir / "config.yaml"
    path.write_text(GOOD.format(seconds=42), encoding="utf-8")
    with serving(workdir, "--config", str(path), "--workers", str(WORKERS)) as server:
        yield Configured(server, path)


def put_back(path: Path, text: str) -> None:
    """Whatever is at ``path`` (file, link, directory, FIFO) replaced by a file holding ``text``."""
    if path.is_dir() and not path.is_symlink():
        path.rmdir()
    else:
        path.unlink(missing_ok=True)
    path.write_text(text, encoding="utf-8")


def answers_with(server: Server, seconds: int) -> None:
    for i in range(4):  # new connections: both workers, in all likelihood
        status, body = server.request("POST", "/mutate", review(pod(), uid=f"c{i}"))
        assert status == 200 and not_ready_seconds(body) == seconds
    assert server.plain("GET", "/healthz")[0] == 200


def refusals(server: Server) -> list[str]:
    return [line for line in server.output().splitlines() if "config reload refused" in line]


@pytest.mark.parametrize(("make", "reason"), BAD_FILES)
def test_a_reload_with_a_config_the_server_cannot_use_is_refused_and_both_ports_serve_on(
    configured: Configured, make: Callable[[Path], None], reason: str
) -> None:
    server, path = configured.server, configured.path
    settled(server)
    workers = children(server.process.pid)
    before = len(refusals(server))
    make(path)
    try:
        os.kill(server.process.pid, signal.SIGHUP)
        wait_for("a refusal", lambda: len(refusals(server)) > before, server)
        [line] = refusals(server)[before:]
        assert f"keeping the running workers: {path}" in line and reason in line
        assert len(line) < 200 + len(str(path)) + REASON_CHARS, "a bounded excerpt"
        answers_with(server, 42)
        assert children(server.process.pid) == workers, "the same workers serve on"
    finally:
        put_back(path, GOOD.format(seconds=42))


def test_a_good_config_after_a_bad_one_is_applied_and_the_reloads_are_counted(
    configured: Configured,
) -> None:
    server, path = configured.server, configured.path
    counts = reload_counts(server)
    settled(server)
    put_back(path, "plugins: [\n")
    before = len(refusals(server))
    os.kill(server.process.pid, signal.SIGHUP)
    wait_for("a refusal", lambda: len(refusals(server)) > before, server)
    answers_with(server, 42)
    for seconds in (60, 42):
        settled(server)
        old = children(server.process.pid)
        put_back(path, GOOD.format(seconds=seconds))
        os.kill(server.process.pid, signal.SIGHUP)
        wait_for("new workers only", lambda old=old: not children(server.process.pid) & old, server)
        settled(server)
        answers_with(server, seconds)
    after = reload_counts(server)
    assert after["refused"] == counts.get("refused", 0) + 1
    assert after["applied"] == counts.get("applied", 0) + 2
