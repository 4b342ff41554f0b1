"""``placement-webhooks review``: answer one AdmissionReview offline, as the server would.

Exit codes are part of the interface: 0 when an answer was produced (allowed or not), 2 when
the input or configuration is unusable, with the reason on stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from webhooks.cli.common import (
    config_option,
    fail,
    load_objects,
    objects_option,
    read_config_or_exit,
)
from webhooks.core.admission import Admission
from webhooks.core.plugin import PHASES
from webhooks.core.review import ReviewError
from webhooks.plugins import REGISTRY


def _read_input(source: str) -> bytes:
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except OSError as exc:
        fail(f"{source}: cannot read: {exc.strerror}")


@click.command()
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
    config = read_config_or_exit(config_path)
    if plugin is not None and plugin not in REGISTRY:
        fail(f"--plugin: unknown plugin {plugin!r} (known: {', '.join(REGISTRY.names)})")
    cluster = load_objects(objects)
    body = _read_input(review)
    admission = Admission(REGISTRY, config, cluster)
    try:
        answer = admission.handle(body, PHASES, plugin, indent=True)
    except ReviewError as exc:
        fail(f"{review}: {exc}")
    sys.stdout.buffer.write(answer.body)
    sys.stdout.buffer.write(b"\n")
