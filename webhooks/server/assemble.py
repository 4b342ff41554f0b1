"""Assemble the app a worker serves from :class:`ServeOptions`: config, cluster, checks, metrics.

Why its own module: both gunicorn workers and tests construct the exact same app, so the
wiring (which checks make the pod ready, which figures a scrape shows, what stops when the
worker exits) is written once.
"""

from __future__ import annotations

import time
from pathlib import Path

from webhooks.certs.pki import CA_FILE
from webhooks.cluster.api import open_cluster
from webhooks.configfile import read_config
from webhooks.core.admission import Admission
from webhooks.plugins import REGISTRY
from webhooks.server.app import ReviewLog, ServerState, create_app
from webhooks.server.certwatch import CertificateWatch
from webhooks.server.clusterseries import ClusterSeries
from webhooks.server.metrics import BuildInfo, GaugeCollector, Metrics
from webhooks.server.readiness import cluster_check
from webhooks.server.runner import Built, ServeOptions
from webhooks.server.tracing import start_tracing
from webhooks.server.unavailable import readyz_detail, register, settings_unavailable


def build_state(options: ServeOptions) -> ServerState:
    """Read the config and assemble the worker's state (raises ConfigError when unusable).

    Called in each gunicorn worker after fork, so the cluster source's threads and
    connections, and the trace exporter's, belong to the worker that uses them.
    """
    config = options.config if options.config is not None else read_config(options.config_path)
    cluster = open_cluster(config.cluster, cached=config.lookups(REGISTRY))
    kept = options.kept(config) if options.kept is not None else None
    tracer = start_tracing(options.otlp_endpoint) if options.otlp_endpoint else None
    # The halves each review called are what JSON lines and spans show; text lines do not.
    record = tracer is not None or (options.log_reviews and options.log_format == "json")
    admission = Admission(
        REGISTRY,
        config,
        cluster,
        kept=kept,
        record=record,
        clock=time.time_ns if tracer is not None else None,
    )
    metrics = Metrics()
    review_log = None
    if options.log_reviews:
        review_log = ReviewLog(interval=0.05, log_format=options.log_format)
    state = ServerState(
        admission,
        metrics=metrics,
        drain_marker=options.drain_marker,
        require_client_cert=bool(options.client_ca),
        review_log=review_log,
        tracer=tracer,
    )
    if tracer is not None:
        state.closers.append(tracer.shutdown)
    if state.review_log is not None:
        state.review_log.start()
        state.closers.append(state.review_log.stop)
    watch = CertificateWatch(
        Path(options.certfile), Path(options.keyfile), options.cert_dir / CA_FILE
    )
    state.ready_checks.append(watch.problem)
    expiry = GaugeCollector()
    expiry.add(
        "placement_webhooks_certificate_expiry_seconds",
        "Seconds until the served certificate expires.",
        watch.leaf_seconds,
    )
    expiry.add(
        "placement_webhooks_ca_expiry_seconds",
        "Seconds until the first CA certificate in the cert directory's ca.crt expires.",
        watch.ca_seconds,
    )
    metrics.collect(expiry)
    metrics.collect(BuildInfo())
    lacking = settings_unavailable(config, options.server_release)
    state.ready_detail = readyz_detail(lacking, options.server_release)
    register(metrics.registry, lacking)
    if cluster is not None:
        state.closers.append(cluster.stop)
        state.ready_checks.append(cluster_check(cluster))
        metrics.sync(ClusterSeries(cluster, metrics.registry).update)
    metrics.start()
    state.closers.append(metrics.stop)
    return state


def build_app(options: ServeOptions) -> Built:
    """The Flask app for one worker, and what stops its threads when the worker exits."""
    state = build_state(options)
    return Built(create_app(state), state.close)
