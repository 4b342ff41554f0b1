"""The ``placement-webhooks`` command: the same core as the server, from a shell or CI.

Exit codes are part of the interface: 0 when an answer was produced (allowed or not),
2 when the input or configuration is unusable, with the reason on stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from webhooks.cluster import ObjectsError, StaticCluster, read_objects
from webhooks.configfile import read_config
from webhooks.core.admission import Admission
from webhooks.core.config import ConfigError
from webhooks.core.plugin import PHASES
from webhooks.core.review import ReviewError, parse_review, response_bytes
from webhooks.plugins import REGISTRY

USAGE_ERROR = 2


def fail(message: str) -> NoReturn:
    """Print ``message`` to stderr and exit 2 (unusable input)."""
    click.echo(f"placement-webhooks: {message}", err=True)
    sys.exit(USAGE_ERROR)


def _config(path: str | None) -> Any:
    try:
        return read_config(path)
    except ConfigError as exc:
        fail(f"config: {exc}")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="placement-webhooks")
def main() -> None:
    """Admission webhooks for where pods may run: tolerations, taints, affinity, overhead."""


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config YAML.")
@click.option("--bind", default="127.0.0.1:8443", show_default=True, help="HOST:PORT to serve.")
@click.option(
    "--cert-dir",
    type=click.Path(file_okay=False),
    help="Directory with tls.crt and tls.key [default: certs/, generated when missing].",
)
@click.option("--client-ca", default="", help="Require client certificates signed by this CA.")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 64))
@click.option("--threads", default=4, show_default=True, type=click.IntRange(1, 256))
def serve(
    config_path: str | None,
    bind: str,
    cert_dir: str | None,
    client_ca: str,
    workers: int,
    threads: int,
) -> None:
    """Serve the webhooks over HTTPS under gunicorn.

    With no --cert-dir a development CA and certificate are generated into certs/ when
    missing; a --cert-dir must already hold tls.crt and tls.key (a mounted Secret).
    """
    from webhooks.certs import ensure_dev_certs
    from webhooks.server.runner import ServeOptions, WebhookServer
    from webhooks.server.wsgi import build_app

    _config(config_path)  # fail fast, naming the key, before any worker starts
    if cert_dir is None:
        directory = Path("certs")
        ensure_dev_certs(directory)
    else:
        directory = Path(cert_dir)
        missing = [n for n in ("tls.crt", "tls.key") if not (directory / n).is_file()]
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
    )
    WebhookServer(options, build_app).run()


def _read_input(source: str) -> bytes:
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except OSError as exc:
        fail(f"{source}: cannot read: {exc.strerror}")


def _cluster(objects: tuple[str, ...]) -> StaticCluster:
    try:
        return read_objects(objects)
    except ObjectsError as exc:
        fail(str(exc))


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config YAML.")
@click.option("--plugin", help="Run only this plugin (both halves), whatever 'enabled' says.")
@click.option(
    "--objects",
    multiple=True,
    help="Cluster objects (RuntimeClass, Namespace) as YAML/JSON; repeatable.",
)
@click.argument("review", default="-")
def review(
    config_path: str | None, plugin: str | None, objects: tuple[str, ...], review: str
) -> None:
    """Answer one AdmissionReview (from REVIEW, or stdin for '-') and print the response.

    Runs the mutating plugins, then the validating plugins on the mutated object, as the API
    server would call the two webhooks.
    """
    config = _config(config_path)
    if plugin is not None and plugin not in REGISTRY:
        fail(f"--plugin: unknown plugin {plugin!r} (known: {', '.join(REGISTRY.names)})")
    cluster = _cluster(objects)
    body = _read_input(review)
    try:
        request = parse_review(body)
    except ReviewError as exc:
        fail(f"{review}: {exc}")
    admission = Admission(REGISTRY, config, cluster)
    outcome = admission.decide(request, PHASES, plugin)
    sys.stdout.buffer.write(response_bytes(request.uid, outcome, indent=True)[0])
    sys.stdout.buffer.write(b"\n")
