"""The cluster caches' figures as library series that add up across workers.

Why a copy: each worker keeps its own list+watch caches and counts its own lists, watch
endings and lookups, in plain Python objects that no other process can read, and
prometheus-client's multiprocess mode supports neither scrape-time gauges nor custom
collectors across processes. So each worker copies its figures into library series about
once a second and before it answers a scrape (:meth:`Metrics.sync`):

- counters (lists, watch endings, lookups) grow by what the cache counted since the last
  copy, so the pod's total is the sum over workers, and never goes backwards when a
  worker is replaced;
- ``synced`` and ``watching`` are gauges in ``livemin`` mode: 1 for the pod only while
  every live worker's cache is synced (or watching), which is what an alert wants;
- ``objects`` is a ``livemax`` gauge: the workers hold the same objects, give or take a
  watch event.
"""

from __future__ import annotations

import threading
from collections import Counter as Tally
from typing import Any

from webhooks.cluster.api import ApiCluster

SYNCED = "placement_webhooks_cluster_cache_synced"
WATCHING = "placement_webhooks_cluster_cache_watching"
OBJECTS = "placement_webhooks_cluster_cache_objects"
LISTS = "placement_webhooks_cluster_lists_total"
WATCHES = "placement_webhooks_cluster_watches_total"
LOOKUPS = "placement_webhooks_cluster_lookups_total"


class ClusterSeries:
    """Copies one worker's cluster figures into series of ``registry``."""

    def __init__(self, cluster: ApiCluster, registry: Any) -> None:
        from prometheus_client import Counter, Gauge

        self.cluster = cluster
        self._synced = Gauge(
            SYNCED,
            "1 once the cache of a resource has completed its first list (every worker's).",
            ["resource"],
            multiprocess_mode="livemin",
            registry=registry,
        )
        self._watching = Gauge(
            WATCHING,
            "1 while a watch stream of the resource is open (in every worker).",
            ["resource"],
            multiprocess_mode="livemin",
            registry=registry,
        )
        self._objects = Gauge(
            OBJECTS,
            "Objects held in the cache of a resource.",
            ["resource"],
            multiprocess_mode="livemax",
            registry=registry,
        )
        self._lists = Counter(
            LISTS,
            "List requests (pages) made by the caches, by result.",
            ["resource", "result"],
            registry=registry,
        )
        self._watches = Counter(
            WATCHES,
            "Watch streams ended: at the server timeout, expired (410 Gone), or in error.",
            ["resource", "end"],
            registry=registry,
        )
        self._lookups = Counter(
            LOOKUPS,
            "Lookups by result: cache hit, found or not found by a live GET, or error.",
            ["resource", "result"],
            registry=registry,
        )
        self._copied: Tally[tuple[str, str, str]] = Tally()
        self._lock = threading.Lock()  # the sync thread and a scrape may copy at once
        for name in cluster.informers:  # every series present from the start, at zero
            for result in ("ok", "error"):
                self._lists.labels(name, result)
            for end in ("ended", "expired", "error"):
                self._watches.labels(name, end)

    def _add(self, counter: Any, key: tuple[str, str, str], value: int) -> None:
        grown = value - self._copied[key]
        if grown > 0:
            counter.labels(key[1], key[2]).inc(grown)
            self._copied[key] = value

    def update(self) -> None:
        """Copy the current figures (gauges set, counters grown by their increase)."""
        with self._lock:
            self._update()

    def _update(self) -> None:
        for name, informer in self.cluster.informers.items():
            self._synced.labels(name).set(float(informer.synced))
            self._watching.labels(name).set(float(informer.watching))
            self._objects.labels(name).set(float(len(informer)))
            for result in ("ok", "error"):
                self._add(self._lists, ("lists", name, result), informer.counts[f"list_{result}"])
            for end in ("ended", "expired", "error"):
                self._add(self._watches, ("watches", name, end), informer.counts[f"watch_{end}"])
        for (resource, result), count in self.cluster.lookup_counts().items():
            self._add(self._lookups, ("lookups", resource, result), count)
