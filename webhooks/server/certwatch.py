"""The serving certificate and CA of a cert directory: readiness and expiry, re-read on change.

A pair that cannot be loaded (garbage, a key of another certificate, a file over
:data:`~webhooks.certs.pki.MAX_PEM_BYTES`) is never served: the TLS context keeps the last pair
that loaded (:mod:`webhooks.server.tls`). So the watch keeps that pair's expiry as the
gauge's value, reports the problem through readiness, and logs it once per distinct bad
content (a warning on ``webhooks.server.certwatch``), not on every probe or scrape.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import threading
import time
from pathlib import Path

from webhooks.certs.pki import CertError, inspect, pair_from_pem, read_pem

log = logging.getLogger(__name__)


class CertificateWatch:
    """The serving pair and CA of a cert directory, parsed again only when a file changes.

    Why: readiness probes and metric scrapes both ask about the certificate, a mounted
    Secret can be swapped under the running server at any time, and parsing PEM on every
    probe is wasted work. A file's identity (inode, mtime, size; ``os.stat`` follows the
    ``..data`` symlinks of a Secret volume) says when to parse again.
    """

    def __init__(self, certfile: Path, keyfile: Path, cafile: Path | None = None) -> None:
        self.certfile = certfile
        self.keyfile = keyfile
        self.cafile = cafile
        self._lock = threading.Lock()
        self._stamp: tuple[object, ...] | None = None
        self._problem: str | None = None
        self._leaf_not_after: float | None = None
        self._ca_not_after: float | None = None
        self._reported: dict[str, tuple[str, bytes]] = {}

    def _identity(self) -> tuple[object, ...]:
        out: list[object] = []
        for path in (self.certfile, self.keyfile, self.cafile):
            try:
                st = os.stat(path) if path is not None else None
            except OSError:
                st = None
            out.append(None if st is None else (st.st_ino, st.st_mtime_ns, st.st_size))
        return tuple(out)

    def _refresh(self) -> None:
        stamp = self._identity()
        if stamp == self._stamp:
            return
        self._stamp = stamp
        self._problem = self._load_pair()
        if self.cafile is not None and stamp[2] is not None:
            self._load_ca(self.cafile)
        else:
            self._ca_not_after = None  # no ca.crt (any more): nothing to report

    def _load_pair(self) -> str | None:
        """Parse the pair; its problem, if any (the served expiry then stays as it was)."""
        digest = hashlib.sha256()
        try:
            cert = read_pem(self.certfile, "certificate")
            digest.update(cert)
            key = read_pem(self.keyfile, "private key")
            digest.update(b"\0" + key)
            pair = pair_from_pem(cert, key, str(self.certfile), str(self.keyfile))
        except CertError as exc:
            problem = str(exc)
        else:
            if pair.matches_key:
                self._leaf_not_after = pair.not_after.timestamp()
                self._reported.pop("pair", None)
                return None
            problem = f"{self.certfile} does not match {self.keyfile}"
        kept = _when(self._leaf_not_after)
        self._report(
            "pair",
            problem,
            digest.digest(),
            f"the server keeps serving the certificate it last loaded{kept}"
            if kept
            else "no certificate of these files has loaded in this worker",
        )
        return problem

    def _load_ca(self, cafile: Path) -> None:
        try:
            infos = inspect(cafile)
        except CertError as exc:  # the CA file is informational; the pair decides readiness
            try:
                content = hashlib.sha256(read_pem(cafile, "CA")).digest()
            except CertError:
                content = b""
            kept = _when(self._ca_not_after)
            self._report(
                "ca",
                str(exc),
                content,
                f"the CA expiry gauge keeps its last value{kept}" if kept else "no CA expiry",
            )
            return
        self._ca_not_after = min(info.not_after.timestamp() for info in infos)
        self._reported.pop("ca", None)

    def _report(self, which: str, problem: str, content: bytes, consequence: str) -> None:
        """Log ``problem`` unless this very problem with this content was logged last."""
        if self._reported.get(which) == (problem, content):
            return
        self._reported[which] = (problem, content)
        log.warning("certificate files: %s; %s", problem, consequence)

    def problem(self) -> str | None:
        """Why the served pair is unusable (unreadable, mismatched, expired), else ``None``."""
        with self._lock:
            self._refresh()
            if self._problem:
                return self._problem
            if self._leaf_not_after is not None and self._leaf_not_after <= time.time():
                expired = dt.datetime.fromtimestamp(self._leaf_not_after, dt.UTC)
                return f"{self.certfile} expired at {expired.isoformat()}"
            return None

    def leaf_seconds(self) -> float | None:
        """Seconds until the served certificate expires (negative once expired).

        Why the last pair that loaded when the files no longer do: that is the one the
        server keeps serving, and an expiry alert must keep watching it.
        """
        with self._lock:
            self._refresh()
            return None if self._leaf_not_after is None else self._leaf_not_after - time.time()

    def ca_seconds(self) -> float | None:
        """Seconds until the first certificate in ``ca.crt`` expires, if there is one (the
        last value read while the file does not parse)."""
        with self._lock:
            self._refresh()
            return None if self._ca_not_after is None else self._ca_not_after - time.time()


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return ""
    return f" (valid until {dt.datetime.fromtimestamp(timestamp, dt.UTC).isoformat()})"
