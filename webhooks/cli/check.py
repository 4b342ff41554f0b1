"""``placement-webhooks check``: dry-run admission over manifests, for CI.

Exit codes are the interface a pipeline reads: 0 clean; 1 violations (and mutations under
``--fail-on-mutation``); 2 unusable input or usage, each reported ``file:line: reason`` on
stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from webhooks import __version__
from webhooks.cli.common import (
    dry_run_inputs,
    fail,
    feature_gates_option,
    manifest_inputs,
    parse_feature_gates,
    read_config_or_exit,
    refuse_empty,
    report_problems,
    with_gates,
)
from webhooks.dryrun import render
from webhooks.dryrun.engine import SchemaCheck
from webhooks.dryrun.userschemas import SchemaLocationError
from webhooks.plugins import REGISTRY


def version() -> str:
    """The version for SARIF's tool section: ``webhooks.__version__``, the one string."""
    return __version__


def parse_outputs(specs: Sequence[str], known: Sequence[str]) -> list[tuple[str, str | None]]:
    """``FORMAT[=FILE]`` options as (format, file or ``None`` for stdout); exits 2 if unusable."""
    outputs: list[tuple[str, str | None]] = []
    for spec in specs:
        name, sep, target = spec.partition("=")
        if name not in known:
            fail(f"--output {spec}: unknown format {name!r} (known: {', '.join(known)})")
        if sep and not target:
            fail(f"--output {spec}: missing file name after '='")
        outputs.append((name, None if not sep or target == "-" else target))
    if sum(target is None for _, target in outputs) > 1:
        fail("--output: at most one format can go to stdout; give the others a file (FORMAT=FILE)")
    return outputs


def write_output(rendered: str, target: str | None, *, color: bool = False) -> None:
    """Write one rendered report to stdout (``None``) or its file; exits 2 if it cannot."""
    if target is None:
        click.echo(rendered, nl=False, color=color)
        return
    try:
        Path(target).write_text(rendered, encoding="utf-8")
    except OSError as exc:
        fail(f"{target}: cannot write: {exc.strerror}")


def _color(mode: str) -> bool:
    if mode != "auto":
        return mode == "always"
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def output_option(formats_help: str) -> Callable[[Any], Any]:
    """The repeatable ``-o/--output FORMAT[=FILE]`` option; why shared: one spelling everywhere."""
    return click.option(
        "-o",
        "--output",
        "outputs",
        multiple=True,
        default=("text",),
        show_default=True,
        metavar="FORMAT[=FILE]",
        help=f"{formats_help}; repeatable, each to stdout or its own FILE.",
    )


def _schema(
    use_schema: bool, version: str | None, locations: Sequence[str], missing: str
) -> SchemaCheck | None:
    """The ``--schema`` check the options ask for, its schemas loaded once; exits 2 if unusable."""
    if not use_schema:
        for given, option in (
            (version, "--kubernetes-version"),
            (locations, "--schema-location"),
            (missing != "error", "--missing-schemas"),
        ):
            if given:
                fail(f"{option} needs --schema")
        return None
    from webhooks.dryrun.schema import MISSING_LEVELS, KubernetesSchema, SchemaUnavailable
    from webhooks.dryrun.userschemas import load_locations

    refuse_empty(locations, "--schema-location", stdin=False)
    if "-" in locations:
        fail("--schema-location -: schemas are read from files; stdin holds the manifests")
    level = next(m for m in MISSING_LEVELS if m == missing)
    try:
        user = load_locations(locations)
        return KubernetesSchema(version, user=user, missing=level)
    except (SchemaUnavailable, SchemaLocationError) as exc:
        fail(str(exc))


@click.command()
@click.argument("paths", nargs=-1, metavar="PATH... | -")
@manifest_inputs
@output_option("text, json, junit, sarif or github")
@click.option(
    "--fail-on-mutation", is_flag=True, help="Exit 1 when admission would change an object."
)
@click.option(
    "--enforce-all",
    is_flag=True,
    help="Treat every plugin's action as enforce (for pipelines that gate on the final policy).",
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
    "--schema-location",
    "schema_locations",
    multiple=True,
    metavar="PATH",
    help="With --schema: a file or directory of CustomResourceDefinitions or JSON schemas "
    "for the kinds Kubernetes does not build in; repeatable, the first to cover a kind wins.",
)
@click.option(
    "--missing-schemas",
    type=click.Choice(["error", "warn", "skip"]),
    default="error",
    show_default=True,
    help="With --schema: what an object no schema covers is (not built in, no CRD or schema "
    "given): a failing finding, a warning, or not checked.",
)
@click.option(
    "--non-manifests",
    type=click.Choice(["error", "skip"]),
    default="error",
    show_default=True,
    help="What a file that holds no mapping is (empty, only comments, a JSON array or a "
    "scalar): unusable input that exits 2, or a file that is not a manifest, skipped (for "
    "a pre-commit hook handed every staged YAML and JSON file). Syntax errors exit 2 either way.",
)
@feature_gates_option
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour text output (auto: only on a terminal, and not under NO_COLOR).",
)
def check(
    paths: tuple[str, ...],
    config_path: str | None,
    objects: tuple[str, ...],
    namespace: str | None,
    stdin_name: str,
    outputs: tuple[str, ...],
    fail_on_mutation: bool,
    enforce_all: bool,
    use_schema: bool,
    kubernetes_version: str | None,
    schema_locations: tuple[str, ...],
    missing_schemas: str,
    non_manifests: str,
    feature_gates: tuple[str, ...],
    color: str,
) -> None:
    """Dry-run admission over manifests: report violations and what admission would change.

    Reads files, directories (*.yaml, *.yml, *.json, recursively) and - for stdin. Each
    workload is admitted as written and as the Pod its controller would create; then the
    mutating chain runs once more and must change nothing. Violations of plugins whose
    action is warn or audit are reported as warnings and do not fail the run. A kind is
    its API group and name: one of another group named like a built-in (an
    apps.kruise.io DaemonSet) is not admitted and is reported as skipped.
    """
    targets = parse_outputs(outputs, list(render.FORMATS))
    schema = _schema(use_schema, kubernetes_version, schema_locations, missing_schemas)
    gates = parse_feature_gates(feature_gates)
    config = with_gates(read_config_or_exit(config_path), gates)
    if enforce_all:
        config = config.enforcing()
    try:
        report, _ = dry_run_inputs(
            paths,
            config,
            objects,
            namespace,
            stdin_name,
            schema=schema,
            skip_other_files=non_manifests == "skip",
        )
    except SchemaLocationError as exc:  # a catalog file read when an object first needed it
        fail(str(exc))
    report_problems(report.problems)
    tool_version = version()
    for name, target in targets:
        options = render.Options(
            fail_on_mutation=fail_on_mutation,
            color=target is None and _color(color),
            rules=render.rules_of(REGISTRY.plugins),
            tool_version=tool_version,
        )
        write_output(render.render(name, report, options), target, color=options.color)
    sys.exit(report.exit_code(fail_on_mutation))
