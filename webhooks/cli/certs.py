"""``placement-webhooks certs``: make a CA and serving certificate for a Service, and inspect them.

Why in the CLI: users without Helm or cert-manager still need a chain whose SANs match the
Service the API server dials, and "which names, which CA, when does it expire, does the key
fit" should be one command, not four ``openssl`` invocations.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from webhooks.cli.common import fail

if TYPE_CHECKING:
    from cryptography import x509

EXIT_PROBLEM = 1


@click.group()
def certs() -> None:
    """Generate and inspect webhook TLS certificates."""


@certs.command()
@click.option("--service", required=True, help="Service name the API server dials.")
@click.option("--namespace", required=True, help="Namespace of that Service.")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Directory to write ca.crt, tls.crt, tls.key [default: certs/SERVICE.NAMESPACE].",
)
@click.option("--ca-days", default=3650, show_default=True, type=click.IntRange(1, 36500))
@click.option("--days", default=365, show_default=True, type=click.IntRange(1, 36500))
@click.option(
    "--key-type",
    type=click.Choice(["ec", "rsa"]),
    default="ec",
    show_default=True,
    help="ECDSA P-256 or RSA 2048.",
)
@click.option("--host", "extra_hosts", multiple=True, help="Extra SAN (name or IP); repeatable.")
def generate(
    service: str,
    namespace: str,
    out: str | None,
    ca_days: int,
    days: int,
    key_type: str,
    extra_hosts: tuple[str, ...],
) -> None:
    """Write a new CA and a serving certificate for SERVICE in NAMESPACE.

    The certificate covers SERVICE, SERVICE.NAMESPACE, SERVICE.NAMESPACE.svc and
    SERVICE.NAMESPACE.svc.cluster.local (plus any --host). tls.key is written mode 0600; the
    CA key is not kept, so renewing means generating a new chain and a new caBundle.
    """
    from webhooks.certs.pki import generate as make_chain
    from webhooks.certs.pki import inspect, service_hosts

    directory = Path(out) if out else Path("certs") / f"{service}.{namespace}"
    hosts = [*service_hosts(service, namespace), *extra_hosts]
    try:
        paths = make_chain(
            directory,
            hosts=hosts,
            ca_days=ca_days,
            days=days,
            key_type="rsa" if key_type == "rsa" else "ec",
        )
    except (OSError, ValueError) as exc:
        fail(f"certs generate: {exc}")
    leaf = inspect(paths.cert)[0]
    click.echo(f"wrote {paths.ca}, {paths.cert} and {paths.key} (mode 0600)")
    click.echo(f"SANs: {', '.join(leaf.sans)}")
    click.echo(f"expires: {leaf.not_after.isoformat()}")
    click.echo("next, for example:")
    click.echo(
        f"  kubectl -n {namespace} create secret generic {service}-tls "
        f"--from-file={paths.ca} --from-file={paths.cert} --from-file={paths.key}"
    )
    click.echo(
        f"  placement-webhooks webhook-config --namespace {namespace} --service {service} "
        f"--ca-file {paths.ca}"
    )


@certs.command(name="inspect")
@click.argument("paths", nargs=-1, type=click.Path())
def inspect_command(paths: tuple[str, ...]) -> None:
    """Print subjects, SANs and expiry of PEM certificates (files or cert directories).

    A directory is read as a mounted Secret: ca.crt (when present) and tls.crt are shown,
    and the command checks that tls.key belongs to tls.crt and that tls.crt was issued by
    ca.crt. With no PATH, certs/ is inspected. Exit 1 when a certificate has expired or a
    check fails, 2 when a file cannot be read.
    """
    from webhooks.certs.pki import CertError, format_inspect, inspect, seconds_to_expiry

    targets = [Path(p) for p in paths] or [Path("certs")]
    now = dt.datetime.now(dt.UTC)
    problems: list[str] = []
    first = True
    for target in targets:
        files = _cert_files(target)
        for file in files:
            try:
                infos = inspect(file)
            except CertError as exc:
                fail(str(exc))
            if not first:
                click.echo()
            first = False
            click.echo(f"{file}:")
            click.echo(format_inspect(infos, now=now))
            problems += [
                f"{file}: certificate {i} ({info.subject}) expired at {info.not_after.isoformat()}"
                for i, info in enumerate(infos, start=1)
                if seconds_to_expiry(info.not_after, now) <= 0
            ]
        if target.is_dir():
            problems += _check_directory(target)
    if problems:
        click.echo()
        for problem in problems:
            click.echo(f"problem: {problem}")
        sys.exit(EXIT_PROBLEM)


def _cert_files(target: Path) -> list[Path]:
    if not target.exists():
        fail(f"{target}: no such file or directory")
    if not target.is_dir():
        return [target]
    files = [target / name for name in ("ca.crt", "tls.crt") if (target / name).is_file()]
    if not files:
        fail(f"{target}: neither ca.crt nor tls.crt found")
    return files


def _check_directory(directory: Path) -> list[str]:
    from cryptography import x509

    from webhooks.certs.pki import CA_FILE, CERT_FILE, KEY_FILE, CertError, load_pair, read_pem

    cert, key, ca = directory / CERT_FILE, directory / KEY_FILE, directory / CA_FILE
    problems: list[str] = []
    if not cert.is_file():
        return problems
    if key.is_file():
        try:
            pair = load_pair(cert, key)
        except CertError as exc:
            return [str(exc)]
        click.echo(f"{key}: {'matches' if pair.matches_key else 'DOES NOT MATCH'} {cert}")
        if not pair.matches_key:
            problems.append(f"{key} does not belong to {cert}")
    if ca.is_file():
        try:
            leaf = x509.load_pem_x509_certificates(read_pem(cert, "certificate"))[0]
            issuers = x509.load_pem_x509_certificates(read_pem(ca, "CA certificate"))
        except (CertError, ValueError) as exc:
            return [*problems, str(exc)]
        issued = any(_issued_by(leaf, issuer) for issuer in issuers)
        click.echo(f"{cert}: {'issued by' if issued else 'NOT issued by'} {ca}")
        if not issued:
            problems.append(f"{cert} was not issued by any certificate in {ca}")
    return problems


def _issued_by(leaf: x509.Certificate, issuer: x509.Certificate) -> bool:
    from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm

    try:
        leaf.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature, UnsupportedAlgorithm):
        return False
    return True


@certs.command()
@click.option(
    "--secret", required=True, help="The Secret every replica shares (created if missing)."
)
@click.option("--namespace", required=True, help="Namespace of the Secret and the Service.")
@click.option("--service", required=True, help="Service the API server dials: the leaf's names.")
@click.option(
    "--webhook-config",
    "webhook_configuration",
    default="placement-webhooks",
    show_default=True,
    help="Name of both webhook configurations whose caBundle is written.",
)
@click.option(
    "--cert-dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Where ca.crt, tls.crt and tls.key are written for `serve --cert-dir`.",
)
@click.option("--ca-days", default=1825, show_default=True, type=click.IntRange(2, 36500))
@click.option(
    "--ca-renew-days",
    default=365,
    show_default=True,
    type=click.IntRange(1, 36500),
    help="Stage a new CA this long before the signing one expires.",
)
@click.option("--days", default=90, show_default=True, type=click.IntRange(2, 3650))
@click.option(
    "--renew-days",
    default=30,
    show_default=True,
    type=click.IntRange(1, 3650),
    help="Issue a new leaf this long before the current one expires.",
)
@click.option(
    "--ca-overlap",
    default=3600.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds a staged CA is trusted by the webhook configurations before it signs.",
)
@click.option(
    "--interval",
    default=60.0,
    show_default=True,
    type=click.FloatRange(min=0.1),
    help="Seconds between checks (renewals, another replica's rotation, a reset caBundle).",
)
@click.option("--once", is_flag=True, help="One check, then exit (1 if it failed).")
@click.option("--kubeconfig", type=click.Path(dir_okay=False))
@click.option("--context", "kube_context", help="Kubeconfig context.")
def manage(
    secret: str,
    namespace: str,
    service: str,
    webhook_configuration: str,
    cert_dir: str,
    ca_days: int,
    ca_renew_days: int,
    days: int,
    renew_days: int,
    ca_overlap: float,
    interval: float,
    once: bool,
    kubeconfig: str | None,
    kube_context: str | None,
) -> None:
    """Keep the serving certificate and its CA in a Secret, the cert dir and the caBundle.

    Every replica runs this (the chart's tls.mode managed, as a sidecar); they agree on one
    CA through the Secret. Leaves are renewed before expiry; a new CA is trusted beside the
    old one before it signs anything. Runs until SIGTERM; errors are logged and retried.
    """
    import datetime as dt
    import signal
    import threading
    from types import FrameType

    from webhooks.certs.managed import ManageError, Manager, SecretStore, describe
    from webhooks.certs.pki import service_hosts
    from webhooks.certs.rotation import Policy
    from webhooks.install.webhookconfig import InjectError, api_client

    try:
        policy = Policy(
            hosts=tuple(service_hosts(service, namespace)),
            ca_days=ca_days,
            ca_renew_days=ca_renew_days,
            leaf_days=days,
            leaf_renew_days=renew_days,
            overlap=dt.timedelta(seconds=ca_overlap),
        )
    except ValueError as exc:
        fail(f"certs manage: {exc}")
    try:
        api = api_client(kubeconfig, kube_context)
    except InjectError as exc:
        fail(str(exc), EXIT_PROBLEM)
    manager = Manager(
        api=api,
        store=SecretStore(api, namespace, secret),
        policy=policy,
        cert_dir=Path(cert_dir),
        webhook_configuration=webhook_configuration,
    )
    stopping = threading.Event()

    def stop(_signum: int, _frame: FrameType | None) -> None:
        stopping.set()

    if not once:
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
    ready = False  # until the first step succeeds, retry within seconds: the pod waits on it
    while True:
        try:
            for line in describe(manager.step()):
                click.echo(line)
            ready = True
        except ManageError as exc:
            click.echo(f"placement-webhooks: certs manage: {exc}", err=True)
            if once:
                sys.exit(EXIT_PROBLEM)
        if once or stopping.wait(interval if ready else min(interval, 2.0)):
            return
