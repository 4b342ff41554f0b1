"""``placement-webhooks doctor``: look at a live installation, one line per check.

Why a command: every fault it looks for otherwise shows itself as failing pod creates; an
operator (or a pipeline after ``helm upgrade``) runs it and reads, check by check, what is
wrong and the fix. See :mod:`webhooks.install.doctor`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json

import click

from webhooks.cli.common import fail
from webhooks.install.doctor.installation import Installation

DEFAULT_NAME = "placement-webhooks"


@click.command()
@click.option(
    "--name",
    default=DEFAULT_NAME,
    show_default=True,
    help="Name of both webhook configurations, and of the Deployment running serve (the "
    "chart's full name).",
)
@click.option(
    "-n",
    "--namespace",
    default=DEFAULT_NAME,
    show_default=True,
    help="Namespace the server runs in (the chart's release namespace).",
)
@click.option("--kubeconfig", type=click.Path(dir_okay=False))
@click.option("--context", "kube_context", help="Kubeconfig context.")
@click.option(
    "--timeout",
    default=5.0,
    show_default=True,
    type=click.FloatRange(min=0.1),
    help="Seconds for each request to the API server and each round trip to a webhook.",
)
@click.option(
    "--output",
    "-o",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
def doctor(
    name: str,
    namespace: str,
    kubeconfig: str | None,
    kube_context: str | None,
    timeout: float,
    output: str,
) -> None:
    """Check a live installation: one line per finding (ok, warn, fail), the reason and the fix.

    Exit 0 when every check is ok, 3 when the worst is a warning, 1 when a check failed,
    2 when the kubeconfig is unusable.
    """
    from webhooks.install.doctor.findings import exit_code
    from webhooks.install.doctor.gather import gather
    from webhooks.install.doctor.run import run
    from webhooks.install.webhookconfig import InjectError, api_client

    try:
        api = api_client(kubeconfig, kube_context)
    except InjectError as exc:
        fail(str(exc))
    installation = _with_native_halves(gather(api, name, namespace, timeout))
    findings = run(installation)
    if output == "json":
        rows = [
            {"check": f.check, "status": f.status.name.lower(), "reason": f.reason, "fix": f.fix}
            for f in findings
        ]
        click.echo(json.dumps(rows, indent=2))
    else:
        for finding in findings:
            click.echo(finding.line())
    raise SystemExit(exit_code(findings))


def _with_native_halves(installation: Installation) -> Installation:
    """``installation`` with the halves a ``serve --native`` keeps on its webhooks.

    Why here: which halves native admission policies take over is the export's decision
    (:func:`webhooks.export.webhook_halves`), and only the CLI may depend on the export.
    """
    from webhooks.install.doctor.gather import option_value, serve_args
    from webhooks.k8s.releases import UnsupportedRelease, release

    args = serve_args(installation.deployment)
    if installation.config is None or args is None or "--native" not in args:
        return installation
    from webhooks.export import webhook_halves
    from webhooks.plugins import REGISTRY

    target = installation.release.release
    named = option_value(args, "--kubernetes-version")
    if named:
        # An unsupported one keeps the server from starting; then /version's release is used.
        with contextlib.suppress(UnsupportedRelease):
            target = release(named)
    halves = webhook_halves(installation.config, REGISTRY, target)
    return dataclasses.replace(installation, served_halves=frozenset(halves))
