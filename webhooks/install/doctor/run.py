"""The checks ``doctor`` runs, in the order it prints them, and running them.

Why one list: the order is what a user reads top to bottom (does it exist, is it trusted,
does it answer, can it deadlock, is it fast enough, does the cluster around it agree, will
it stay up), and a check added anywhere else would be missed by the CLI and by the docs'
table alike. A check that raises for something
unexpected becomes a ``fail`` line naming it, so one bug cannot hide the other checks.
"""

from __future__ import annotations

from typing import Final

from webhooks.install.doctor import (
    apis,
    availability,
    ca_bundle,
    configurations,
    endpoints,
    fail_closed_scope,
    round_trip,
    timeouts,
    twins,
)
from webhooks.install.doctor.findings import Finding, Status
from webhooks.install.doctor.installation import Check, Installation

CHECKS: Final[tuple[tuple[str, Check], ...]] = (
    (configurations.CHECK, configurations.check),
    (ca_bundle.CHECK, ca_bundle.check),
    (endpoints.CHECK, endpoints.check),
    (round_trip.CHECK, round_trip.check),
    (fail_closed_scope.CHECK, fail_closed_scope.check),
    (timeouts.CHECK, timeouts.check),
    (twins.CHECK, twins.check),
    (apis.CHECK, apis.check),
    (availability.CHECK, availability.check),
)


def run(installation: Installation) -> list[Finding]:
    """Every check's findings on ``installation``, in :data:`CHECKS` order.

    Why a check that raises is a finding and not a crash: doctor is run during an incident,
    and the other checks' answers are worth more than a traceback.
    """
    findings: list[Finding] = []
    for name, check in CHECKS:
        try:
            findings.extend(check(installation))
        except Exception as exc:  # a check's bug: said as its line, the rest still run
            reason = f"the check failed: {type(exc).__name__}: {' '.join(str(exc).split())}"
            findings.append(Finding(name, Status.FAIL, reason, "report this as a bug"))
    return findings
