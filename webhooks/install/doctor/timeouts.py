"""``timeouts``: every webhook's timeoutSeconds is within the API's limits, and a pod create
cannot wait on fail-closed webhooks longer than the budget.

Why a budget: each fail-closed webhook may take its whole ``timeoutSeconds`` before the
request is refused, and they add up. The API server calls mutating webhooks one after the
other (a ``reinvocationPolicy: IfNeeded`` one possibly twice) and validating webhooks in
parallel, so the worst a pod create waits is the sum of the mutating ones (twice for those
reinvoked) plus the longest validating one, over every configuration in the cluster.

The figure used is :data:`CHAIN_BUDGET_SECONDS`, 30 s: the most the API lets one webhook
take (``timeoutSeconds`` must be 1 to 30, admissionregistration.k8s.io/v1 validation).
A chain that can wait longer than any single webhook is allowed to is the sign of
webhooks stacked without anyone adding them up; kube-apiserver's own request timeout
(``--request-timeout``, 60 s by default) cuts the create off somewhere past it, and the
clients that create pods (controllers, kubectl) commonly give up earlier.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from webhooks.install.doctor.findings import Finding, Status
from webhooks.install.doctor.installation import Installation
from webhooks.install.doctor.scope import DEFAULT_TIMEOUT_SECONDS, fails_closed, hook_covers
from webhooks.install.webhookconfig import KINDS

CHECK: Final = "timeouts"
#: The API's limits on one webhook's timeoutSeconds.
MIN_TIMEOUT: Final = 1
MAX_TIMEOUT: Final = 30
#: The most a pod create should wait on fail-closed webhooks (see the module's docstring).
CHAIN_BUDGET_SECONDS: Final = 30


def check(installation: Installation) -> list[Finding]:
    """A finding per out-of-range timeout of ours, one for the chain's worst case."""
    findings = []
    for configuration in installation.configurations:
        for hook in configuration.get("webhooks") or []:
            seconds = timeout_of(hook)
            if not MIN_TIMEOUT <= seconds <= MAX_TIMEOUT:
                findings.append(
                    Finding(
                        CHECK,
                        Status.FAIL,
                        f"{configuration.get('kind')} webhook {hook.get('name')}: timeoutSeconds "
                        f"{seconds} is outside {MIN_TIMEOUT}..{MAX_TIMEOUT} (the API's limit)",
                        "set webhooks.timeoutSeconds between 1 and 30 (the chart's default is 5)",
                    )
                )
    worst, parts = chain_seconds([*installation.configurations, *installation.others])
    shown = " + ".join(parts) or "none"
    if worst > CHAIN_BUDGET_SECONDS:
        findings.append(
            Finding(
                CHECK,
                Status.WARN,
                f"a pod create may wait {worst} s on fail-closed webhooks ({shown}), over the "
                f"{CHAIN_BUDGET_SECONDS} s budget (the most one webhook may take)",
                "lower the timeoutSeconds of fail-closed webhooks, or make some fail open",
            )
        )
    if not findings:
        findings.append(
            Finding(
                CHECK,
                Status.OK,
                f"timeouts within {MIN_TIMEOUT}..{MAX_TIMEOUT} s; a pod create waits at most "
                f"{worst} s on fail-closed webhooks ({shown}; budget {CHAIN_BUDGET_SECONDS} s)",
            )
        )
    return findings


def timeout_of(hook: Mapping[str, Any]) -> int:
    """``timeoutSeconds``, or the API's default when unset."""
    value = hook.get("timeoutSeconds")
    return value if isinstance(value, int) else DEFAULT_TIMEOUT_SECONDS


def chain_seconds(configurations: list[dict[str, Any]]) -> tuple[int, list[str]]:
    """The worst a pod CREATE waits on the fail-closed webhooks covering it, and the terms
    (``name 5s``) it adds up: mutating in sequence (reinvoked ones twice), the longest
    validating one in parallel."""
    mutating: list[tuple[str, int]] = []
    validating: list[tuple[str, int]] = []
    for configuration in configurations:
        for hook in configuration.get("webhooks") or []:
            if not fails_closed(hook) or not hook_covers(
                hook, "", "pods", ("CREATE",), namespaced=True
            ):
                continue
            seconds = timeout_of(hook)
            name = str(hook.get("name"))
            if configuration.get("kind") == KINDS["mutate"]:
                calls = 2 if hook.get("reinvocationPolicy") == "IfNeeded" else 1
                mutating.append(
                    (f"{name} {seconds}s" + (" x2" if calls == 2 else ""), seconds * calls)
                )
            else:
                validating.append((f"{name} {seconds}s", seconds))
    parts = [text for text, _ in mutating]
    total = sum(seconds for _, seconds in mutating)
    if validating:
        text, seconds = max(validating, key=lambda item: item[1])
        parts.append(f"max of validating: {text}")
        total += seconds
    return total, parts
