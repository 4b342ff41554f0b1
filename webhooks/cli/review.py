"""``placement-webhooks review``: answer one AdmissionReview offline, as the server would.

Exit codes are part of the interface: 0 when an answer was produced (allowed or not), 2 when
the input or configuration is unusable, with the reason on stderr.
"""

from __future__ import annotations

import sys

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
from webhooks.manifests.files import Unreadable, read_file, read_stream
from webhooks.plugins import REGISTRY
from webhooks.server.framing import MAX_BODY


def _read_input(source: str) -> bytes:
    """The review's bytes, bounded as the server bounds a request body.

    Why the server's limit: ``review`` answers what the server would, and the server
    refuses a body over ``MAX_BODY`` (413) without reading it; a FIFO, a device or a link
    to ``/dev/zero`` is refused by name instead of read forever.
    """
    try:
        if source == "-":
            return read_stream(sys.stdin.buffer, MAX_BODY, AN_ADMISSION_REVIEW)
        return read_file(source, MAX_BODY, AN_ADMISSION_REVIEW)
    except Unreadable as exc:
        fail(f"{'<stdin>' if source == '-' else source}: {exc.reason}")


#: Whose limit a refusal names.
AN_ADMISSION_REVIEW = "an AdmissionReview"


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
