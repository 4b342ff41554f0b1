"""Build the app a worker serves from :class:`ServeOptions`: config, cluster, readiness checks.

Why its own module: both gunicorn workers and tests construct the exact same app, and the
readiness checks (certificate usable, caches synced) belong next to what they watch.
"""

from __future__ import annotations

import time
from pathlib import Path

from flask import Flask

from webhooks.certs import CertError, load_pair
from webhooks.configfile import read_config
from webhooks.core.admission import Admission
from webhooks.plugins import REGISTRY
from webhooks.server.app import ReadyCheck, ReviewLog, ServerState, create_app
from webhooks.server.metrics import Metrics
from webhooks.server.runner import ON_WORKER_EXIT, ServeOptions


def certificate_check(certfile: Path, keyfile: Path, state: dict[str, float]) -> ReadyCheck:
    """A readiness check that fails when the served pair is unreadable, mismatched or expired.

    Why: a pod serving a broken certificate must leave the Service before the API server's
    calls start failing; the expiry is also exported for alerting.
    """

    def check() -> str | None:
        try:
            pair = load_pair(certfile, keyfile)
        except CertError as exc:
            return str(exc)
        state["not_after"] = pair.not_after.timestamp()
        if not pair.matches_key:
            return f"{certfile} does not match {keyfile}"
        if pair.not_after.timestamp() <= time.time():
            return f"{certfile} expired at {pair.not_after.isoformat()}"
        return None

    return check


def build_state(options: ServeOptions) -> ServerState:
    """Read the config and assemble the worker's state (raises ConfigError when unusable)."""
    config = read_config(options.config_path)
    admission = Admission(REGISTRY, config, None)
    cert_state: dict[str, float] = {}
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
    state.ready_checks.append(
        certificate_check(Path(options.certfile), Path(options.keyfile), cert_state)
    )
    state.metrics.gauge(
        "placement_webhooks_certificate_expiry_seconds",
        "Seconds until the served certificate expires.",
        lambda: cert_state["not_after"] - time.time() if "not_after" in cert_state else None,
    )
    return state


def build_app(options: ServeOptions) -> Flask:
    """The Flask app for one worker."""
    return create_app(build_state(options))
