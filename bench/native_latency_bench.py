"""Pod-create latency on the real API server: native admission policies against the webhooks.

A benchmark on the control-plane harness (:mod:`controlplane.harness`). One run starts etcd
and three API servers of the pinned release: ``bare`` (the in-tree twins off, no policy, no
webhook: the floor), ``native`` (the policies ``placement-webhooks export`` prints for the
config) and ``webhooks`` (``MODE=webhooks``: ``serve`` registered with ``webhook-config``).
Pods are created round-robin, one on each server in turn, so machine load drifts over all
three alike; each round's three times are taken back to back. Printed per server: median,
p90 and p99 in ms, the admission cost over ``bare``, and the median of the per-round ratio
native/webhooks.

The sentinel policies that tell when the exported ones are in force are deleted before
timing, so the native server runs the exported policies and nothing else. Needs the
control-plane build (``make controlplane``). Usage:
``.venv/bin/python -m bench.native_latency_bench [--config FILE] [--pods 300] [--runs 3]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from controlplane.harness import ApiServerOptions, ControlPlaneOptions, running
from controlplane.harness.admission import TWINS, AdmissionSetup, read
from controlplane.harness.modes import apiserver_options
from controlplane.harness.nativepolicies import SENTINELS, ensure_namespace, install
from controlplane.harness.rest import Rest, collection
from controlplane.release import RELEASE
from webhooks.export import export
from webhooks.plugins import REGISTRY

SERVERS = ("bare", "native", "webhooks")
IMAGE = "registry.k8s.io/pause:3.10"


def pod(name: str) -> dict[str, Any]:
    """A typical small pod: one container with requests and an extended resource."""
    resources = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"example.com/gpu": "1"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {
            "containers": [{"name": "main", "image": IMAGE, "resources": resources}],
            "tolerations": [
                {"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}
            ],
        },
    }


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def one_run(config: Path | None, pods: int, warmup: int) -> dict[str, list[float]]:
    """Create ``pods`` pods on each server, round-robin; seconds per create, per server."""
    bare = AdmissionSetup(disable=tuple(TWINS.values()))
    options = ControlPlaneOptions(
        apiservers=(
            ApiServerOptions(name="bare", admission=bare),
            ApiServerOptions(name="native", admission=bare),
            apiserver_options("webhooks", config),
        ),
        scheduler=False,
        controller_manager=None,
    )
    times: dict[str, list[float]] = {name: [] for name in SERVERS}
    with running(options) as plane:
        clients = {name: Rest(plane.apiservers[name]) for name in SERVERS}
        install(clients["native"], list(export(read(config), REGISTRY, release=RELEASE).objects))
        for sentinel in SENTINELS:
            path = f"{collection(sentinel)}/{sentinel['metadata']['name']}"
            clients["native"].call("DELETE", path)
        for rest in clients.values():
            ensure_namespace(rest, "bench")
        for index in range(warmup + pods):
            for name, rest in clients.items():
                started = time.perf_counter()
                answer = rest.create("/api/v1/namespaces/bench/pods", pod(f"p{index}"))
                elapsed = time.perf_counter() - started
                if not answer.allowed:
                    raise SystemExit(f"{name}: pod p{index} refused: {answer.message}")
                if index >= warmup:
                    times[name].append(elapsed)
    return times


def main() -> None:
    """Print each run's figures, then the spread of the ratio over the runs."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--pods", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    ratios = []
    for run in range(1, args.runs + 1):
        times = one_run(args.config, args.pods, args.warmup)
        print(f"run {run}: {args.pods} pod creates per server")
        print(f"  {'server':9} {'median ms':>10} {'p90 ms':>8} {'p99 ms':>8} {'over bare ms':>13}")
        floor = statistics.median(times["bare"])
        for name in SERVERS:
            median = statistics.median(times[name])
            print(
                f"  {name:9} {median * 1e3:10.2f} {percentile(times[name], 0.9) * 1e3:8.2f}"
                f" {percentile(times[name], 0.99) * 1e3:8.2f} {(median - floor) * 1e3:13.2f}"
            )
        per_round = [n / w for n, w in zip(times["native"], times["webhooks"], strict=True)]
        ratio = statistics.median(per_round)
        ratios.append(ratio)
        print(f"  native / webhooks (median of per-round ratios): {ratio:.2f}")
    print(f"ratio over {len(ratios)} runs: min {min(ratios):.2f}, max {max(ratios):.2f}")


if __name__ == "__main__":
    main()
