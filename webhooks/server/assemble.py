"""Build the app a worker serves from :class:`ServeOptions`: config, cluster, readiness checks.

Why its own module: both gunicorn workers and tests construct the exact same app, and the
readiness checks (certificate usable, caches synced) belong next to what they watch.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from pathlib import Path

from flask import Flask

from webhooks.certs import CA_FILE, CertError, inspect, load_pair
from webhooks.cluster import ApiCluster, open_cluster
from webhooks.configfile import read_config
from webhooks.core.admission import Admission
from webhooks.plugins import REGISTRY
from webhooks.server.app import ReadyCheck, ReviewLog, ServerState, create_app
from webhooks.server.metrics import Family, Labels, Metrics
from webhooks.server.runner import ON_WORKER_EXIT, ServeOptions


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


def cluster_check(cluster: ApiCluster) -> ReadyCheck:
    """A readiness check that fails until every cluster cache has completed its first list.

    Why: a pod that took traffic with empty caches would send every lookup to the API
    server as a live GET at once (a surge on each rollout) and fail reviews if it is slow.
    Once synced the check stays green: hits are served from the cache even when the API
    server is away, and misses fail fast with an InternalError status.
    """

    def check() -> str | None:
        pending = cluster.unsynced()
        if not pending:
            return None
        parts = []
        for name in pending:
            error = cluster.informers[name].last_error
            parts.append(f"{name} ({error})" if error else name)
        return "cluster cache not synced: " + ", ".join(parts)

    return check


def cluster_families(cluster: ApiCluster) -> list[Family]:
    """The cluster source's figures as Prometheus families, read at scrape time.

    Why these: an operator needs to see whether the caches are synced and watching, how
    often they relist or lose their watch, and how many lookups reach the API server or fail.
    """
    informers = cluster.informers.items()

    def res(name: str, *more: tuple[str, str]) -> Labels:
        return (("resource", name), *more)

    lists = [
        (res(n, ("result", r)), float(i.counts[f"list_{r}"]))
        for n, i in informers
        for r in ("ok", "error")
    ]
    watches = [
        (res(n, ("end", e)), float(i.counts[f"watch_{e}"]))
        for n, i in informers
        for e in ("ended", "expired", "error")
    ]
    lookups = sorted(
        (res(resource, ("result", result)), float(count))
        for (resource, result), count in cluster.lookup_counts().items()
    )
    return [
        Family(
            "placement_webhooks_cluster_cache_synced",
            "gauge",
            "1 once the cache of a resource has completed its first list.",
            [(res(n), float(i.synced)) for n, i in informers],
        ),
        Family(
            "placement_webhooks_cluster_cache_watching",
            "gauge",
            "1 while a watch stream of the resource is open.",
            [(res(n), float(i.watching)) for n, i in informers],
        ),
        Family(
            "placement_webhooks_cluster_cache_objects",
            "gauge",
            "Objects held in the cache of a resource.",
            [(res(n), float(len(i))) for n, i in informers],
        ),
        Family(
            "placement_webhooks_cluster_lists_total",
            "counter",
            "List requests (pages) made by the caches, by result.",
            lists,
        ),
        Family(
            "placement_webhooks_cluster_watches_total",
            "counter",
            "Watch streams ended: at the server timeout, expired (410 Gone), or in error.",
            watches,
        ),
        Family(
            "placement_webhooks_cluster_lookups_total",
            "counter",
            "Lookups by result: cache hit, found or not found by a live GET, or error.",
            lookups,
        ),
    ]


def build_state(options: ServeOptions) -> ServerState:
    """Read the config and assemble the worker's state (raises ConfigError when unusable).

    Called in each gunicorn worker after fork, so the cluster source's threads and
    connections belong to the worker that uses them.
    """
    config = options.config if options.config is not None else read_config(options.config_path)
    cluster = open_cluster(config.cluster)
    admission = Admission(REGISTRY, config, cluster)
    metrics = Metrics(options.runtime_dir)
    metrics.start_writer()
    ON_WORKER_EXIT.append(metrics.stop_writer)
    state = ServerState(
        admission,
        metrics=metrics,
        drain_marker=options.drain_marker,
        require_client_cert=bool(options.client_ca),
        review_log=ReviewLog() if options.log_reviews else None,
    )
    watch = CertificateWatch(
        Path(options.certfile), Path(options.keyfile), options.cert_dir / CA_FILE
    )
    state.ready_checks.append(watch.problem)
    if cluster is not None:
        ON_WORKER_EXIT.append(cluster.stop)
        state.ready_checks.append(cluster_check(cluster))
        metrics.collect(lambda: cluster_families(cluster))
    state.metrics.gauge(
        "placement_webhooks_certificate_expiry_seconds",
        "Seconds until the served certificate expires.",
        watch.leaf_seconds,
    )
    state.metrics.gauge(
        "placement_webhooks_ca_expiry_seconds",
        "Seconds until the first CA certificate in the cert directory's ca.crt expires.",
        watch.ca_seconds,
    )
    return state


def build_app(options: ServeOptions) -> Flask:
    """The Flask app for one worker."""
    return create_app(build_state(options))
