"""Zero failed requests through lifecycle events: a client loop of thousands of reviews runs
across a certificate rotation, a config reload (SIGHUP) and a shutdown (SIGTERM).

Two replicas sit behind a small client-side balancer that behaves like a Service and the
API server: it sends only to replicas whose /readyz answers 200 (polled every 50 ms, as
endpoints follow readiness), and retries a request once on another connection when the
connection fails before any response (the API server's webhook client retries on
connection resets and EOFs).
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import os
import shutil
import signal
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.e2e.serving import Server, serving
from tests.reviews import pod, review
from webhooks.certs.pki import generate

pytestmark = pytest.mark.e2e

REQUESTS = 2400


class Balancer:
    """Round-robin over ready replicas with keep-alive connections and one retry."""

    def __init__(self, servers: list[Server], cafile: Path) -> None:
        self.servers = servers
        self.context = ssl.create_default_context(cafile=str(cafile))
        self.ready = {s.port: True for s in servers}
        self.conns: dict[int, http.client.HTTPSConnection] = {}
        self.next = 0
        self.stop = threading.Event()
        self.poller = threading.Thread(target=self._poll, daemon=True)
        self.poller.start()

    def _poll(self) -> None:
        while not self.stop.wait(0.05):
            for server in self.servers:
                try:
                    conn = http.client.HTTPSConnection(
                        "localhost", server.port, context=self.context, timeout=2
                    )
                    conn.request("GET", "/readyz")
                    self.ready[server.port] = conn.getresponse().status == 200
                    conn.close()
                except (OSError, http.client.HTTPException):
                    self.ready[server.port] = False

    def _pick(self, avoid: int | None) -> Server:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            candidates = [s for s in self.servers if self.ready[s.port] and s.port != avoid]
            if candidates:
                self.next += 1
                return candidates[self.next % len(candidates)]
            time.sleep(0.01)
        raise RuntimeError("no ready replica for 10 s")

    def post(self, body: bytes) -> tuple[int, bytes, int]:
        """POST /mutate; returns status, body and the port that answered."""
        avoid = None
        for attempt in range(2):
            server = self._pick(avoid)
            conn = self.conns.get(server.port)
            if conn is None:
                conn = http.client.HTTPSConnection(
                    "localhost", server.port, context=self.context, timeout=10
                )
                self.conns[server.port] = conn
            try:
                conn.request(
                    "POST", "/mutate", body=body, headers={"Content-Type": "application/json"}
                )
                resp = conn.getresponse()
                return resp.status, resp.read(), server.port
            except (OSError, http.client.HTTPException):
                conn.close()
                del self.conns[server.port]
                if attempt == 1:
                    raise
                avoid = server.port if len(self.servers) > 1 else None
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.stop.set()
        self.poller.join(timeout=5)
        for conn in self.conns.values():
            conn.close()


def _not_ready_seconds(body: bytes) -> int | None:
    response = orjson.loads(body)["response"]
    if "patch" not in response:
        return None
    for op in orjson.loads(base64.b64decode(response["patch"])):
        for toleration in op["value"] if isinstance(op["value"], list) else [op["value"]]:
            if toleration.get("key") == "node.kubernetes.io/not-ready":
                return int(toleration["tolerationSeconds"])
    return None


def _peer_fingerprint(port: int, cafile: Path) -> bytes:
    ctx = ssl.create_default_context(cafile=str(cafile))
    conn = http.client.HTTPSConnection("localhost", port, context=ctx, timeout=5)
    conn.connect()
    assert isinstance(conn.sock, ssl.SSLSocket)
    der = conn.sock.getpeercert(binary_form=True)
    conn.close()
    assert der is not None
    return der


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[tuple[Server, Server, Path, Path]]:
    config = tmp_path / "config.yaml"
    config.write_text("plugins:\n  default-toleration-seconds:\n    notReadySeconds: 300\n")
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        generate(d / "certs", hosts=["localhost", "127.0.0.1"])
    args = ("--config", str(config), "--shutdown-delay", "1", "--workers", "2")
    with (
        serving(dirs[0], *args, cert_dir=dirs[0] / "certs") as a,
        serving(dirs[1], *args, cert_dir=dirs[1] / "certs") as b,
    ):
        yield a, b, config, tmp_path


def test_thousands_of_reviews_see_no_failure_across_rotation_reload_and_shutdown(
    replicas: tuple[Server, Server, Path, Path],
) -> None:
    a, b, config, tmp = replicas
    rotated = tmp / "rotated"
    generate(rotated, hosts=["localhost", "127.0.0.1"])
    bundle = tmp / "bundle.crt"
    bundle.write_bytes(a.ca.read_bytes() + b.ca.read_bytes() + (rotated / "ca.crt").read_bytes())
    before = _peer_fingerprint(b.port, bundle)
    balancer = Balancer([a, b], bundle)
    failures: list[Any] = []
    seconds_from_b: list[tuple[int, int | None]] = []
    answered_by: dict[int, int] = {a.port: 0, b.port: 0}
    try:
        for i in range(REQUESTS):
            if i == 600:  # rotate B's certificate: key and certificate replaced one by one
                cert_dir = b.ca.parent
                shutil.copy(rotated / "tls.key", cert_dir / "tls.key.new")
                shutil.copy(rotated / "tls.crt", cert_dir / "tls.crt.new")
                os.replace(cert_dir / "tls.key.new", cert_dir / "tls.key")
                os.replace(cert_dir / "tls.crt.new", cert_dir / "tls.crt")
            if i == 1200:  # reload B's config
                config.write_text(
                    "plugins:\n  default-toleration-seconds:\n    notReadySeconds: 60\n"
                )
                os.kill(b.process.pid, signal.SIGHUP)
            if i == 1800:  # shut A down
                os.kill(a.process.pid, signal.SIGTERM)
            try:
                status, body, port = balancer.post(orjson.dumps(review(pod(), uid=f"r{i}")))
            except (OSError, http.client.HTTPException, RuntimeError) as exc:
                failures.append((i, repr(exc)))
                continue
            answered_by[port] += 1
            if status != 200 or orjson.loads(body)["response"]["uid"] != f"r{i}":
                failures.append((i, status, body[:200]))
            elif port == b.port:
                seconds_from_b.append((i, _not_ready_seconds(body)))
    finally:
        balancer.close()
    assert failures == [], failures[:5]
    assert answered_by[a.port] > 0 and answered_by[b.port] > 0
    # A shut down cleanly, after draining.
    assert a.process.wait(timeout=30) == 0
    # B's new connections present the rotated certificate.
    deadline = time.monotonic() + 10
    while _peer_fingerprint(b.port, bundle) == before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _peer_fingerprint(b.port, bundle) != before
    # B's reloaded workers answer with the new config.
    assert seconds_from_b[0][1] == 300
    assert seconds_from_b[-1][1] == 60


def test_a_reload_with_an_unusable_config_keeps_the_running_workers(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("plugins:\n  default-toleration-seconds:\n    notReadySeconds: 42\n")
    with serving(tmp_path, "--config", str(config)) as server:
        config.write_text("plugins:\n  default-toleration-seconds:\n    notReadySeconds: soon\n")
        os.kill(server.process.pid, signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "config reload refused" not in server.output() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "notReadySeconds: must be an integer" in server.output()
        for i in range(20):
            status, body = server.request("POST", "/mutate", review(pod(), uid=f"k{i}"))
            assert status == 200 and _not_ready_seconds(body) == 42


def test_sigterm_turns_readiness_false_before_the_server_stops(tmp_path: Path) -> None:
    with serving(tmp_path, "--shutdown-delay", "2") as server:
        os.kill(server.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 1.5
        seen_not_ready = False
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, http.client.HTTPException):
                status, body = server.request("GET", "/readyz")
                if status == 503 and b"shutting down" in body:
                    seen_not_ready = True
                    # Still serving reviews while draining.
                    assert server.request("POST", "/mutate", review(pod()))[0] == 200
                    break
            time.sleep(0.05)
        assert seen_not_ready
        assert server.process.wait(timeout=30) == 0
