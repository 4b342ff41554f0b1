"""The ``check`` and ``mutate`` commands: dry-run admission over manifests, for CI and review.

Exit codes are the interface a pipeline reads: 0 clean; 1 violations (and mutations under
``check --fail-on-mutation``); 2 unusable input or usage, each reported ``file:line: reason``
on stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import click

from webhooks.cli.common import (
    USAGE_ERROR,
    config_option,
    fail,
    load_config,
    load_objects,
    objects_option,
)
from webhooks.core.admission import Admission
from webhooks.dryrun import formats
from webhooks.dryrun.engine import Checked, Engine, Report, SchemaCheck, context_cluster
from webhooks.manifests.reader import STDIN, STDIN_NAME, Document, Problem, load
from webhooks.manifests.tree import depth
from webhooks.manifests.writer import dump_all
from webhooks.plugins import REGISTRY


@dataclass(frozen=True, slots=True)
class Run:
    """A loaded run: the engine, the documents in input order, and the report to fill."""

    engine: Engine
    documents: list[Document]
    report: Report


def prepare(
    paths: Sequence[str],
    config_path: str | None,
    objects: Sequence[str],
    namespace: str | None,
    stdin_name: str,
    schema: SchemaCheck | None = None,
) -> Run:
    """Read the config, the cluster objects and every input into an :class:`Engine` run.

    Why shared: ``check``, ``mutate`` and ``explain`` must admit manifests identically.
    """
    if not paths:
        fail("no input: give files, directories, or - for stdin")
    config = load_config(config_path)
    cluster = load_objects(objects)
    stdin = sys.stdin.buffer.read() if STDIN in paths else None
    manifests = load(paths, stdin, stdin_name)
    documents = manifests.documents
    admission = Admission(REGISTRY, config, context_cluster(documents, cluster))
    engine = Engine(admission, namespace or "default", schema)
    return Run(engine, documents, Report(problems=manifests.problems, files=manifests.files))


def admit(run: Run, doc: Document) -> Checked | None:
    """:meth:`Engine.check` on one document; one nested too deep for Python is unusable input.

    Why: kubectl accepts objects 10,000 levels deep, and a library inside the chain may
    still recurse on one; the run must then say so in one ``file:line: reason`` (exit 2),
    never end in a traceback.
    """
    try:
        return run.engine.check(doc, run.report)
    except RecursionError:
        reason = f"nested too deeply to check ({depth(doc.obj)} levels)"
        run.report.problems.append(Problem(doc.path, doc.line, reason))
        return None


def _version() -> str:
    try:
        return metadata.version("placement-webhooks")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare tree
        return ""


def _outputs(specs: Sequence[str]) -> list[tuple[str, str | None]]:
    outputs: list[tuple[str, str | None]] = []
    for spec in specs:
        name, sep, target = spec.partition("=")
        if name not in formats.FORMATS:
            known = ", ".join(formats.FORMATS)
            fail(f"--output {spec}: unknown format {name!r} (known: {known})")
        if sep and not target:
            fail(f"--output {spec}: missing file name after '='")
        outputs.append((name, None if not sep or target == "-" else target))
    if sum(target is None for _, target in outputs) > 1:
        fail("--output: at most one format can go to stdout; give the others a file (FORMAT=FILE)")
    return outputs


def _color(mode: str) -> bool:
    if mode != "auto":
        return mode == "always"
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


_input = click.argument("paths", nargs=-1, metavar="PATH... | -")
namespace_option = click.option(
    "-n", "--namespace", help="Namespace for objects that name none [default: default]."
)
stdin_name_option = click.option(
    "--stdin-name", default=STDIN_NAME, show_default=True, help="File name to report for stdin."
)


@click.command()
@_input
@config_option()
@objects_option
@namespace_option
@click.option(
    "-o",
    "--output",
    "outputs",
    multiple=True,
    default=("text",),
    show_default=True,
    metavar="FORMAT[=FILE]",
    help="text, json, junit, sarif or github; repeatable, each to stdout or its own FILE.",
)
@click.option(
    "--fail-on-mutation", is_flag=True, help="Exit 1 when admission would change an object."
)
@click.option(
    "--schema",
    "use_schema",
    is_flag=True,
    help="Also validate every object, before and after mutation, against the strict "
    "Kubernetes schema (needs the 'schema' extra).",
)
@click.option(
    "--kubernetes-version",
    metavar="MAJOR.MINOR",
    help="Kubernetes version of the --schema schemas [default: the newest known].",
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour text output (auto: only on a terminal, and not under NO_COLOR).",
)
@stdin_name_option
def check(
    paths: tuple[str, ...],
    config_path: str | None,
    objects: tuple[str, ...],
    namespace: str | None,
    outputs: tuple[str, ...],
    fail_on_mutation: bool,
    use_schema: bool,
    kubernetes_version: str | None,
    color: str,
    stdin_name: str,
) -> None:
    """Dry-run admission over manifests: report violations and what admission would change.

    Reads files, directories (*.yaml, *.yml, *.json, recursively) and - for stdin. Each
    workload is admitted as written and as the Pod its controller would create; then the
    mutating chain runs once more and must change nothing.
    """
    targets = _outputs(outputs)
    if kubernetes_version and not use_schema:
        fail("--kubernetes-version needs --schema")
    schema: SchemaCheck | None = None
    if use_schema:
        from webhooks.dryrun.schema import KubernetesSchema, SchemaUnavailable

        try:
            schema = KubernetesSchema(kubernetes_version)
        except SchemaUnavailable as exc:
            fail(str(exc))
    run = prepare(paths, config_path, objects, namespace, stdin_name, schema)
    report = run.report
    for doc in run.documents:
        checked = admit(run, doc)
        if checked is not None:
            report.checked.append(checked)
    for problem in report.problems:
        click.echo(str(problem), err=True)
    version = _version()
    for name, target in targets:
        options = formats.Options(
            fail_on_mutation=fail_on_mutation,
            color=target is None and _color(color),
            rules=formats.rules_of(REGISTRY.plugins),
            tool_version=version,
        )
        rendered = formats.render(name, report, options)
        if target is None:
            click.echo(rendered, nl=False, color=options.color)
        else:
            try:
                Path(target).write_text(rendered, encoding="utf-8")
            except OSError as exc:
                fail(f"{target}: cannot write: {exc.strerror}")
    sys.exit(report.exit_code(fail_on_mutation))


@click.command()
@_input
@config_option()
@objects_option
@namespace_option
@stdin_name_option
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
    on the output finds nothing to change. Violations go to stderr (exit 1); nothing is
    printed when an input cannot be read (exit 2), so a pipe into `kubectl apply` never
    applies half a stream.
    """
    run = prepare(paths, config_path, objects, namespace, stdin_name)
    engine, report = run.engine, run.report
    if report.problems:
        for problem in report.problems:
            click.echo(str(problem), err=True)
        sys.exit(USAGE_ERROR)
    out: list[Any] = []
    lists: dict[int, list[Any]] = {}
    for doc in run.documents:
        checked = admit(run, doc)
        obj = doc.obj
        if checked is not None:
            report.checked.append(checked)
            obj = engine.written(checked)
        if doc.parent is None:
            if obj is not None:
                out.append(obj)
            continue
        items = lists.get(id(doc.parent))
        if items is None:
            items = lists[id(doc.parent)] = []
            out.append({**doc.parent, "items": items})
        items.append(obj)
    if report.problems:
        for problem in report.problems:
            click.echo(str(problem), err=True)
        sys.exit(USAGE_ERROR)
    for item in formats.lines(report, formats.Options()):
        if item.failing:
            where = f"{item.checked.document.path}:{item.finding.line}"
            click.echo(f"{where}: {item.rule}: {item.message}", err=True)
    click.echo(dump_all(out), nl=False)
    sys.exit(report.exit_code())
