"""Server TLS contexts, built once and rebuilt only when the certificate files change.

Why: the worker needs a context for every accepted connection, and building one parses the
key and chain. Caching it removes that cost, and checking the files' identity lets a
rotated Secret take effect for new connections without a restart, while established
connections keep the context they started with.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from webhooks.certs.pki import CertError, read_pem

#: Modern AEAD suites for TLS 1.2; TLS 1.3 suites are fixed by OpenSSL and all modern.
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"


def _identity(path: str) -> tuple[int, int, int]:
    st = os.stat(path)
    return (st.st_ino, st.st_mtime_ns, st.st_size)


@dataclass(frozen=True, slots=True)
class TLSFiles:
    """Paths of the serving pair and, optionally, the CA that client certificates must chain to."""

    certfile: str
    keyfile: str
    client_ca: str = ""


#: What a pair or CA that cannot be loaded raises: the files' own refusal (not a regular
#: file, over MAX_PEM_BYTES), the system's, OpenSSL's, or PEM text that is not ASCII.
LOAD_ERRORS = (CertError, OSError, ssl.SSLError, ValueError)


def build_context(files: TLSFiles) -> ssl.SSLContext:
    """A server context: TLS 1.2 minimum, modern ciphers, optional client-certificate check.

    Why the files are read here and handed to OpenSSL from memory: OpenSSL opens a path it
    is given and reads it to the end, so a FIFO in ``tls.crt``'s place would block the
    worker's loop (which rebuilds the context between connections) and a link to
    ``/dev/zero`` would read without end. Read by :func:`~webhooks.certs.pki.read_pem`, only a
    regular file of at most ``MAX_PEM_BYTES`` reaches OpenSSL. Raises one of
    :data:`LOAD_ERRORS`.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)
    context.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE
    cert = read_pem(Path(files.certfile), "certificate")
    key = read_pem(Path(files.keyfile), "private key")
    with _in_memory(cert, files.certfile) as certfile, _in_memory(key, files.keyfile) as keyfile:
        context.load_cert_chain(certfile, keyfile)
    if files.client_ca:
        # OPTIONAL, not REQUIRED: kubelet probes cannot present a certificate, so the
        # handshake verifies any certificate offered and the app refuses admission calls
        # that offered none (health endpoints stay reachable).
        ca = read_pem(Path(files.client_ca), "client CA")
        context.load_verify_locations(cadata=ca.decode("ascii"))
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


@contextlib.contextmanager
def _in_memory(data: bytes, path: str) -> Iterator[str]:
    """A path OpenSSL can open that holds exactly ``data``: an anonymous in-memory file.

    Why: what was read and checked is what is loaded, even if the file on disk is replaced
    in between. Where the system has no ``memfd_create``, the checked path itself.
    """
    create = getattr(os, "memfd_create", None)
    if create is None:  # pragma: no cover - Linux has it
        yield path
        return
    fd = create("placement-webhooks-tls", getattr(os, "MFD_CLOEXEC", 0))
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


class ContextCache:
    """Hands out the cached context; re-stats the files at most every ``interval`` seconds.

    A rebuild that fails (for example a Secret caught half-way through an update) keeps the
    previous context and tries again on the next interval, so rotation never drops service.
    """

    def __init__(self, files: TLSFiles, interval: float = 1.0) -> None:
        self.files = files
        self.interval = interval
        self._lock = threading.Lock()
        self._checked = 0.0
        self._stamp = self._stamp_now()
        self.context = build_context(files)
        self.builds = 1

    def _stamp_now(self) -> tuple[tuple[int, int, int], ...]:
        paths = [self.files.certfile, self.files.keyfile]
        if self.files.client_ca:
            paths.append(self.files.client_ca)
        return tuple(_identity(p) for p in paths)

    def get(self) -> ssl.SSLContext:
        """The current context, rebuilt first if the files changed since the last check."""
        now = time.monotonic()
        if now - self._checked < self.interval:
            return self.context
        with self._lock:
            if now - self._checked < self.interval:
                return self.context
            self._checked = now
            try:
                stamp = self._stamp_now()
                if stamp != self._stamp:
                    self.context = build_context(self.files)
                    self._stamp = stamp
                    self.builds += 1
            except LOAD_ERRORS:
                pass
        return self.context
