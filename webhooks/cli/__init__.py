"""The ``placement-webhooks`` command: the same core as the server, from a shell or CI.

One module per command; this package is the only code that reads arguments or ends the
process, so everything it calls can be used as a library. Exit codes everywhere: 0 clean,
1 findings, 2 unusable input (one line on stderr saying which).
"""

from __future__ import annotations

import click

from webhooks import __version__, collector
from webhooks.cli import audit as _audit
from webhooks.cli import certs as _certs
from webhooks.cli import check as _check
from webhooks.cli import doctor as _doctor
from webhooks.cli import explain as _explain
from webhooks.cli import export as _export
from webhooks.cli import mutate as _mutate
from webhooks.cli import policytest as _policytest
from webhooks.cli import probe as _probe
from webhooks.cli import review as _review
from webhooks.cli import serve as _serve
from webhooks.cli import webhook_config as _webhook_config


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="placement-webhooks")
def main() -> None:
    """Admission webhooks for where pods may run: tolerations, taints, affinity, overhead."""
    collector.tune()  # every command and the server's processes (webhooks/collector.py)


for _command in (
    _serve.serve,
    _review.review,
    _check.check,
    _mutate.mutate,
    _policytest.policytest,
    _explain.explain,
    _audit.audit,
    _certs.certs,
    _webhook_config.webhook_config,
    _export.export,
    _probe.probe,
    _doctor.doctor,
):
    main.add_command(_command)
