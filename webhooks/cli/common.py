"""What every ``placement-webhooks`` subcommand shares: the error exit and the option stacks.

Why one module: exit codes and the ``placement-webhooks: reason`` line on stderr are the
interface scripts and pipelines read, and ``--config``, ``--objects``, ``--namespace`` and
PATH must mean the same in every command that takes them.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn

import click

from webhooks.cluster.files import ObjectsError, StaticCluster, read_objects
from webhooks.configfile import read_config
from webhooks.core.config import Config, ConfigError
from webhooks.dryrun.engine import SchemaCheck
from webhooks.dryrun.report import Report
from webhooks.dryrun.run import dry_run
from webhooks.k8s.releases import DRA_EXTENDED_RESOURCE
from webhooks.manifests.reader import STDIN, STDIN_NAME, Manifests, load

#: The exit code for unusable input or usage.
USAGE_ERROR = 2


def fail(message: str, code: int = USAGE_ERROR) -> NoReturn:
    """Print ``message`` to stderr and exit ``code`` (by default 2, unusable input).

    Why the prefix: the line must say which program refused when it lands in a CI log.
    """
    click.echo(f"placement-webhooks: {message}", err=True)
    sys.exit(code)


def refuse_empty(paths: Iterable[str], what: str, *, stdin: bool = True) -> None:
    """Exit 2 when one of ``paths`` is the empty string, naming the argument it was given as.

    Why: ``""`` is what an unset variable makes of ``check "$DIR"`` in a CI script, and taken
    as a path it names the current directory, so the job would check the wrong files and
    pass. kubectl refuses it too (``-f ""``).
    """
    if any(path == "" for path in paths):
        where = "a file, a directory, or - for stdin" if stdin else "a file or a directory"
        fail(f'an empty {what} argument (""): give {where}')


def config_option(help: str = "Config YAML.") -> Callable[[Any], Any]:
    """The ``--config`` option, passed on as ``config_path``.

    Why a function: ``webhook-config`` explains what the file changes for it.
    """
    return click.option("--config", "config_path", type=click.Path(dir_okay=False), help=help)


objects_option = click.option(
    "--objects",
    multiple=True,
    help="Cluster objects (RuntimeClass, Namespace) as YAML/JSON; repeatable.",
)


def read_config_or_exit(path: str | None) -> Config:
    """The config file at ``path`` (``None``: the defaults); exits 2 naming file and key.

    Why exit here: a bad config is the caller's input, never a crash worth a traceback.
    """
    try:
        return read_config(path)
    except ConfigError as exc:
        fail(f"config: {exc}")


#: The feature gates ``--feature-gates`` knows. Only names: a gate's default is the
#: release's (:mod:`webhooks.k8s.releases`), and what is not given keeps it.
COMPARISON_OPERATORS = "TaintTolerationComparisonOperators"
FEATURE_GATES: tuple[str, ...] = (COMPARISON_OPERATORS,)
#: ``explain`` also knows KEP-5004's gate: whether DeviceClasses serve extended resources.
EXPLAIN_GATES: tuple[str, ...] = (*FEATURE_GATES, DRA_EXTENDED_RESOURCE)

feature_gates_option = click.option(
    "--feature-gates",
    "feature_gates",
    multiple=True,
    metavar="GATE=true|false[,...]",
    help="Kubernetes feature gates the cluster runs with, as kube-apiserver and "
    f"kube-scheduler take them; known: {', '.join(FEATURE_GATES)} (the Gt/Lt toleration "
    "operators: accepted by taint-toleration-rules, matched by the scheduler).",
)


def parse_feature_gates(
    values: Iterable[str], known: Sequence[str] = FEATURE_GATES
) -> dict[str, bool]:
    """``--feature-gates`` values (``A=true,B=false``, repeatable) as a dict; exits 2 naming
    an unknown gate or a value that is not a boolean.

    Why unknown gates are refused: a misspelt gate would silently leave the feature off,
    which is exactly what the flag was given to change (the Kubernetes components refuse
    them too).
    """
    gates: dict[str, bool] = {}
    for value in values:
        for part in value.split(","):
            if not part.strip():
                continue
            name, sep, raw = part.strip().partition("=")
            if name not in known:
                names = ", ".join(known)
                fail(f"--feature-gates: unknown feature gate {name!r} (known: {names})")
            if not sep or raw.lower() not in ("true", "false"):
                fail(f"--feature-gates: {name} must be set to true or false, got {part.strip()!r}")
            gates[name] = raw.lower() == "true"
    return gates


def with_gates(config: Config, gates: Mapping[str, bool]) -> Config:
    """``config`` as the cluster's gates make it: ``TaintTolerationComparisonOperators``
    sets ``taint-toleration-rules``' ``comparisonOperators``.

    Why the flag wins over the file: the gate is a fact about the cluster, and the setting
    only models it.
    """
    if COMPARISON_OPERATORS not in gates:
        return config
    name = "taint-toleration-rules"
    rules = config.plugins[name]
    settings = dataclasses.replace(rules.settings, comparison_operators=gates[COMPARISON_OPERATORS])
    plugins = {**config.plugins, name: dataclasses.replace(rules, settings=settings)}
    return dataclasses.replace(config, plugins=plugins)


def load_objects(paths: Iterable[str]) -> StaticCluster:
    """The ``--objects`` files as a :class:`StaticCluster`; exits 2 naming the file.

    Why exit here: like the config, these files are the caller's input.
    """
    refuse_empty(paths, "--objects")
    try:
        return read_objects(paths)
    except ObjectsError as exc:
        fail(str(exc))


namespace_option = click.option(
    "-n", "--namespace", help="Namespace for objects that name none [default: default]."
)
stdin_name_option = click.option(
    "--stdin-name", default=STDIN_NAME, show_default=True, help="File name to report for stdin."
)


def manifest_inputs(command: Callable[..., Any]) -> Callable[..., Any]:
    """The option stack of every command that admits manifests offline.

    ``--config``, ``--objects``, ``-n/--namespace`` and ``--stdin-name``, applied in one
    place so the commands cannot drift apart.
    """
    for option in (stdin_name_option, namespace_option, objects_option, config_option()):
        command = option(command)
    return command


def report_problems(problems: Iterable[object]) -> None:
    """Print each unusable input as its ``file:line: reason`` line on stderr."""
    for problem in problems:
        click.echo(str(problem), err=True)


def read_manifests(
    paths: Sequence[str], stdin_name: str, *, what: str = "PATH", skip_other_files: bool = False
) -> Manifests:
    """Every document under ``paths`` (``-`` reads stdin); exits 2 when there are no paths.

    Why problems are returned, not fatal: ``check`` still reports on what it could read,
    while ``mutate`` must print nothing at all; each command decides.
    """
    if not paths:
        fail(f"no input: give {what} as files, directories, or - for stdin")
    refuse_empty(paths, what)
    stdin = sys.stdin.buffer if STDIN in paths else None
    return load(paths, stdin, stdin_name, skip_other_files=skip_other_files)


def dry_run_inputs(
    paths: Sequence[str],
    config: Config,
    objects: Sequence[str],
    namespace: str | None,
    stdin_name: str,
    *,
    schema: SchemaCheck | None = None,
    skip_other_files: bool = False,
) -> tuple[Report, Manifests]:
    """Read PATH and ``--objects`` and dry-run the manifests; the report and what was read.

    Why one function: ``check``, ``mutate`` and ``explain`` must admit the same input the
    same way; what they do with problems and the report is theirs.
    """
    cluster = load_objects(objects)
    manifests = read_manifests(paths, stdin_name, skip_other_files=skip_other_files)
    report = dry_run(
        manifests.documents,
        config,
        cluster,
        namespace=namespace or "default",
        schema=schema,
        problems=manifests.problems,
        files=manifests.files,
    )
    return report, manifests
