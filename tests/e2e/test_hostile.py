"""Hostile clients against real gunicorn over TLS: each gets its documented answer, and the
server keeps serving everybody else meanwhile."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.e2e.clientcert import client_pair
from tests.e2e.serving import Server, serving
from tests.reviews import pod, review

pytestmark = pytest.mark.e2e

IO_TIMEOUT = 2.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("hostile")
    with serving(workdir, "--io-timeout", str(IO_TIMEOUT), "--workers", "2", "--threads", "4") as s:
        yield s


def _healthy(server: Server) -> None:
    status, body = server.request("POST", "/mutate", review(pod(), uid="after"))
    assert status == 200 and orjson.loads(body)["response"]["uid"] == "after"


def _raw_http(server: Server, data: bytes, *, read: bool = True) -> bytes:
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=15) as raw,
        server.context().wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        tls.sendall(data)
        if not read:
            return b""
        chunks = []
        with contextlib.suppress(OSError):
            while chunk := tls.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)


def _review_without(path: str) -> dict[str, Any]:
    body = review(pod())
    node = body
    *parents, last = path.split(".")
    for part in parents:
        node = node[part]
    del node[last]
    return body


TABLE: list[tuple[str, Any, dict[str, str], int, bytes]] = [
    ("a body that is not JSON", b"<xml/>", {}, 400, b"not valid JSON"),
    (
        "the wrong apiVersion",
        {**review(pod()), "apiVersion": "admission.k8s.io/v1beta1"},
        {},
        400,
        b"apiVersion",
    ),
    ("a review without a uid", _review_without("request.uid"), {}, 400, b"uid"),
    ("a CREATE without an object", _review_without("request.object"), {}, 400, b"object"),
    ("a 7 MiB body", b"[" + b"0," * (7 * 512 * 1024) + b"0]", {}, 413, b"larger than"),
    ("the wrong content type", review(pod()), {"Content-Type": "text/yaml"}, 415, b"content type"),
]


@pytest.mark.parametrize(
    ("body", "headers", "status", "reason"), [t[1:] for t in TABLE], ids=[t[0] for t in TABLE]
)
def test_a_bad_request_gets_its_answer_and_the_server_keeps_serving(
    server: Server, body: Any, headers: dict[str, str], status: int, reason: bytes
) -> None:
    got, text = server.request("POST", "/mutate", body, headers=headers)
    assert got == status
    assert reason in text
    _healthy(server)


def test_a_get_on_an_admission_path_is_405_and_an_unknown_path_404(server: Server) -> None:
    assert server.request("GET", "/mutate")[0] == 405
    assert server.request("POST", "/nowhere", review(pod()))[0] == 404
    _healthy(server)


def test_an_http_1_0_client_is_answered_and_the_connection_closed(server: Server) -> None:
    body = orjson.dumps(review(pod(), uid="old-client"))
    head = (
        b"POST /mutate HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    answer = _raw_http(server, head + body)
    assert answer.startswith((b"HTTP/1.0 200", b"HTTP/1.1 200"))
    assert b'"uid":"old-client"' in answer


def test_a_body_that_arrives_too_slowly_gets_408_while_others_are_served(server: Server) -> None:
    body = orjson.dumps(review(pod()))
    head = (
        b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=15) as raw,
        server.context().wrap_socket(raw, server_hostname="localhost") as slow,
    ):
        slow.sendall(head + body[:100])
        for _ in range(5):  # others are served while the slow client holds a thread
            _healthy(server)
        started = time.monotonic()
        answer = b""
        with contextlib.suppress(OSError):
            answer = slow.recv(65536)
        waited = time.monotonic() - started
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408")
    assert waited < IO_TIMEOUT + 10, "the slow client must be cut off by the I/O timeout"
    _healthy(server)


def test_a_client_that_never_finishes_its_handshake_does_not_block_others(server: Server) -> None:
    stalled = []
    try:
        for _ in range(3):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=15)
            sock.sendall(b"\x16\x03\x01\x00\xc8\x01\x00")  # the start of a ClientHello, no more
            stalled.append(sock)
        for _ in range(5):
            _healthy(server)
        for sock in stalled:
            # The server must give up on the handshake: close (b""), alert (0x15) or reset.
            sock.settimeout(IO_TIMEOUT + 10)
            try:
                data = sock.recv(1024)
            except ConnectionResetError:
                data = b""
            except TimeoutError:
                pytest.fail("the server kept a stalled handshake open past its I/O timeout")
            assert data == b"" or data[:1] == b"\x15"
    finally:
        for sock in stalled:
            sock.close()
    _healthy(server)


def test_many_idle_connections_do_not_stop_service(server: Server) -> None:
    idle = []
    try:
        for _ in range(64):
            raw = socket.create_connection(("127.0.0.1", server.port), timeout=15)
            idle.append(server.context().wrap_socket(raw, server_hostname="localhost"))
        for _ in range(10):
            _healthy(server)
    finally:
        for sock in idle:
            sock.close()


def test_a_worker_killed_with_sigkill_is_replaced_and_service_continues(server: Server) -> None:
    children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
    workers = children.read_text().split()
    assert len(workers) == 2
    os.kill(int(workers[0]), signal.SIGKILL)
    for _ in range(20):
        _healthy(server)  # fresh connections: the surviving worker or the replacement
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        now = children.read_text().split()
        if len(now) == 2 and workers[0] not in now:
            break
        time.sleep(0.1)
    assert len(children.read_text().split()) == 2


def test_each_review_is_logged_as_one_json_line_without_the_object(server: Server) -> None:
    secret = "s3cr3t-value-never-logged"
    obj = pod(name="logged")
    obj["spec"]["containers"][0]["env"] = [{"name": "TOKEN", "value": secret}]
    server.request("POST", "/mutate", review(obj, uid="log-me"))
    deadline = time.monotonic() + 5
    line = None
    while line is None and time.monotonic() < deadline:
        for text in server.output().splitlines():
            if '"uid":"log-me"' in text:
                line = orjson.loads(text)
        time.sleep(0.05)
    assert line is not None
    assert line["msg"] == "review" and line["decision"] == "patched"
    assert line["kind"] == "Pod" and line["name"] == "logged" and line["operation"] == "CREATE"
    assert line["changedBy"] == ["default-toleration-seconds"]
    assert isinstance(line["latencyMs"], float)
    assert secret not in server.output()


def test_with_a_client_ca_only_authenticated_callers_may_review(tmp_path: Path) -> None:
    client_ca, client_cert, client_key = client_pair(tmp_path)
    with serving(tmp_path, "--client-ca", str(client_ca)) as authed:
        assert authed.request("GET", "/healthz")[0] == 200  # probes carry no certificate
        status, body = authed.request("POST", "/mutate", review(pod()))
        assert status == 401 and b"client certificate" in body
        conn = authed.connect()
        assert isinstance(conn.sock, ssl.SSLSocket) or conn.sock is None
        ctx = authed.context()
        ctx.load_cert_chain(str(client_cert), str(client_key))
        import http.client

        with_cert = http.client.HTTPSConnection("localhost", authed.port, context=ctx, timeout=10)
        assert authed.request("POST", "/mutate", review(pod()), conn=with_cert)[0] == 200
        with_cert.close()
        conn.close()


# --------------------------------------------------------------------------- the poller


def _review_head(body: bytes) -> bytes:
    return (
        b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )


def _closed_by_server(sock: socket.socket | ssl.SSLSocket, within: float) -> bytes:
    """Read until the server closes; what it said first (b"" for a bare close or a reset)."""
    sock.settimeout(within)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (ConnectionResetError, ssl.SSLError):
        pass
    except TimeoutError:
        pytest.fail(f"the server kept the connection open for more than {within} s")
    return data


def test_with_300_idle_connections_held_a_review_on_a_new_connection_is_answered(
    server: Server,
) -> None:
    idle = []
    try:
        for _ in range(300):
            idle.append(socket.create_connection(("127.0.0.1", server.port), timeout=15))
        for i in range(5):
            status, body = server.request("POST", "/mutate", review(pod(), uid=f"crowd-{i}"))
            assert status == 200 and orjson.loads(body)["response"]["uid"] == f"crowd-{i}"
    finally:
        for sock in idle:
            sock.close()


def test_a_byte_a_second_body_is_cut_off_at_the_deadline_and_the_connection_closed(
    server: Server,
) -> None:
    body = orjson.dumps(review(pod()))
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=15) as raw,
        server.context().wrap_socket(raw, server_hostname="localhost") as slow,
    ):
        slow.sendall(_review_head(body))
        started = time.monotonic()
        answer = b""
        # Keep trickling well past the deadline: each byte is on time, the request is not.
        slow.settimeout(0.25)
        for i in range(min(len(body), int((IO_TIMEOUT + 6) / 0.25))):
            try:
                slow.sendall(body[i : i + 1])
                answer = slow.recv(65536)
            except TimeoutError:
                continue
            except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
                break
            break
        waited = time.monotonic() - started
        assert answer == b"" or answer.startswith(b"HTTP/1.1 408"), answer[:80]
        assert waited < IO_TIMEOUT + 5, "a byte a second must not extend the request's deadline"
        if answer:
            assert _closed_by_server(slow, 5) == b""
    _healthy(server)


def test_the_oldest_idle_connection_is_closed_when_the_cap_is_reached(tmp_path: Path) -> None:
    cap = 16
    with serving(tmp_path, "--workers", "1", "--max-connections", str(cap)) as capped:
        held: list[ssl.SSLSocket] = []
        try:
            for _ in range(cap):
                raw = socket.create_connection(("127.0.0.1", capped.port), timeout=15)
                held.append(capped.context().wrap_socket(raw, server_hostname="localhost"))
                time.sleep(0.01)  # accepted in this order
            status, _ = capped.request("POST", "/mutate", review(pod(), uid="newcomer"))
            assert status == 200
            assert _closed_by_server(held[0], 10) == b""
            conn = http.client.HTTPSConnection(
                "localhost", capped.port, context=capped.context(), timeout=10
            )
            conn.sock = held[1]  # the second oldest is still served
            assert capped.request("POST", "/mutate", review(pod()), conn=conn)[0] == 200
        finally:
            for sock in held:
                sock.close()


# --------------------------------------------------------------------------- 100-continue


def _expecting(body_length: int) -> bytes:
    return (
        b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Expect: 100-continue\r\nContent-Length: " + str(body_length).encode() + b"\r\n\r\n"
    )


def test_a_review_under_100_continue_is_told_to_go_on_and_answered(server: Server) -> None:
    body = orjson.dumps(review(pod(), uid="continued"))
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=15) as raw,
        server.context().wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        tls.sendall(_expecting(len(body)))
        assert tls.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        tls.sendall(body)
        answer = b""
        while b'"uid":"continued"' not in answer:
            chunk = tls.recv(65536)
            assert chunk, answer
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200")


def test_an_oversized_body_under_100_continue_is_answered_413_at_once(server: Server) -> None:
    """The client sends no body until it hears 100, so the 413 must not wait for one.

    Bound: one second, against the I/O timeout (2 s here, 10 s by default) that such a
    client waited before for a 408; the connection is closed after the 413, as for any
    body too large to drain.
    """
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=15) as raw,
        server.context().wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        started = time.monotonic()
        tls.sendall(_expecting(7 * 1024 * 1024))
        answer = _closed_by_server(tls, IO_TIMEOUT + 5)
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 413"), answer[:80]
    assert b"Connection: close" in answer
    assert waited < 1.0, f"the 413 took {waited:.2f} s"
    _healthy(server)


# --------------------------------------------------------------------------- closing


HEAD_SIZES = [(200_000, "200 KB"), (1_000_000, "1 MB"), (4_000_000, "4 MB"), (12_000_000, "12 MB")]


@pytest.mark.parametrize("plain", [False, True], ids=["over TLS", "on the plain port"])
@pytest.mark.parametrize(
    "size", [s for s, _ in HEAD_SIZES], ids=[f"a head of {n} gets its 431" for _, n in HEAD_SIZES]
)
def test_an_oversized_head_is_answered_431_not_reset(
    server: Server, size: int, plain: bool
) -> None:
    """The server stops reading at the head limit; closing with the rest unread made the
    kernel reset the connection, and the reset overtook the 431 (over TLS from 200 KB)."""
    head = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX: " + b"a" * size + b"\r\n\r\n"
    raw = socket.create_connection(("127.0.0.1", server.metrics_port if plain else server.port))
    sock = raw if plain else server.context().wrap_socket(raw, server_hostname="localhost")
    with sock:
        sock.settimeout(15)
        sock.sendall(head)
        answer = _closed_by_server(sock, 15)
    assert answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large"), answer[:80]
    _healthy(server)
