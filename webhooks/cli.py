"""The ``placement-webhooks`` command: the same core as the server, from a shell or CI.

Exit codes are part of the interface: 0 when an answer was produced (allowed or not),
2 when the input or configuration is unusable, with the reason on stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from webhooks.certcmd import certs
from webhooks.clicommon import config_option, fail, load_config, load_objects, objects_option
from webhooks.core.admission import Admission
from webhooks.core.plugin import PHASES
from webhooks.core.review import ReviewError, parse_review, response_bytes
from webhooks.deploycmd import webhook_config
from webhooks.offline.commands import check, mutate
from webhooks.offline.explain_command import explain
from webhooks.plugins import REGISTRY


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="placement-webhooks")
def main() -> None:
    """Admission webhooks for where pods may run: tolerations, taints, affinity, overhead."""


main.add_command(check)
main.add_command(mutate)
main.add_command(certs)
main.add_command(webhook_config)
main.add_command(explain)


@main.command()
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
    help="Open connections per worker; past it the longest-idle ones are closed.",
)
def serve(
    config_path: str | None,
    bind: str,
    cert_dir: str | None,
    client_ca: str,
    workers: int,
    threads: int,
    shutdown_delay: float,
    log_reviews: bool,
    io_timeout: float,
    metrics_bind: str,
    max_connections: int,
) -> None:
    """Serve the webhooks over HTTPS under gunicorn.

    With no --cert-dir a development CA and certificate are generated into certs/ when
    missing; a --cert-dir must already hold tls.crt and tls.key (a mounted Secret).
    """
    from webhooks.certs import CERT_FILE, KEY_FILE, ensure_dev_certs
    from webhooks.server.assemble import build_app
    from webhooks.server.runner import ServeOptions, WebhookServer

    config = load_config(config_path)  # fail fast, naming the key, before any worker starts
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
        bind=bind,
        client_ca=client_ca,
        workers=workers,
        threads=threads,
        shutdown_delay=shutdown_delay,
        log_reviews=log_reviews,
        io_timeout=io_timeout,
        metrics_bind=metrics_bind,
        max_connections=max_connections,
    )
    WebhookServer(options, build_app).run()


def _check_cluster_source(config: Any) -> None:
    """Fail fast when the cluster source cannot be configured (every worker would fail)."""
    from webhooks.cluster import ClusterError, check_source

    try:
        check_source(config.cluster)
    except ClusterError as exc:
        fail(f"cluster: {exc}")


def _read_input(source: str) -> bytes:
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except OSError as exc:
        fail(f"{source}: cannot read: {exc.strerror}")


@main.command()
@config_option()
@click.option("--plugin", help="Run only this plugin (both halves), whatever 'enabled' says.")
@objects_option
@click.argument("review", default="-")
def review(
    config_path: str | None, plugin: str | None, objects: tuple[str, ...], review: str
) -> None:
    """Answer one AdmissionReview (from REVIEW, or stdin for '-') and print the response.

    Runs the mutating plugins, then the validating plugins on the mutated object, as the API
    server would call the two webhooks.
    """
    config = load_config(config_path)
    if plugin is not None and plugin not in REGISTRY:
        fail(f"--plugin: unknown plugin {plugin!r} (known: {', '.join(REGISTRY.names)})")
    cluster = load_objects(objects)
    body = _read_input(review)
    try:
        request = parse_review(body)
    except ReviewError as exc:
        fail(f"{review}: {exc}")
    admission = Admission(REGISTRY, config, cluster)
    outcome = admission.decide(request, PHASES, plugin)
    sys.stdout.buffer.write(response_bytes(request.uid, outcome, indent=True)[0])
    sys.stdout.buffer.write(b"\n")
