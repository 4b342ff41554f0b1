"""The ``placement-webhooks`` command: the same core as the server, from a shell or CI.

One module per command; this package is the only code that reads arguments or ends the
process, so everything it calls can be used as a library. Exit codes everywhere: 0 clean,
1 findings, 2 unusable input (one line on stderr saying which).
"""

from __future__ import annotations

import click

from webhooks.cli.certs import certs
from webhooks.cli.dryrun_commands import check, mutate
from webhooks.cli.explain import explain
from webhooks.cli.review import review
from webhooks.cli.serve import serve
from webhooks.cli.webhook_config import webhook_config


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="placement-webhooks")
def main() -> None:
    """Admission webhooks for where pods may run: tolerations, taints, affinity, overhead."""


for command in (serve, review, check, mutate, explain, certs, webhook_config):
    main.add_command(command)
