"""Run the app under gunicorn: the poller worker, long keep-alive, TLS, a plain metrics port.

Why these settings: the API server keeps pooled HTTPS connections to webhooks and idles
them for up to 90 s, so a keep-alive shorter than that (gunicorn's default is 2 s) makes it
pay a TLS handshake on most reviews. gunicorn stays the process manager (workers, reloads,
signals); each worker is :class:`webhooks.server.worker.Worker`, whose poller does all the
waiting on clients. The TLS context is built once in the master and rebuilt when the
certificate files change (:mod:`webhooks.server.tls`).
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gunicorn import util
from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter

from webhooks import collector
from webhooks.server.budget import HEAD_TIMEOUT, MAX_PLAIN_CONNECTIONS
from webhooks.server.logformat import JSON_LOGGER, LogFormat, configure
from webhooks.server.metrics import MULTIPROC_ENV, ReloadCounter, mark_worker_dead
from webhooks.server.reloadcheck import Refused, describe, run_checked
from webhooks.server.tls import LOAD_ERRORS, ContextCache, TLSFiles
from webhooks.server.unavailable import start_lines

if TYPE_CHECKING:
    from webhooks.k8s.releases import ServerRelease

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
    #: ``text`` (gunicorn's lines and a JSON line per review) or ``json`` (every line a
    #: JSON object): :mod:`webhooks.server.logformat`.
    log_format: LogFormat = "text"
    #: Where spans are sent over OTLP/HTTP (``""``: no tracing): :mod:`webhooks.server.tracing`.
    otlp_endpoint: str = ""
    io_timeout: float = 10.0
    #: HOST:PORT of the plain-HTTP listener for /metrics, /healthz and /readyz; "" for none.
    metrics_bind: str = ""
    #: Admission (TLS) connections per worker; at the cap one that has not finished its head
    #: in time, or the longest idle, or a late body, is closed for a newcomer
    #: (:mod:`webhooks.server.budget`).
    max_connections: int = 1000
    #: The plain (metrics) port's connections per worker: a budget of its own, so that port
    #: can never take an admission slot.
    max_metrics_connections: int = MAX_PLAIN_CONNECTIONS
    #: Seconds a connection has to finish its head, and then its body, before it is among
    #: the first closed for room.
    head_timeout: float = HEAD_TIMEOUT
    #: A hybrid installation (``serve --native``): the (plugin, phase) halves of a config
    #: that ``/mutate`` and ``/validate`` run, the rest being native admission policies.
    #: A function of the config, not a set, so a config reloaded on SIGHUP is narrowed
    #: the same way; ``None``: every enabled half.
    kept: Callable[[Any], frozenset[tuple[str, str]]] | None = None
    #: The release the cluster's API server runs, read once at start-up (``None``: no
    #: cluster source); settings it does not serve are said, never refused.
    server_release: ServerRelease | None = None

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


def _nothing() -> None:
    """Nothing to stop."""


@dataclass(frozen=True, slots=True)
class Built:
    """What a factory builds in each worker: the WSGI app, and what stops it at worker exit."""

    app: Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
    close: Callable[[], None] = field(default=_nothing)


Factory = Callable[[ServeOptions], Built]


def prime_context(files: TLSFiles) -> ContextCache:
    """Build the TLS context cache in the master, before any worker forks.

    Why: a worker inherits it, so even its first connection has a known-good context to
    fall back on when the Secret is caught half-way through an update; and a pair that
    cannot be used at all stops start-up with a clear message instead of failing every
    handshake. Raises ``RuntimeError`` naming the files.
    """
    try:
        return ContextCache(files)
    except LOAD_ERRORS as exc:
        raise RuntimeError(
            f"cannot serve TLS with {files.certfile} and {files.keyfile}: {exc}"
        ) from None


def _child_exit(_arbiter: Any, worker: Any) -> None:
    mark_worker_dead(worker.pid)


def _pre_fork(_arbiter: Any, worker: Any) -> None:
    # The worker's heartbeat file as it is before the worker runs: the worker touches it
    # from its first turn of serving on (see DrainingArbiter.manage_workers).
    worker.unborn_stamp = worker.tmp.last_update()


def _serving(worker: Any) -> bool:
    """Whether a worker has begun serving: touched its heartbeat file since it was forked."""
    try:
        return bool(worker.tmp.last_update() != worker.unborn_stamp)
    except (AttributeError, OSError, ValueError):
        return False


def config_for_reload(path: str) -> Any:
    """Read and check the config file at ``path`` as a reload must before applying it.

    Why a function of its own: it is what :func:`~webhooks.server.reloadcheck.run_checked`
    runs in the checking child, and the growth bench measures it. Raises
    :class:`~webhooks.server.reloadcheck.Refused` with the reason for a config the
    server cannot use (a bad key, a cluster source that cannot be configured); anything
    else it raises is a failure of reading the file, refused the same way by the caller.
    """
    from webhooks.cluster.api import ClusterError, check_source
    from webhooks.configfile import read_config
    from webhooks.core.config import ConfigError

    try:
        config = read_config(path)
        check_source(config.cluster)
    except ConfigError as exc:
        raise Refused(str(exc)) from None
    except ClusterError as exc:
        raise Refused(f"cluster: {exc}") from None
    return config


class DrainingArbiter(Arbiter):  # type: ignore[misc]
    """gunicorn's master, with a shutdown that drains and a reload that checks first.

    SIGTERM: create the drain marker (every worker's /readyz turns 503 at once), keep
    serving for ``shutdown_delay`` seconds so endpoints and the API server stop sending
    here, then stop gracefully (in-flight requests finish). SIGHUP: read and check the
    config file in a child process first (:mod:`webhooks.server.reloadcheck`) and keep the
    running workers when it is unusable, for any reason, because new workers that fail to
    boot would take the whole server down; then start the new workers and stop the old
    ones only once the new ones serve, so some worker is accepting at every moment.
    """

    #: True while gunicorn's reload runs (between starting new workers and stopping the old).
    reloading = False

    def start(self) -> None:
        """Start as gunicorn does, then say which listener speaks what.

        Why: gunicorn lists every address as ``http://``, since this worker, not gunicorn,
        does the TLS; an operator reading the log should not be misled.
        """
        super().start()
        self.reloads = ReloadCounter()
        options: ServeOptions = self.app.options
        plain = f"; /metrics, /healthz, /readyz over HTTP at {options.metrics_bind}"
        self.log.info(
            "admission over HTTPS at %s%s",
            options.bind,
            plain if options.metrics_bind else "",
        )
        self._say_release(options)

    def _say_release(self, options: ServeOptions) -> None:
        """Log the cluster's release and, one line each, the settings it does not serve.

        Why the master: it is one process, so each line is written once per start or
        reload, not once per worker.
        """
        for level, line in start_lines(options.config, options.server_release):
            getattr(self.log, level)("%s", line)

    def handle_term(self) -> None:
        """Drain, then stop."""
        options: ServeOptions = self.app.options
        if options.drain_marker is not None:
            options.drain_marker.touch()
        self.log.info("SIGTERM: not ready now, stopping in %.1fs", options.shutdown_delay)
        time.sleep(options.shutdown_delay)
        raise StopIteration

    def handle_hup(self) -> None:
        """Reload workers only with a usable config; refuse, and keep serving, otherwise.

        Why the broad catch: the reason a file cannot be used is whatever the reader or
        the check machinery raised, and none of it may end the master, which holds both
        listeners. One log line names the file and a bounded excerpt of why.
        """
        options: ServeOptions = self.app.options
        path = options.config_path
        if path is not None:
            try:
                config = run_checked(lambda: config_for_reload(path))
            except Exception as exc:  # any failure refuses the reload; the master lives on
                # A refusal's reason was bounded where it was made (the child's describe);
                # the path is the operator's, not the file's, and is shown whole.
                reason = str(exc) if isinstance(exc, Refused) else describe(exc)
                if not reason.startswith(path):
                    reason = f"{path}: {reason}"
                self.log.error(
                    "SIGHUP: config reload refused, keeping the running workers: %s", reason
                )
                self.reloads.count("refused")
                return
            self.app.options = replace(options, config=config)
            self.log.info("SIGHUP: %s read and checked; starting new workers with it", path)
            self._say_release(self.app.options)
        self.reloads.count("applied")
        self.reloading = True
        try:
            super().handle_hup()
        finally:
            self.reloading = False

    def manage_workers(self) -> None:
        """Keep the number of workers; in a reload, stop the old ones once the new ones serve.

        Why wait: gunicorn starts the new workers and stops the old ones at once, so until
        the new ones have loaded the app no worker accepts, and new connections wait in
        the listen queue (a few hundred milliseconds, longer on a loaded node). Waiting
        for each new worker's first heartbeat, at most the worker ``timeout``, leaves the
        old workers accepting meanwhile; they then finish every connection they hold
        (:meth:`webhooks.server.worker.Worker._drain`).
        """
        if self.reloading:
            self._await_new_workers()
        super().manage_workers()

    def _await_new_workers(self) -> None:
        workers = sorted(self.WORKERS.values(), key=lambda w: w.age)
        new, old = workers[-self.num_workers :], workers[: -self.num_workers]
        if not old:
            return
        deadline = time.monotonic() + self.timeout
        while True:
            waiting = [w for w in new if w.pid in self.WORKERS and not _serving(w)]
            if not waiting:
                self.log.info(
                    "reload: new workers serving; stopping the old ones (pids %s)",
                    ", ".join(str(w.pid) for w in old),
                )
                return
            if time.monotonic() >= deadline:
                self.log.warning(
                    "reload: workers %s not serving after %ss; stopping the old ones anyway",
                    ", ".join(str(w.pid) for w in waiting),
                    self.timeout,
                )
                return
            self.reap_workers()
            time.sleep(0.05)


class WebhookServer(BaseApplication):  # type: ignore[misc]
    """A gunicorn application whose workers each build the app from ``factory``.

    The worker class reads what it needs from here: ``options`` (timeouts, the connection
    cap), ``contexts`` (the TLS context cache, built in the master), ``plain_address`` (the
    listener that serves plain HTTP) and ``close_worker`` (called once the worker stops).
    """

    def __init__(self, options: ServeOptions, factory: Factory) -> None:
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
        assert options.runtime_dir is not None
        # prometheus-client's multiprocess mode: every worker writes its series here and a
        # scrape adds them up. It must be in the environment before the library is first
        # imported, which happens in the workers (webhooks.server.metrics).
        metrics_dir = options.runtime_dir / "prometheus"
        shutil.rmtree(metrics_dir, ignore_errors=True)
        metrics_dir.mkdir(parents=True)
        os.environ[MULTIPROC_ENV] = str(metrics_dir)
        configure(options.log_format)  # before gunicorn's first line; workers inherit it
        self.options = options
        self.factory = factory
        self.contexts: ContextCache | None = None
        self.plain_address: Any = (
            util.parse_address(options.metrics_bind) if options.metrics_bind else None
        )
        self.built: Built | None = None
        super().__init__()

    def run(self) -> None:
        """Run the draining master in the foreground until it stops.

        ``RuntimeError`` says why the server could not start (the TLS pair, say); the CLI
        turns it into an exit status, because only the CLI ends the process.
        """
        o = self.options
        master = os.getpid()
        try:
            self.contexts = prime_context(TLSFiles(o.certfile, o.keyfile, o.client_ca))
            DrainingArbiter(self).run()
        finally:
            # Workers are forked from inside the arbiter's loop, and their exit unwinds
            # through here too: only the master may remove what every worker shares.
            if self._own_runtime_dir and o.runtime_dir is not None and os.getpid() == master:
                shutil.rmtree(o.runtime_dir, ignore_errors=True)

    def load_config(self) -> None:
        """Apply :class:`ServeOptions` to gunicorn's config."""
        o = self.options
        settings: dict[str, Any] = {
            "bind": [o.bind, *([o.metrics_bind] if o.metrics_bind else [])],
            "worker_class": "webhooks.server.worker.Worker",
            "workers": o.workers,
            "threads": o.threads,
            "worker_connections": o.max_connections,
            "keepalive": o.keepalive,
            "timeout": o.timeout,
            "graceful_timeout": o.graceful_timeout,
            "child_exit": _child_exit,
            "pre_fork": _pre_fork,
            "loglevel": o.log_level,
            "errorlog": "-",
            "accesslog": None,
            "proc_name": "placement-webhooks",
            "worker_tmp_dir": "/dev/shm" if Path("/dev/shm").is_dir() else None,
        }
        if o.log_format == "json":
            settings["logger_class"] = JSON_LOGGER
        if "control_socket_disable" in self.cfg.settings:
            # Newer gunicorn opens a control socket under $HOME, which a read-only root
            # filesystem forbids and nothing here uses.
            settings["control_socket_disable"] = True
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        """Build the WSGI app inside the worker (after fork), so threads start per worker."""
        self.built = self.factory(self.options)
        collector.tune()  # the same schedule in workers started without the CLI
        # Everything built so far (modules, the app, caches) lives as long as the worker.
        # Freezing it keeps the cyclic garbage collector from re-scanning it on every full
        # collection, which large reviews trigger often: measured in bench/http_bench.py.
        gc.freeze()
        return self.built.app

    def close_worker(self) -> None:
        """Stop what the worker's app started (called by the worker as it exits)."""
        if self.built is not None:
            self.built.close()
