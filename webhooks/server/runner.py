"""Run the app under gunicorn: gthread workers, long keep-alive, TLS with a cached context.

Why these settings: the API server keeps pooled HTTPS connections to webhooks and idles
them for up to 90 s, so a keep-alive shorter than that (gunicorn's default is 2 s) makes it
pay a TLS handshake on most reviews; ``gthread`` workers are the gunicorn model that keeps
connections open while serving others. The SSL context is cached per worker
(:mod:`webhooks.server.tls`) because gunicorn would otherwise build one per connection.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

from webhooks.server.tls import ContextCache, TLSFiles

log = logging.getLogger("webhooks.server")


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """Everything ``serve`` decides; the defaults are those the Helm chart uses."""

    cert_dir: Path
    config_path: str | None = None
    bind: str = "127.0.0.1:8443"
    client_ca: str = ""
    workers: int = 2
    threads: int = 4
    keepalive: int = 120
    timeout: int = 30
    graceful_timeout: int = 25
    log_level: str = "info"

    @property
    def certfile(self) -> str:
        """The serving certificate path."""
        return str(self.cert_dir / "tls.crt")

    @property
    def keyfile(self) -> str:
        """The serving key path."""
        return str(self.cert_dir / "tls.key")


_CACHE: dict[TLSFiles, ContextCache] = {}


def cached_ssl_context(conf: Any, _default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    """gunicorn's ``ssl_context`` hook: the per-worker cached context for the configured files."""
    files = TLSFiles(conf.certfile, conf.keyfile, conf.ca_certs or "")
    cache = _CACHE.get(files)
    if cache is None:
        cache = _CACHE[files] = ContextCache(files)
    return cache.get()


def close_worker_state(_server: Any, worker: Any) -> None:
    """gunicorn's ``worker_exit`` hook: close the exiting worker's state.

    Why: each worker owns background threads (the cluster watches) and their connections to
    the API server; closing them says goodbye instead of leaving half-open streams behind.
    """
    from webhooks.server.app import STATE_KEY

    app = getattr(worker, "wsgi", None)
    state = getattr(app, "extensions", {}).get(STATE_KEY)
    if state is not None:
        state.close()


class WebhookServer(BaseApplication):  # type: ignore[misc]
    """A gunicorn application whose workers each build the app from ``factory``."""

    def __init__(self, options: ServeOptions, factory: Callable[[ServeOptions], Any]) -> None:
        self.options = options
        self.factory = factory
        super().__init__()

    def load_config(self) -> None:
        """Apply :class:`ServeOptions` to gunicorn's config."""
        o = self.options
        settings: dict[str, Any] = {
            "bind": [o.bind],
            "worker_class": "gthread",
            "workers": o.workers,
            "threads": o.threads,
            "keepalive": o.keepalive,
            "timeout": o.timeout,
            "graceful_timeout": o.graceful_timeout,
            "certfile": o.certfile,
            "keyfile": o.keyfile,
            "ssl_context": cached_ssl_context,
            "worker_exit": close_worker_state,
            "loglevel": o.log_level,
            "errorlog": "-",
            "accesslog": None,
            "proc_name": "placement-webhooks",
            "limit_request_line": 8190,
            "worker_tmp_dir": "/dev/shm" if Path("/dev/shm").is_dir() else None,
        }
        if o.client_ca:
            settings["ca_certs"] = o.client_ca
            settings["cert_reqs"] = ssl.CERT_REQUIRED
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        """Build the WSGI app inside the worker (after fork), so threads start per worker."""
        return self.factory(self.options)
