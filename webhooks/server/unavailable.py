"""What the server tells about settings its cluster's release does not serve.

Why its own module: the master says it once in the log at start-up and after each reload,
and every worker says it on ``/readyz`` and as a gauge; the three must name the same
settings in the same words (:mod:`webhooks.core.availability` decides which).

Readiness stays OK. Why: the rest of the policy is served as configured, and a pod that
never became ready would take every other plugin's enforcement down with the one setting
that cannot work; an operator learns of it from the log line, the ``/readyz`` detail and
the gauge instead.
"""

from __future__ import annotations

from typing import Any

from webhooks.core.availability import Unavailable, unavailable
from webhooks.k8s.releases import ServerRelease
from webhooks.plugins import REGISTRY

UNAVAILABLE = "placement_webhooks_unavailable_settings"
UNAVAILABLE_HELP = (
    "1 for each enabled setting the API server's Kubernetes release does not serve by "
    "default, by setting (its config key path) and missing (the feature gate)."
)


def settings_unavailable(config: Any, found: ServerRelease | None) -> tuple[Unavailable, ...]:
    """The settings of ``config`` that ``found``'s release does not serve; none without a
    cluster (nothing is read from one, so nothing depends on its release)."""
    if found is None:
        return ()
    return unavailable(config, REGISTRY, found.release)


def start_lines(config: Any, found: ServerRelease | None) -> list[tuple[str, str]]:
    """The master's log lines as (level, text): the release, then one line per setting.

    Why the release is said too: every line after it is judged by it, and an assumed one
    (a server that could not be asked) must be visible beside what it decided.
    """
    if found is None:
        return []
    if found.note:
        lines = [("warning", f"cluster: {found.note}")]
    else:
        lines = [("info", f"cluster: Kubernetes {found.release.name} ({found.reported})")]
    return lines + [("warning", item.line) for item in settings_unavailable(config, found)]


def readyz_detail(items: tuple[Unavailable, ...], found: ServerRelease | None) -> str:
    """What ``/readyz`` adds after ``ok`` (``""`` when every setting works)."""
    if not items or found is None:
        return ""
    count = f"{len(items)} setting{'s' if len(items) > 1 else ''}"
    head = (
        f"{count} cannot work on Kubernetes {found.release.name}; ready all the same, as "
        "the rest of the policy is served:\n"
    )
    return head + "".join(f"- {item.line}\n" for item in items)


def register(registry: Any, items: tuple[Unavailable, ...]) -> None:
    """Add the gauge to a worker's ``registry``, one series at 1 per unavailable setting.

    Why ``livemax``: every worker of a pod judges the same config against the same
    release, and a replaced worker's series leaves with it.
    """
    from prometheus_client import Gauge

    gauge = Gauge(
        UNAVAILABLE,
        UNAVAILABLE_HELP,
        ["setting", "missing"],
        multiprocess_mode="livemax",
        registry=registry,
    )
    for item in items:
        gauge.labels(item.setting, item.missing).set(1)
