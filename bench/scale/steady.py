"""Steady pod creates at a fixed concurrency, every mode side by side, as the client sees them.

For each concurrency, rounds of one batch per mode, the modes' order rotating each round, so
machine load drifts over every mode alike. Per mode: client-side p50/p90/p99 of each
create, pods per second over its batches, CPU seconds per 1,000 pods of the processes that
answer its reviews (``serve``, Kyverno) and of its API server, and what the API server's
own admission histograms say (the mutating and validating steps, mean and p99 bucket).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from bench.scale import procs
from bench.scale.client import Created, Creator
from bench.scale.modes import Installed
from controlplane.harness.metrics import apiserver_metrics

NAMESPACE = "shop"
IMAGE = "registry.k8s.io/pause:3.10"
STEP = "apiserver_admission_step_admission_duration_seconds"


def pod(name: str, gpu: bool) -> dict[str, Any]:
    """The steady workload's pod: one container with requests; every fourth asks for a GPU,
    so ExtendedResourceToleration has work to do."""
    resources: dict[str, Any] = {"requests": {"cpu": "100m", "memory": "64Mi"}}
    if gpu:
        resources["limits"] = {"nvidia.com/gpu": "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "steady"}},
        "spec": {"containers": [{"name": "main", "image": IMAGE, "resources": resources}]},
    }


@dataclass(slots=True)
class Tally:
    """What one mode did at one concurrency, over all its batches."""

    seconds: list[float] = field(default_factory=list)
    failed: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    wall: float = 0.0
    admission_cpu: float = 0.0
    apiserver_cpu: float = 0.0
    step_before: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    step_after: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    rss_kib: int = 0
    pss_kib: int = 0

    @property
    def created(self) -> int:
        return len(self.seconds)


def _buckets(text: str, step: str) -> list[tuple[float, float]]:
    """(upper bound, cumulative count) of the API server's admission step histogram for
    pod creates, summed over its labels (``rejected``), with the ``+Inf`` bucket last."""
    sums: dict[float, float] = {}
    for line in text.splitlines():
        if not line.startswith(STEP + "_bucket{"):
            continue
        head, _, value = line.rpartition(" ")
        if f'type="{step}"' not in head or 'operation="CREATE"' not in head:
            continue
        le = head.split('le="', 1)[1].split('"', 1)[0]
        bound = float("inf") if le == "+Inf" else float(le)
        sums[bound] = sums.get(bound, 0.0) + float(value)
    return sorted(sums.items())


def _histograms(server: Any) -> dict[str, list[tuple[float, float]]]:
    text = apiserver_metrics(server)
    return {step: _buckets(text, step) for step in ("admit", "validate")}


def histogram_summary(
    before: list[tuple[float, float]], after: list[tuple[float, float]]
) -> tuple[int, float]:
    """(count, p99 bucket bound in ms) of the requests between two snapshots."""
    old = dict(before)
    delta = [(bound, count - old.get(bound, 0.0)) for bound, count in after]
    total = delta[-1][1] if delta else 0.0
    if total <= 0:
        return 0, 0.0
    for bound, count in delta:
        if count >= 0.99 * total:
            return int(total), bound * 1e3
    return int(total), float("inf")


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _batch(
    creator: Creator, concurrency: int, names: list[str], gpu_every: int = 4
) -> list[Created]:
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"

    def one(index_name: tuple[int, str]) -> Created:
        index, name = index_name
        return creator.post(path, pod(name, index % gpu_every == 0))

    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(one, enumerate(names)))


def _rotations(names: list[str], rounds: int) -> Iterator[list[str]]:
    for r in range(rounds):
        shift = r % len(names)
        yield names[shift:] + names[:shift]


def run(
    modes: dict[str, Installed],
    concurrency: int,
    *,
    per_batch: int,
    rounds: int,
    warmup: int = 20,
    prefix: str = "s",
) -> dict[str, Tally]:
    """``rounds`` batches of ``per_batch`` creates per mode at ``concurrency``."""
    creators = {name: Creator(item.server) for name, item in modes.items()}
    tallies = {name: Tally() for name in modes}
    for name, creator in creators.items():  # connections open, caches warm, JIT-free paths hot
        _batch(creator, min(concurrency, warmup), [f"{prefix}w{i}" for i in range(warmup)])
        tallies[name].step_before = _histograms(modes[name].server)
    for round_index, order in enumerate(_rotations(list(modes), rounds)):
        for name in order:
            item, tally = modes[name], tallies[name]
            names = [f"{prefix}r{round_index}-{i}" for i in range(per_batch)]
            cpu0 = procs.cpu_seconds(item.admission_pids)
            api0 = procs.cpu_seconds([item.server.component.proc.pid])
            began = time.perf_counter()
            results = _batch(creators[name], concurrency, names)
            tally.wall += time.perf_counter() - began
            tally.admission_cpu += procs.cpu_seconds(item.admission_pids) - cpu0
            tally.apiserver_cpu += procs.cpu_seconds([item.server.component.proc.pid]) - api0
            for result in results:
                if result.status == 201:
                    tally.seconds.append(result.seconds)
                else:
                    tally.failed += 1
                    key = f"{result.status} {result.message[:120]}"
                    tally.errors[key] = tally.errors.get(key, 0) + 1
    for name, item in modes.items():
        tallies[name].step_after = _histograms(item.server)
        if item.admission_pids:
            tallies[name].rss_kib, tallies[name].pss_kib = procs.memory_kib(item.admission_pids)
    return tallies


def table(concurrency: int, tallies: dict[str, Tally], floor: str = "in-tree") -> list[str]:
    """The printed rows for one concurrency: latency, throughput, CPU, the API server's view."""
    lines = [
        f"steady creates, concurrency {concurrency}",
        f"  {'mode':16} {'pods':>6} {'fail':>5} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7}"
        f" {'+p50':>6} {'+p99':>6} {'pods/s':>7} {'adm CPU s/1k':>12} {'api CPU s/1k':>12}"
        f" {'admit p99':>9} {'valid p99':>9} {'RSS MiB':>7} {'PSS MiB':>7}",
    ]
    base = tallies.get(floor)
    for name, tally in tallies.items():
        if not tally.seconds:
            lines.append(f"  {name:16} no pod created; errors: {tally.errors}")
            continue
        p50, p99 = statistics.median(tally.seconds) * 1e3, percentile(tally.seconds, 0.99) * 1e3
        add50 = add99 = "-"
        if base is not None and base.seconds and name != floor:
            add50 = f"{p50 - statistics.median(base.seconds) * 1e3:6.2f}"
            add99 = f"{p99 - percentile(base.seconds, 0.99) * 1e3:6.2f}"
        per_k = 1000 / tally.created
        adm = f"{tally.admission_cpu * per_k:12.2f}" if tally.admission_cpu else f"{'-':>12}"
        steps = []
        for step in ("admit", "validate"):
            _, bound = histogram_summary(tally.step_before[step], tally.step_after[step])
            steps.append(f"{'<=' + format(bound, 'g'):>9}")
        lines.append(
            f"  {name:16} {tally.created:6d} {tally.failed:5d} {p50:7.2f}"
            f" {percentile(tally.seconds, 0.9) * 1e3:7.2f} {p99:7.2f} {add50:>6} {add99:>6}"
            f" {tally.created / tally.wall:7.0f} {adm}"
            f" {tally.apiserver_cpu * per_k:12.2f} {steps[0]} {steps[1]}"
            + (
                f" {tally.rss_kib / 1024:7.0f} {tally.pss_kib / 1024:7.0f}"
                if tally.pss_kib
                else f" {'-':>7} {'-':>7}"
            )
        )
        for error, count in sorted(tally.errors.items(), key=lambda kv: -kv[1])[:2]:
            lines.append(f"  {'':16} {count} x {error}")
    return lines


def capacity(tallies: dict[str, Tally], rates: tuple[int, ...] = (100, 1000)) -> list[str]:
    """The capacity model from measured CPU: pods a second one core of the admission
    processes can take, and replicas of 2 cores each (at most half busy, plus one spare)
    for the given pod-create rates.

    Why CPU and not the throughput seen: on a shared machine the client, the API server
    and etcd take cores too, so the throughput here is a floor; the CPU the admission
    processes burn per pod is what a dedicated replica's cores divide.
    """
    lines = []
    for name, tally in tallies.items():
        if not tally.admission_cpu or not tally.seconds:
            continue
        per_pod = tally.admission_cpu / tally.created
        per_core = 1 / per_pod
        replicas = ", ".join(
            f"{rate} pods/s: {math.ceil(rate * per_pod / (2 * 0.5)) + 1}" for rate in rates
        )
        lines.append(
            f"  {name:16} {per_pod * 1e3:.2f} ms CPU a pod = {per_core:,.0f} pods/s per core;"
            f" replicas of 2 cores: {replicas}"
        )
    return lines
