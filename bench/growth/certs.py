"""Growth surfaces of the certificates: the sidecar reading its Secret, the certificate watch
re-reading the cert directory, and the probe reading a webhook's answer.

Why these: each reads input it does not control (a Secret anyone with write access to it
filled, files a volume swapped in, an answer from whatever listens at the webhook's
address), so each must cost time linear in what it reads, and stop reading at its bound
(:data:`webhooks.certs.rotation.MAX_BUNDLE_CERTS`, :data:`webhooks.certs.pki.MAX_PEM_BYTES`,
:data:`webhooks.install.probe.ANSWER_LIMIT`): past a bound, doubling the input changes nothing.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import json
import logging
import socket
import ssl
import tempfile
import threading
from pathlib import Path
from typing import Any

from bench.growth.measure import Surface, in_process
from webhooks.certs import pki
from webhooks.certs.managed import from_secret, to_secret
from webhooks.certs.rotation import Material, Policy, plan
from webhooks.install.probe import Target, round_trip
from webhooks.server.certwatch import CertificateWatch

NOW = dt.datetime(2027, 1, 1, tzinfo=dt.UTC)
POLICY = Policy(hosts=tuple(pki.service_hosts("pw", "placement")))
MIB = 1024 * 1024

# The watch logs each unreadable file once per content; every sample here is a new one.
logging.getLogger("webhooks.server.certwatch").setLevel(logging.ERROR)


@functools.cache
def _workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="growth-certs-"))


@functools.cache
def _healthy() -> dict[str, str]:
    material, _ = plan(Material(), POLICY, NOW, published=False)
    return to_secret(material)


@functools.cache
def _cas(count: int) -> tuple[bytes, ...]:
    """``count`` distinct CA certificates (made once: they cost a key each)."""
    return tuple(pki.new_ca(f"CA {i}", days=3650, now=NOW).cert for i in range(count))


def _secret_with_bundle(n: int) -> dict[str, str]:
    """The healthy Secret with ``n - 1`` more CAs bundled after its own."""
    data = dict(_healthy())
    bundle = base64.b64decode(data["ca.crt"]) + b"".join(_cas(n - 1))
    data["ca.crt"] = base64.b64encode(bundle).decode()
    return data


def _secret_with_openers(n: int) -> dict[str, str]:
    """The healthy Secret whose ca.crt is ``n`` bytes of certificate openers with no end."""
    data = dict(_healthy())
    opener = b"-----BEGIN CERTIFICATE-----\n"
    data["ca.crt"] = base64.b64encode((opener * (n // len(opener) + 1))[:n]).decode()
    return data


def _manage(data: dict[str, str]) -> object:
    return plan(from_secret(data), POLICY, NOW, published=True)


def _cert_dir(n: int, name: str) -> Path:
    """A cert directory whose file ``name`` holds ``n`` bytes of certificates (whole ones
    while they fit, then blank lines), the others a good pair."""
    directory = _workdir() / f"{name}-{n}"
    if not directory.exists():
        pki.generate(directory, hosts=["localhost"])
        first = (directory / name).read_bytes()
        pool = b"".join(_cas(256))
        data = first + (pool * (n // len(pool) + 1))[: max(0, n - len(first))]
        cut = data.rfind(b"-----END CERTIFICATE-----\n", 0, n) + len(b"-----END CERTIFICATE-----\n")
        (directory / name).write_bytes(data[:cut].ljust(n, b"\n"))
    return directory


def _watch(directory: Path) -> CertificateWatch:
    """A watch that has not read ``directory`` yet: its first question reads every file."""
    return CertificateWatch(directory / "tls.crt", directory / "tls.key", directory / "ca.crt")


def _reload(watch: CertificateWatch) -> object:
    return watch.problem(), watch.leaf_seconds(), watch.ca_seconds()


class _Answering:
    """A local TLS server answering every review with an allowed review of ``size`` bytes
    (padded with blanks), or with ``endless`` bytes of blanks that are no review at all.

    The blanks are made when the size is set, outside the measured window, so what is
    measured is the probe reading them, not the server making them.
    """

    def __init__(self) -> None:
        chain = pki.generate(_workdir() / "server", hosts=["localhost"])
        self.ca = chain.ca.read_bytes()
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(chain.cert, chain.key)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.size = 0
        self.blanks = b""
        self.endless = False
        threading.Thread(target=self._serve, name="growth-probe-server", daemon=True).start()

    def set(self, size: int, *, endless: bool) -> None:
        self.size, self.endless, self.blanks = size, endless, b" " * size

    def _serve(self) -> None:
        while True:
            conn, _ = self.listener.accept()
            try:
                with self.context.wrap_socket(conn, server_side=True) as tls:
                    request = _request(tls)
                    if self.endless:
                        tls.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
                        tls.sendall(self.blanks)
                        continue
                    review = json.dumps(_allowed(request)).encode()
                    padding = memoryview(self.blanks)[: max(0, self.size - len(review))]
                    length = len(review) + len(padding)
                    tls.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n".encode())
                    tls.sendall(review)
                    tls.sendall(padding)
            except OSError:
                pass  # the probe stopped reading: its bound


def _allowed(request: bytes) -> dict[str, Any]:
    uid = json.loads(request.partition(b"\r\n\r\n")[2])["request"]["uid"]
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": uid, "allowed": True},
    }


def _request(tls: ssl.SSLSocket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        data += tls.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.partition(b":")[2])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += tls.recv(65536)
    return head + b"\r\n\r\n" + body


@functools.cache
def _server() -> _Answering:
    return _Answering()


def _answer_of(n: int) -> Target:
    server = _server()
    server.set(n, endless=False)
    return Target(f"https://localhost:{server.port}/validate", server.ca, ("v",))


def _endless(n: int) -> Target:
    server = _server()
    server.set(n, endless=True)
    return Target(f"https://localhost:{server.port}/validate", server.ca, ("v",))


def _probe(target: Target) -> Any:
    return round_trip(target, "default", timeout=30.0)


SURFACES = [
    Surface(
        "certs manage: a Secret whose ca.crt bundles N CAs (read, then planned)",
        "certificates",
        400,
        in_process(_secret_with_bundle, _manage),
    ),
    Surface(
        "certs manage: a Secret whose ca.crt is N bytes of openers without an end",
        "bytes",
        256 * 1024,
        in_process(_secret_with_openers, _manage),
    ),
    Surface(
        "certwatch: a reload of a ca.crt of N bytes (below MAX_PEM_BYTES)",
        "bytes",
        256 * 1024,
        in_process(lambda n: _watch(_cert_dir(n, "ca.crt")), _reload),
    ),
    Surface(
        "certwatch: a reload of a tls.crt of N bytes (past MAX_PEM_BYTES)",
        "bytes",
        2 * MIB,
        in_process(lambda n: _watch(_cert_dir(n, "tls.crt")), _reload),
    ),
    Surface(
        "probe: an answer of N bytes from a local server (below ANSWER_LIMIT)",
        "bytes",
        MIB,
        in_process(_answer_of, _probe),
    ),
    Surface(
        "probe: an endless answer, N bytes sent (past ANSWER_LIMIT)",
        "bytes",
        8 * MIB,
        in_process(_endless, _probe),
    ),
]
