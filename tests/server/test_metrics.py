"""Metrics: the library's series per review, scrape-time gauges, and the cluster figures
copied so that workers add up (multiprocess mode checked with real processes)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from webhooks.server.clusterseries import ClusterSeries
from webhooks.server.metrics import GaugeCollector, Metrics

ROOT = Path(__file__).resolve().parents[2]


class FakeInformer:
    """What the series read from a cache: synced, watching, its size and its counts."""

    def __init__(self, synced: bool, objects: int, **counts: int) -> None:
        self.synced = self.watching = synced
        self.objects = objects
        self.counts = Counter(counts)

    def __len__(self) -> int:
        return self.objects


def _cluster(lookups: dict[tuple[str, str], int], **informers: Any) -> Any:
    return SimpleNamespace(informers=informers, lookup_counts=lambda: dict(lookups))


def _lines(text: bytes) -> set[str]:
    return {line for line in text.decode().splitlines() if not line.startswith("#")}


def test_a_review_counts_its_outcome_latency_and_each_plugin_decision() -> None:
    metrics = Metrics()
    metrics.record("/mutate", "patched", 0.003, [("default-toleration-seconds", "patched")])
    metrics.record("/validate", "denied", 0.2, [("dedicated-nodes", "denied")])
    lines = _lines(metrics.render())
    assert 'placement_webhooks_requests_total{endpoint="/mutate",outcome="patched"} 1.0' in lines
    assert (
        'placement_webhooks_plugin_decisions_total{decision="denied",plugin="dedicated-nodes"} 1.0'
        in lines
    )
    assert (
        'placement_webhooks_request_duration_seconds_bucket{endpoint="/mutate",le="0.005",'
        'outcome="patched"} 1.0'
    ) in lines


def test_scrape_time_gauges_are_read_when_scraped_and_left_out_when_unknown() -> None:
    value: list[float | None] = [3.0]
    gauges = GaugeCollector()
    gauges.add("demo_seconds", "Seconds.", lambda: value[0])
    metrics = Metrics()
    metrics.collect(gauges)
    value[0] = 7.0
    assert "demo_seconds 7.0" in _lines(metrics.render())
    value[0] = None
    assert not any(line.startswith("demo_seconds") for line in _lines(metrics.render()))


def test_cluster_counters_grow_by_their_increase_and_gauges_follow_the_cache() -> None:
    informer = FakeInformer(False, 0, list_ok=0, list_error=2)
    lookups = {("runtimeclasses", "hit"): 5}
    metrics = Metrics()
    series = ClusterSeries(_cluster(lookups, runtimeclasses=informer), metrics.registry)
    metrics.sync(series.update)
    first = _lines(metrics.render())
    assert 'placement_webhooks_cluster_cache_synced{resource="runtimeclasses"} 0.0' in first
    assert (
        'placement_webhooks_cluster_lists_total{resource="runtimeclasses",result="error"} 2.0'
        in first
    )
    informer.synced = informer.watching = True
    informer.counts["list_ok"] = 1
    lookups[("runtimeclasses", "hit")] = 8
    series.update()  # the sync thread copying between two scrapes changes nothing
    second = _lines(metrics.render())
    assert 'placement_webhooks_cluster_cache_synced{resource="runtimeclasses"} 1.0' in second
    assert (
        'placement_webhooks_cluster_lists_total{resource="runtimeclasses",result="ok"} 1.0'
        in second
    )
    assert (
        'placement_webhooks_cluster_lookups_total{resource="runtimeclasses",result="hit"} 8.0'
        in second
    )


WORKER = textwrap.dedent(
    """
    import sys
    from collections import Counter
    from types import SimpleNamespace
    from webhooks.server.clusterseries import ClusterSeries
    from webhooks.server.metrics import Metrics

    synced, hits = sys.argv[1] == "1", int(sys.argv[2])

    class Informer:
        def __init__(self):
            self.synced = self.watching = synced
            self.counts = Counter(list_ok=1)
        def __len__(self):
            return 3

    cluster = SimpleNamespace(
        informers={"runtimeclasses": Informer()},
        lookup_counts=lambda: {("runtimeclasses", "hit"): hits},
    )
    metrics = Metrics()
    assert metrics.directory is not None, "not in multiprocess mode"
    metrics.sync(ClusterSeries(cluster, metrics.registry).update)
    for _ in range(hits):
        metrics.record("/mutate", "allowed", 0.001)
    if sys.argv[3] == "render":
        sys.stdout.write(metrics.render().decode())
    else:
        metrics.stop()
    """
)


def test_in_multiprocess_mode_workers_add_up_and_caches_are_synced_only_if_all_are(
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }

    def worker(*args: str) -> str:
        run = subprocess.run(
            [sys.executable, "-c", WORKER, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=True,
        )
        return run.stdout

    worker("1", "4", "write")
    lines = set(worker("0", "2", "render").splitlines())
    assert 'placement_webhooks_requests_total{endpoint="/mutate",outcome="allowed"} 6.0' in lines
    assert (
        'placement_webhooks_cluster_lookups_total{resource="runtimeclasses",result="hit"} 6.0'
        in lines
    )
    # Both processes' gauge files are present (neither marked dead): the minimum wins.
    assert 'placement_webhooks_cluster_cache_synced{resource="runtimeclasses"} 0.0' in lines
    assert 'placement_webhooks_cluster_cache_objects{resource="runtimeclasses"} 3.0' in lines


@pytest.fixture(autouse=True)
def _single_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
