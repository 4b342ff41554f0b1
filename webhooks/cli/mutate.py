"""``placement-webhooks mutate``: print manifests as admission would store them.

Why it prints nothing when an input is unusable (exit 2): its output is piped into
``kubectl apply``, which must never apply half a stream.
"""

from __future__ import annotations

import sys

import click

from webhooks.cli.common import (
    USAGE_ERROR,
    dry_run_inputs,
    manifest_inputs,
    read_config_or_exit,
    report_problems,
)
from webhooks.dryrun import render
from webhooks.dryrun.run import written_documents
from webhooks.manifests.writer import dump_all


@click.command()
@click.argument("paths", nargs=-1, metavar="PATH... | -")
@manifest_inputs
def mutate(
    paths: tuple[str, ...],
    config_path: str | None,
    objects: tuple[str, ...],
    namespace: str | None,
    stdin_name: str,
) -> None:
    """Print the manifests as admission would store them, in input order.

    Pods and DaemonSets come out as stored; every other workload (and a DaemonSet, on top)
    carries in its pod template what its Pods will receive, so `check --fail-on-mutation`
    on the output finds nothing to change. A kind of another API group that takes a
    built-in's name (an apps.kruise.io DaemonSet) is printed unchanged and said to be
    skipped on stderr. Violations go to stderr (exit 1; those of
    plugins whose action is warn or audit as warnings, exit 0); nothing is
    printed when an input cannot be read (exit 2), so a pipe into `kubectl apply` never
    applies half a stream.
    """
    config = read_config_or_exit(config_path)
    report, manifests = dry_run_inputs(paths, config, objects, namespace, stdin_name)
    if report.problems:
        report_problems(report.problems)
        sys.exit(USAGE_ERROR)
    for item in render.lines(report, render.Options()):
        if item.level != "note":
            where = f"{item.checked.document.path}:{item.finding.line}"
            tag = "warning: " if item.level == "warning" else ""
            click.echo(f"{where}: {item.rule}: {tag}{item.message}", err=True)
    for doc, reason in report.foreign:
        click.echo(f"{doc.path}:{doc.line}: {render.SKIPPED}: {reason}", err=True)
    click.echo(dump_all(written_documents(report, manifests.documents)), nl=False)
    sys.exit(report.exit_code())
