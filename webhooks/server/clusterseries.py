"""The cluster source's figures as metric families, read from its caches at scrape time."""

from __future__ import annotations

from webhooks.cluster import ApiCluster
from webhooks.server.metrics import Family, Labels


def cluster_families(cluster: ApiCluster) -> list[Family]:
    """The cluster source's figures as Prometheus families, read at scrape time.

    Why these: an operator needs to see whether the caches are synced and watching, how
    often they relist or lose their watch, and how many lookups reach the API server or fail.
    """
    informers = cluster.informers.items()

    def res(name: str, *more: tuple[str, str]) -> Labels:
        return (("resource", name), *more)

    lists = [
        (res(n, ("result", r)), float(i.counts[f"list_{r}"]))
        for n, i in informers
        for r in ("ok", "error")
    ]
    watches = [
        (res(n, ("end", e)), float(i.counts[f"watch_{e}"]))
        for n, i in informers
        for e in ("ended", "expired", "error")
    ]
    lookups = sorted(
        (res(resource, ("result", result)), float(count))
        for (resource, result), count in cluster.lookup_counts().items()
    )
    return [
        Family(
            "placement_webhooks_cluster_cache_synced",
            "gauge",
            "1 once the cache of a resource has completed its first list.",
            [(res(n), float(i.synced)) for n, i in informers],
        ),
        Family(
            "placement_webhooks_cluster_cache_watching",
            "gauge",
            "1 while a watch stream of the resource is open.",
            [(res(n), float(i.watching)) for n, i in informers],
        ),
        Family(
            "placement_webhooks_cluster_cache_objects",
            "gauge",
            "Objects held in the cache of a resource.",
            [(res(n), float(len(i))) for n, i in informers],
        ),
        Family(
            "placement_webhooks_cluster_lists_total",
            "counter",
            "List requests (pages) made by the caches, by result.",
            lists,
        ),
        Family(
            "placement_webhooks_cluster_watches_total",
            "counter",
            "Watch streams ended: at the server timeout, expired (410 Gone), or in error.",
            watches,
        ),
        Family(
            "placement_webhooks_cluster_lookups_total",
            "counter",
            "Lookups by result: cache hit, found or not found by a live GET, or error.",
            lookups,
        ),
    ]
