"""``placement-webhooks serve``: the webhooks over HTTPS under gunicorn.

Why checks happen here, before any worker starts: a config, certificate or cluster source
that cannot work would otherwise fail every worker's boot, and gunicorn would give up with a
far less useful message.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any, Literal

import click

from webhooks.cli.common import config_option, fail, read_config_or_exit
from webhooks.cli.kubeversion import chosen_release, kubernetes_version_option
from webhooks.k8s.releases import Release
from webhooks.server.budget import HEAD_TIMEOUT, MAX_PLAIN_CONNECTIONS
from webhooks.server.logformat import line


@click.command()
@config_option()
@click.option("--bind", default="127.0.0.1:8443", show_default=True, help="HOST:PORT to serve.")
@click.option(
    "--cert-dir",
    type=click.Path(file_okay=False),
    help="Directory with tls.crt and tls.key [default: certs/, generated when missing].",
)
@click.option("--client-ca", default="", help="Require client certificates signed by this CA.")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 64))
@click.option("--threads", default=4, show_default=True, type=click.IntRange(1, 256))
@click.option(
    "--shutdown-delay",
    default=5.0,
    show_default=True,
    type=click.FloatRange(0, 300),
    help="On SIGTERM, report not-ready and keep serving this long before stopping.",
)
@click.option(
    "--log-reviews/--no-log-reviews",
    default=True,
    show_default=True,
    help="One JSON line per review on stderr.",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: gunicorn's lines and a JSON line per review; json: every line a JSON object "
    "(time, level, message; a review's fields too).",
)
@click.option(
    "--otlp-endpoint",
    default="",
    metavar="URL",
    help="Send a span per review and per plugin half over OTLP/HTTP to this URL "
    "(http://collector:4318 posts to /v1/traces), continuing the API server's traceparent. "
    "Needs the extra: pip install 'placement-webhooks[otlp]'.",
)
@click.option(
    "--io-timeout",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0.5, 120),
    help="Deadline for a client's whole TLS handshake, and for each whole request "
    "(head and body) from its first byte.",
)
@click.option(
    "--metrics-bind",
    default="127.0.0.1:8080",
    show_default=True,
    help="HOST:PORT serving /metrics, /healthz and /readyz over plain HTTP; '' for none.",
)
@click.option(
    "--max-connections",
    default=1000,
    show_default=True,
    type=click.IntRange(16, 100000),
    help="Admission (HTTPS) connections per worker; past it one that has not sent its "
    "request head within --head-timeout, else the longest idle, else one whose body is "
    "late, is closed for a newcomer.",
)
@click.option(
    "--max-metrics-connections",
    default=MAX_PLAIN_CONNECTIONS,
    show_default=True,
    type=click.IntRange(4, 100000),
    help="Connections per worker to --metrics-bind: a budget of its own, so that "
    "unauthenticated port can never take an admission connection's place.",
)
@click.option(
    "--head-timeout",
    default=HEAD_TIMEOUT,
    show_default=True,
    type=click.FloatRange(0.1, 120),
    help="Seconds a connection has to send its request head (from the connect, or from "
    "the first byte of its next request), and then its body, before it is among the first "
    "closed for a newcomer.",
)
@click.option(
    "--native",
    is_flag=True,
    help="A hybrid installation: /mutate and /validate run only the plugin halves that the "
    "native admission policies of `placement-webhooks export --hybrid` do not do exactly "
    "(what `webhook-config --native` registers), as one chain in chain order.",
)
@kubernetes_version_option()
def serve(
    config_path: str | None,
    bind: str,
    cert_dir: str | None,
    client_ca: str,
    workers: int,
    threads: int,
    shutdown_delay: float,
    log_reviews: bool,
    log_format: Literal["text", "json"],
    otlp_endpoint: str,
    io_timeout: float,
    metrics_bind: str,
    max_connections: int,
    max_metrics_connections: int,
    head_timeout: float,
    native: bool,
    kubernetes_version: str | None,
) -> None:
    """Serve the webhooks over HTTPS under gunicorn.

    With no --cert-dir a development CA and certificate are generated into certs/ when
    missing; a --cert-dir must already hold tls.crt and tls.key (a mounted Secret).
    """
    from webhooks.certs.pki import CERT_FILE, KEY_FILE, ensure_dev_certs
    from webhooks.server.assemble import build_app
    from webhooks.server.runner import ServeOptions, WebhookServer

    if otlp_endpoint:
        _check_tracing(otlp_endpoint)
    config = read_config_or_exit(config_path)  # fail fast, naming the key, before any worker starts
    kept_by = functools.partial(_webhook_halves, release=chosen_release(kubernetes_version))
    _check_cluster_source(config)
    if cert_dir is None:
        directory = Path("certs")
        ensure_dev_certs(directory)
    else:
        directory = Path(cert_dir)
        missing = [n for n in (CERT_FILE, KEY_FILE) if not (directory / n).is_file()]
        if missing:
            fail(f"--cert-dir {directory}: missing {', '.join(missing)}")
    if client_ca and not Path(client_ca).is_file():
        fail(f"--client-ca {client_ca}: no such file")
    options = ServeOptions(
        cert_dir=directory,
        config_path=config_path,
        config=config,  # read once: a pipe (--config /dev/stdin) holds nothing the second time
        bind=bind,
        client_ca=client_ca,
        workers=workers,
        threads=threads,
        shutdown_delay=shutdown_delay,
        log_reviews=log_reviews,
        log_format=log_format,
        otlp_endpoint=otlp_endpoint,
        io_timeout=io_timeout,
        metrics_bind=metrics_bind,
        max_connections=max_connections,
        max_metrics_connections=max_metrics_connections,
        head_timeout=head_timeout,
        kept=kept_by if native else None,
        server_release=_server_release(config),
    )
    if native:
        kept = sorted(f"{name}/{phase}" for name, phase in kept_by(config))
        note = (
            f"--native: serving {', '.join(kept) or 'nothing'}; "
            "native admission policies run the rest"
        )
        if log_format == "json":
            click.echo(line("info", note), err=True)
        else:
            click.echo(f"placement-webhooks: {note}", err=True)
    try:
        WebhookServer(options, build_app).run()
    except RuntimeError as exc:
        if log_format == "json":
            click.echo(line("error", str(exc)), err=True)
            sys.exit(1)
        fail(str(exc), code=1)


def _check_tracing(endpoint: str) -> None:
    """Stop start-up when ``--otlp-endpoint`` cannot work: the extra is missing (naming
    the install command) or the URL is not one spans can be posted to.

    Why before any worker: each would fail the same way, and gunicorn's message for a
    worker that cannot boot says nothing of the option.
    """
    from webhooks.server.tracing import missing, traces_url

    reason = missing()
    if reason is not None:
        fail(reason)
    try:
        traces_url(endpoint)
    except ValueError as exc:
        fail(str(exc))


def _webhook_halves(config: Any, release: Release) -> frozenset[tuple[str, str]]:
    """The halves a hybrid installation's webhook keeps under ``config`` on ``release``
    (``--native``, ``--kubernetes-version``).

    Why here: only the CLI may depend on the export; the server is handed this function
    and calls it with each config it loads (at start and on SIGHUP).
    """
    from webhooks.export import webhook_halves
    from webhooks.plugins import REGISTRY

    return webhook_halves(config, REGISTRY, release)


def _server_release(config: Any) -> Any:
    """The release of the cluster the config reads (``None``: none), asked once here.

    Why in the CLI, before any worker: the master says once which settings the release
    does not serve, and every worker inherits the answer instead of asking again.
    """
    from webhooks.cluster.version import server_release

    return server_release(config.cluster)


def _check_cluster_source(config: Any) -> None:
    """Fail fast when the cluster source cannot be configured (every worker would fail)."""
    from webhooks.cluster.kubeconfig import ClusterError, check_source

    try:
        check_source(config.cluster)
    except ClusterError as exc:
        fail(f"cluster: {exc}")
