"""What every ``placement-webhooks`` subcommand shares: the error exit and the input options.

Why one module: exit codes and the ``placement-webhooks: reason`` line on stderr are the
interface scripts and pipelines read, and ``--config`` and ``--objects`` must mean the same
in ``review``, ``check``, ``mutate`` and ``webhook-config``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

import click

from webhooks.cluster.files import ObjectsError, StaticCluster, read_objects
from webhooks.configfile import read_config
from webhooks.core.config import Config, ConfigError

#: The exit code for unusable input or usage.
USAGE_ERROR = 2


def fail(message: str, code: int = USAGE_ERROR) -> NoReturn:
    """Print ``message`` to stderr and exit ``code`` (by default 2, unusable input).

    Why the prefix: the line must say which program refused when it lands in a CI log.
    """
    click.echo(f"placement-webhooks: {message}", err=True)
    sys.exit(code)


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


def load_config(path: str | None) -> Config:
    """The config file at ``path`` (``None``: the defaults); exits 2 naming file and key.

    Why exit here: a bad config is the caller's input, never a crash worth a traceback.
    """
    try:
        return read_config(path)
    except ConfigError as exc:
        fail(f"config: {exc}")


def load_objects(paths: Iterable[str]) -> StaticCluster:
    """The ``--objects`` files as a :class:`StaticCluster`; exits 2 naming the file.

    Why exit here: like the config, these files are the caller's input.
    """
    try:
        return read_objects(paths)
    except ObjectsError as exc:
        fail(str(exc))
