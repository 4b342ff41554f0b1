"""What ``doctor`` read of one installation, handed to every check.

Why read once and pass around: the checks look at the same configurations, config and
release from different sides; reading them once keeps the cluster's load to a few GETs, and
lets every check be tested on a plain value without an API server. A check that needs more
(endpoints, a Deployment, a dry-run create) asks through ``api`` itself, bounded by
``timeout``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from webhooks.core.config import Config
from webhooks.install.doctor.findings import Finding, Status
from webhooks.k8s.releases import ServerRelease


@dataclass(frozen=True, slots=True)
class Installation:
    """One installation as found in the cluster.

    ``name`` names both webhook configurations (the chart's release name by default) and
    ``namespace`` is where the server runs. ``configurations`` are the live Mutating- and
    ValidatingWebhookConfigurations of that name, as plain dicts (none found: empty).
    ``config`` is the configuration the server runs, read from the cluster (``None`` when
    it could not be found, and ``config_note`` says why). ``release`` is what ``/version``
    said. ``api`` is a ``kubernetes`` API client; ``timeout`` bounds each request.

    What :func:`~webhooks.install.doctor.gather.gather` also reads, so the checks that judge
    it stay functions of this value: ``deployment``, the Deployment that runs ``serve``
    (``None``: not found); ``services`` and ``endpoint_slices``, keyed ``namespace/name``,
    for each Service the configurations call (a Service that does not exist: ``None``);
    ``namespace_labels``, the labels of ``namespace`` (``None``: not read); ``others``,
    every other webhook configuration in the cluster; ``served_halves``, the (plugin,
    phase) halves a ``serve --native`` keeps on its webhooks (``None``: not native, every
    enabled half); ``unread``, what could not be read, each with the one-line reason.
    """

    api: Any
    name: str
    namespace: str
    release: ServerRelease
    configurations: tuple[dict[str, Any], ...] = ()
    config: Config | None = None
    config_note: str = ""
    timeout: float = 10.0
    deployment: dict[str, Any] | None = None
    services: Mapping[str, dict[str, Any] | None] = field(default_factory=dict)
    endpoint_slices: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    namespace_labels: Mapping[str, str] | None = None
    others: tuple[dict[str, Any], ...] = ()
    served_halves: frozenset[tuple[str, str]] | None = None
    unread: Mapping[str, str] = field(default_factory=dict)


#: The fix every check gives when the running config could not be found.
CONFIG_FIX = "pass -n/--namespace where the Deployment running serve is"


def config_unknown(installation: Installation, check: str, what: str) -> Finding:
    """The warning of a check that needs the running config when it was not found:
    ``what`` could not be judged, and why.

    Why a warning and not a failure: the installation may be fine; doctor only could not
    see which settings it runs.
    """
    why = installation.config_note or "the running configuration was not found"
    return Finding(check, Status.WARN, f"{what} could not be judged: {why}", CONFIG_FIX)


#: A check: what was read, to what it found. Never raises for anything the cluster holds:
#: an object it cannot judge is a finding, so one odd object cannot hide the other checks.
Check = Callable[[Installation], list[Finding]]
