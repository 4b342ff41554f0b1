"""Readiness checks besides the certificate: what must hold before a pod takes reviews."""

from __future__ import annotations

from webhooks.cluster.api import ApiCluster
from webhooks.server.app import ReadyCheck


def cluster_check(cluster: ApiCluster) -> ReadyCheck:
    """A readiness check that fails until every cluster cache has completed its first list.

    Why: a pod that took traffic with empty caches would send every lookup to the API
    server as a live GET at once (a surge on each rollout) and fail reviews if it is slow.
    Once synced the check stays green: hits are served from the cache even when the API
    server is away, and misses fail fast with an InternalError status.
    """

    def check() -> str | None:
        pending = cluster.unsynced()
        if not pending:
            return None
        parts = []
        for name in pending:
            error = cluster.informers[name].last_error
            parts.append(f"{name} ({error})" if error else name)
        return "cluster cache not synced: " + ", ".join(parts)

    return check
