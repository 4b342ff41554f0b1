"""The serving certificate and CA of a cert directory: readiness and expiry, re-read on change."""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from pathlib import Path

from webhooks.certs import CertError, inspect, load_pair


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
        self._problem = None
        self._leaf_not_after = None
        try:
            pair = load_pair(self.certfile, self.keyfile)
        except CertError as exc:
            self._problem = str(exc)
        else:
            self._leaf_not_after = pair.not_after.timestamp()
            if not pair.matches_key:
                self._problem = f"{self.certfile} does not match {self.keyfile}"
        self._ca_not_after = None
        if self.cafile is not None and stamp[2] is not None:
            try:
                infos = inspect(self.cafile)
            except CertError:
                pass  # the CA file is informational; the pair decides readiness
            else:
                self._ca_not_after = min(info.not_after.timestamp() for info in infos)

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
        """Seconds until the serving certificate expires (negative once expired)."""
        with self._lock:
            self._refresh()
            return None if self._leaf_not_after is None else self._leaf_not_after - time.time()

    def ca_seconds(self) -> float | None:
        """Seconds until the first certificate in ``ca.crt`` expires, if there is one."""
        with self._lock:
            self._refresh()
            return None if self._ca_not_after is None else self._ca_not_after - time.time()
