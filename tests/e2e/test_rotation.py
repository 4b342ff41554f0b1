"""Certificate rotation under a running server, the way a mounted Secret rotates.

The kubelet updates a Secret volume atomically: it writes the new files into a fresh
``..<timestamp>`` directory, points ``..data`` at it with a rename of a symlink, and removes
the old directory; ``tls.crt`` and ``tls.key`` are symlinks through ``..data``. These tests do
exactly that under ``python -m webhooks serve`` while clients keep sending reviews.
"""

from __future__ import annotations

import hashlib
import http.client
import shutil
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest

from tests.certfiles import SecretVolume
from tests.command import run_cli
from tests.e2e.serving import Server, serving
from tests.reviews import pod, review
from webhooks.certs import pki

pytestmark = pytest.mark.e2e

#: Bounds of every client loop: requests per loop and seconds overall.
MAX_REQUESTS = 3000
DEADLINE = 40.0
#: The server re-checks its files at most once a second per worker; new connections must
#: show the new certificate well within this after the swap.
SETTLE = 2.5


def _fingerprint(der: bytes | None) -> str:
    assert der is not None
    return hashlib.sha256(der).hexdigest()


def _leaf_fingerprint(chain: pki.CertPaths) -> str:
    return pki.inspect(chain.cert)[0].fingerprint_sha256


@dataclass
class Tally:
    """What a client loop saw."""

    ok: int = 0
    failures: list[str] = field(default_factory=list)
    #: (monotonic start time, leaf fingerprint) for every new connection.
    handshakes: list[tuple[float, str]] = field(default_factory=list)
    after_swap: int = 0


def _context(*cas: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    for ca in cas:
        ctx.load_verify_locations(str(ca))
    return ctx


def _post(conn: http.client.HTTPSConnection, uid: str) -> int:
    conn.request(
        "POST",
        "/mutate",
        body=orjson.dumps(review(pod(), uid=uid)),
        headers={"Content-Type": "application/json"},
    )
    response = conn.getresponse()
    body = response.read()
    if response.status == 200 and orjson.loads(body)["response"]["uid"] != uid:
        return -1
    return response.status


def _new_connections(
    port: int, ctx: ssl.SSLContext, tally: Tally, stop: threading.Event, swapped: threading.Event
) -> None:
    end = time.monotonic() + DEADLINE
    for i in range(MAX_REQUESTS):
        if stop.is_set() or time.monotonic() > end:
            return
        started = time.monotonic()
        conn = http.client.HTTPSConnection("localhost", port, context=ctx, timeout=10)
        try:
            conn.connect()
            assert isinstance(conn.sock, ssl.SSLSocket)
            tally.handshakes.append(
                (started, _fingerprint(conn.sock.getpeercert(binary_form=True)))
            )
            status = _post(conn, f"new-{i}")
            if status == 200:
                tally.ok += 1
                tally.after_swap += swapped.is_set()
            else:
                tally.failures.append(f"new connection {i}: HTTP {status}")
        except (OSError, http.client.HTTPException) as exc:
            tally.failures.append(f"new connection {i}: {exc!r}")
        finally:
            conn.close()


def _keep_alive(
    port: int, ctx: ssl.SSLContext, tally: Tally, stop: threading.Event, swapped: threading.Event
) -> None:
    end = time.monotonic() + DEADLINE
    conn = http.client.HTTPSConnection("localhost", port, context=ctx, timeout=10)
    try:
        for i in range(MAX_REQUESTS):
            if stop.is_set() or time.monotonic() > end:
                return
            try:
                status = _post(conn, f"kept-{i}")
            except (OSError, http.client.HTTPException) as exc:
                tally.failures.append(f"keep-alive request {i}: {exc!r}")
                conn.close()
                continue
            if status == 200:
                tally.ok += 1
                tally.after_swap += swapped.is_set()
            else:
                tally.failures.append(f"keep-alive request {i}: HTTP {status}")
            time.sleep(0.005)
    finally:
        conn.close()


def _wait(predicate: object, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if callable(predicate) and predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def chains(tmp_path: Path) -> tuple[pki.CertPaths, pki.CertPaths]:
    old = pki.generate(tmp_path / "old", hosts=pki.DEV_HOSTS, days=365)
    new = pki.generate(tmp_path / "new", hosts=pki.DEV_HOSTS, days=30)
    return old, new


@pytest.fixture
def secret(tmp_path: Path, chains: tuple[pki.CertPaths, pki.CertPaths]) -> Iterator[SecretVolume]:
    volume = SecretVolume(tmp_path / "secret")
    volume.publish(chains[0].ca.parent)
    yield volume


def _metric(server: Server, name: str) -> float:
    status, body = server.request("GET", "/metrics")
    assert status == 200
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def test_a_rotated_secret_is_served_to_new_connections_without_a_failed_request(
    tmp_path: Path, chains: tuple[pki.CertPaths, pki.CertPaths], secret: SecretVolume
) -> None:
    old, new = chains
    old_leaf, new_leaf = _leaf_fingerprint(old), _leaf_fingerprint(new)
    ctx = _context(old.ca, new.ca)
    fresh, kept = Tally(), Tally()
    stop, swapped = threading.Event(), threading.Event()
    with serving(tmp_path, cert_dir=secret.root) as server:
        server.context = lambda: ctx  # type: ignore[method-assign]  # trust both CAs
        assert server.request("GET", "/readyz")[0] == 200
        assert _metric(server, "placement_webhooks_certificate_expiry_seconds") > 300 * 86400
        threads = [
            threading.Thread(
                target=_new_connections, args=(server.port, ctx, fresh, stop, swapped)
            ),
            threading.Thread(target=_keep_alive, args=(server.port, ctx, kept, stop, swapped)),
        ]
        for thread in threads:
            thread.start()
        try:
            assert _wait(lambda: fresh.ok >= 20 and kept.ok >= 20, 20), "clients did not get going"
            swapped_at = time.monotonic()
            secret.publish(new.ca.parent)
            swapped.set()
            assert _wait(
                lambda: (
                    sum(1 for t, _ in fresh.handshakes if t > swapped_at + SETTLE) >= 30
                    and kept.after_swap >= 30
                ),
                25,
            ), "too few requests after the swap"
        finally:
            stop.set()
            for thread in threads:
                thread.join(15)
        assert not any(thread.is_alive() for thread in threads)
        assert server.request("GET", "/readyz")[0] == 200
        assert _metric(server, "placement_webhooks_certificate_expiry_seconds") < 31 * 86400

    assert fresh.failures == [] and kept.failures == []
    before = [fp for t, fp in fresh.handshakes if t < swapped_at]
    settled = [fp for t, fp in fresh.handshakes if t > swapped_at + SETTLE]
    assert before and set(before) == {old_leaf}
    assert settled and set(settled) == {new_leaf}
    assert kept.after_swap >= 30  # the kept connection went on being served across the swap


def test_a_half_written_secret_keeps_the_old_certificate_and_fails_readiness(
    tmp_path: Path, chains: tuple[pki.CertPaths, pki.CertPaths], secret: SecretVolume
) -> None:
    old, new = chains
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(new.ca, mixed / "ca.crt")
    shutil.copy(new.cert, mixed / "tls.crt")
    shutil.copy(old.key, mixed / "tls.key")  # the key of the other certificate
    ctx = _context(old.ca, new.ca)
    with serving(tmp_path, cert_dir=secret.root) as server:
        server.context = lambda: ctx  # type: ignore[method-assign]  # trust both CAs
        secret.publish(mixed)
        assert _wait(lambda: server.request("GET", "/readyz")[0] == 503, 10)
        _, body = server.request("GET", "/readyz")
        assert b"does not match" in body
        time.sleep(
            1.5
        )  # past the re-check interval: the server tried the new pair and kept the old
        with (
            socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw,
            ctx.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            assert _fingerprint(tls.getpeercert(binary_form=True)) == _leaf_fingerprint(old)
        assert server.request("POST", "/mutate", review(pod()))[0] == 200

        secret.publish(new.ca.parent)
        assert _wait(lambda: server.request("GET", "/readyz")[0] == 200, 10)


def test_a_pair_that_cannot_serve_stops_start_up_with_the_files_named(
    tmp_path: Path, chains: tuple[pki.CertPaths, pki.CertPaths]
) -> None:
    old, new = chains
    broken = tmp_path / "broken"
    broken.mkdir()
    shutil.copy(new.cert, broken / "tls.crt")
    shutil.copy(old.key, broken / "tls.key")
    run = run_cli("serve", "--cert-dir", str(broken), "--bind", "127.0.0.1:0", cwd=tmp_path)
    assert run.returncode == 1
    assert f"cannot serve TLS with {broken / 'tls.crt'} and {broken / 'tls.key'}" in run.stderr
