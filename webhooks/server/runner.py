"""Run the app under gunicorn: gthread workers, long keep-alive, TLS with a cached context.

Why these settings: the API server keeps pooled HTTPS connections to webhooks and idles
them for up to 90 s, so a keep-alive shorter than that (gunicorn's default is 2 s) makes it
pay a TLS handshake on most reviews; ``gthread`` workers are the gunicorn model that keeps
connections open while serving others. The SSL context is cached per worker
(:mod:`webhooks.server.tls`) because gunicorn would otherwise build one per connection.
"""

from __future__ import annotations

import gc
import logging
import shutil
import ssl
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter

from webhooks.server import tls
from webhooks.server.tls import ContextCache, TLSFiles

log = logging.getLogger("webhooks.server")


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """Everything ``serve`` decides; the defaults are those the Helm chart uses."""

    cert_dir: Path
    config_path: str | None = None
    #: The parsed config, read and checked by the master; workers inherit it when forked,
    #: so a worker started after a bad edit of the file still serves the last good config.
    config: Any = None
    bind: str = "127.0.0.1:8443"
    client_ca: str = ""
    workers: int = 2
    threads: int = 4
    keepalive: int = 120
    timeout: int = 30
    graceful_timeout: int = 25
    log_level: str = "info"
    shutdown_delay: float = 5.0
    runtime_dir: Path | None = None
    log_reviews: bool = True
    io_timeout: float = 10.0

    @property
    def drain_marker(self) -> Path | None:
        """Created by the master on SIGTERM; workers then report not-ready."""
        return self.runtime_dir / "draining" if self.runtime_dir else None

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


def prime_ssl_context(files: TLSFiles) -> None:
    """Build the cached context in the master, before any worker forks.

    Why: a worker inherits it, so even its first connection has a known-good context to
    fall back on when the Secret is caught half-way through an update; and a pair that
    cannot be used at all stops start-up with a clear message instead of failing every
    handshake. Raises ``RuntimeError`` naming the files.
    """
    if files in _CACHE:
        return
    try:
        _CACHE[files] = ContextCache(files)
    except (OSError, ssl.SSLError) as exc:
        raise RuntimeError(
            f"cannot serve TLS with {files.certfile} and {files.keyfile}: {exc}"
        ) from None


#: Called in a worker as it exits (after its last request); set by the app factory.
ON_WORKER_EXIT: list[Callable[[], None]] = []


def _worker_exit(_server: Any, _worker: Any) -> None:
    for callback in ON_WORKER_EXIT:
        callback()


class DrainingArbiter(Arbiter):  # type: ignore[misc]
    """gunicorn's master, with a shutdown that drains and a reload that checks first.

    SIGTERM: create the drain marker (every worker's /readyz turns 503 at once), keep
    serving for ``shutdown_delay`` seconds so endpoints and the API server stop sending
    here, then stop gracefully (in-flight requests finish). SIGHUP: validate the config
    file first, and keep the running workers when it is unusable, because new workers
    that fail to boot would take the whole server down.
    """

    def handle_term(self) -> None:
        """Drain, then stop."""
        options: ServeOptions = self.app.options
        if options.drain_marker is not None:
            options.drain_marker.touch()
        self.log.info("SIGTERM: not ready now, stopping in %.1fs", options.shutdown_delay)
        time.sleep(options.shutdown_delay)
        raise StopIteration

    def handle_hup(self) -> None:
        """Reload workers only with a usable config."""
        options: ServeOptions = self.app.options
        if options.config_path is not None:
            from webhooks.cluster.api import ClusterError, check_source
            from webhooks.configfile import read_config
            from webhooks.core.config import ConfigError

            try:
                config = read_config(options.config_path)
                check_source(config.cluster)
            except ConfigError as exc:
                self.log.error("SIGHUP: config reload refused, keeping workers: %s", exc)
                return
            except ClusterError as exc:
                self.log.error("SIGHUP: config reload refused, keeping workers: cluster: %s", exc)
                return
            self.app.options = replace(options, config=config)
        super().handle_hup()


class WebhookServer(BaseApplication):  # type: ignore[misc]
    """A gunicorn application whose workers each build the app from ``factory``."""

    def __init__(self, options: ServeOptions, factory: Callable[[ServeOptions], Any]) -> None:
        self._own_runtime_dir = options.runtime_dir is None
        if options.runtime_dir is None:
            # Shared by the workers (metrics snapshots, the drain marker); an emptyDir or
            # tmpfs in a cluster, so a read-only root filesystem is fine.
            options = replace(options, runtime_dir=Path(tempfile.mkdtemp(prefix="pw-")))
        elif options.drain_marker is not None:
            options.drain_marker.unlink(missing_ok=True)
        if options.config is None:
            from webhooks.configfile import read_config

            options = replace(options, config=read_config(options.config_path))
        self.options = options
        self.factory = factory
        super().__init__()

    def run(self) -> None:
        """Run the draining master in the foreground until it stops."""
        try:
            prime_ssl_context(
                TLSFiles(self.cfg.certfile, self.cfg.keyfile, self.cfg.ca_certs or "")
            )
            DrainingArbiter(self).run()
        except RuntimeError as exc:
            print(f"placement-webhooks: {exc}", file=sys.stderr)
            sys.exit(1)
        finally:
            if self._own_runtime_dir and self.options.runtime_dir is not None:
                shutil.rmtree(self.options.runtime_dir, ignore_errors=True)

    def load_config(self) -> None:
        """Apply :class:`ServeOptions` to gunicorn's config."""
        o = self.options
        settings: dict[str, Any] = {
            "bind": [o.bind],
            "worker_class": "webhooks.server.worker.Worker",
            "workers": o.workers,
            "threads": o.threads,
            "keepalive": o.keepalive,
            "timeout": o.timeout,
            "graceful_timeout": o.graceful_timeout,
            "worker_exit": _worker_exit,
            "certfile": o.certfile,
            "keyfile": o.keyfile,
            "ssl_context": cached_ssl_context,
            "loglevel": o.log_level,
            "errorlog": "-",
            "accesslog": None,
            "proc_name": "placement-webhooks",
            "limit_request_line": 8190,
            "worker_tmp_dir": "/dev/shm" if Path("/dev/shm").is_dir() else None,
        }
        if "control_socket_disable" in self.cfg.settings:
            # Newer gunicorn opens a control socket under $HOME, which a read-only root
            # filesystem forbids and nothing here uses.
            settings["control_socket_disable"] = True
        if o.client_ca:
            settings["ca_certs"] = o.client_ca
            settings["cert_reqs"] = ssl.CERT_REQUIRED
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        """Build the WSGI app inside the worker (after fork), so threads start per worker."""
        tls.IO_TIMEOUT = self.options.io_timeout
        app = self.factory(self.options)
        # Everything built so far (modules, the app, caches) lives as long as the worker.
        # Freezing it keeps the cyclic garbage collector from re-scanning it on every full
        # collection, which large reviews trigger often: measured in bench/http_bench.py.
        gc.freeze()
        return app
