"""What ``doctor`` read of one installation, handed to every check.

Why read once and pass around: the checks look at the same configurations, config and
release from different sides; reading them once keeps the cluster's load to a few GETs, and
lets every check be tested on a plain value without an API server. A check that needs more
(endpoints, a Deployment, a dry-run create) asks through ``api`` itself, bounded by
``timeout``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webhooks.core.config import Config
from webhooks.install.doctor.findings import Finding
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
    """

    api: Any
    name: str
    namespace: str
    release: ServerRelease
    configurations: tuple[dict[str, Any], ...] = ()
    config: Config | None = None
    config_note: str = ""
    timeout: float = 10.0


#: A check: what was read, to what it found. Never raises for anything the cluster holds:
#: an object it cannot judge is a finding, so one odd object cannot hide the other checks.
Check = Callable[[Installation], list[Finding]]
