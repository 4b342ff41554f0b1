"""``round-trip``: a dry-run Pod review posted to each webhook address gets an answer the API
server would accept.

Why beside ``endpoints``: ready endpoints prove pods are up, not that they answer a review
over TLS in time. The round trip is the probe's (:func:`webhooks.install.probe.round_trip`),
the one the chart's install hook and ``helm test`` make.
"""

from __future__ import annotations

from typing import Final

from webhooks.install.doctor.findings import Finding, Status
from webhooks.install.doctor.installation import Installation
from webhooks.install.doctor.reach import FIX_UNREACHABLE, unreachable
from webhooks.install.probe import Outcome, round_trip, targets

CHECK: Final = "round-trip"
#: The namespace of the probe's Pod: any will do, the webhooks are called directly.
PROBE_NAMESPACE: Final = "default"


def check(installation: Installation) -> list[Finding]:
    """One finding per address the webhooks are served at."""
    return [
        judge(round_trip(target, PROBE_NAMESPACE, installation.timeout), installation.name)
        for target in targets(installation.configurations)
    ]


def judge(outcome: Outcome, name: str) -> Finding:
    """The finding for one round trip (pure)."""
    who = ", ".join(outcome.target.webhooks)
    if not outcome.problem:
        decision = "allowed" if outcome.allowed else "denied"
        return Finding(
            CHECK,
            Status.OK,
            f"{who}: a dry-run Pod review was {decision} in {outcome.seconds * 1000:.0f} ms",
        )
    if unreachable(outcome.problem):
        return Finding(
            CHECK,
            Status.WARN,
            f"{who}: {outcome.target.url} is not reachable from here ({outcome.problem})",
            FIX_UNREACHABLE,
        )
    return Finding(
        CHECK,
        Status.FAIL,
        f"{who}: {outcome.target.url}: {outcome.problem}",
        f"read the server's log; `placement-webhooks probe --name {name}` repeats the round trip",
    )
