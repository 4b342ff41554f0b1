"""``serve`` as a real subprocess (gunicorn over TLS) watching a fake API server.

Readiness must follow the cluster caches, and once they are synced the server must keep
answering reviews promptly when the API server goes away.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakeapi import FakeApiServer, runtime_class
from tests.reviews import pod, review
from webhooks.certs import generate

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
LOOKUP_TIMEOUT = 1.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Webhook:
    """HTTPS requests to the served webhook, trusting the generated CA."""

    def __init__(self, port: int, ca: Path, log: Path) -> None:
        self.port = port
        self.context = ssl.create_default_context(cafile=str(ca))
        self.log = log

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=10)
        try:
            data = json.dumps(body).encode() if body is not None else None
            headers = {"Content-Type": "application/json"} if data else {}
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def answered(self, path: str) -> tuple[int, bytes] | None:
        """The answer to GET ``path``, or ``None`` while the server is not listening yet."""
        try:
            return self.request("GET", path)
        except (ConnectionError, ssl.SSLError, OSError):
            return None

    def wait(self, predicate: Callable[[], Any], what: str, limit: float = 30.0) -> Any:
        deadline = time.monotonic() + limit
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                log = self.log.read_text(errors="replace")[-3000:]
                pytest.fail(f"timed out waiting for: {what}\n--- server log ---\n{log}")
            time.sleep(0.1)


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    server = FakeApiServer().start()
    try:
        yield server
    finally:
        server.stop()


def test_readiness_follows_the_caches_and_reviews_survive_the_api_server(
    fake: FakeApiServer, tmp_path: Path
) -> None:
    fake.put(runtime_class("gvisor", "runsc"))
    fake.fail_lists.update({"runtimeclasses", "namespaces"})
    certs = generate(tmp_path / "certs", hosts=["127.0.0.1"])
    kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")
    config = tmp_path / "cfg.yaml"
    config.write_text(
        "cluster:\n"
        "  source: kubeconfig\n"
        f"  kubeconfig: '{kubeconfig}'\n"
        f"  lookupTimeoutSeconds: {LOOKUP_TIMEOUT}\n",
        encoding="utf-8",
    )
    port = free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # One worker, so every /readyz is answered by the same cache.
    command = [
        sys.executable,
        "-m",
        "webhooks",
        "serve",
        "--config",
        str(config),
        "--bind",
        f"127.0.0.1:{port}",
        "--cert-dir",
        str(certs.cert.parent),
        "--workers",
        "1",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        webhook = Webhook(port, certs.ca, log)
        first = webhook.wait(lambda: webhook.answered("/readyz"), "the server to listen")
        assert first[0] == 503
        webhook.wait(lambda: fake.count("list", "runtimeclasses") >= 2, "list attempts")
        status, body = webhook.request("GET", "/readyz")
        assert status == 503
        assert body.startswith(b"not ready: cluster cache not synced: runtimeclasses")

        fake.fail_lists.clear()
        webhook.wait(lambda: webhook.request("GET", "/readyz")[0] == 200, "readiness")

        pod_review = review(pod())
        status, body = webhook.request("POST", "/mutate", pod_review)
        assert status == 200
        assert json.loads(body)["response"]["uid"] == pod_review["request"]["uid"]

        fake.stop()
        started = time.monotonic()
        status, body = webhook.request("POST", "/mutate", pod_review)
        assert time.monotonic() - started < 3 * LOOKUP_TIMEOUT
        assert status == 200
        assert json.loads(body)["response"]["allowed"] is True
        assert webhook.request("GET", "/readyz")[0] == 200
        metrics = webhook.request("GET", "/metrics")[1].decode()
        assert 'placement_webhooks_cluster_cache_synced{resource="namespaces"} 1' in metrics
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
