"""``audit`` over a fake API server holding 20,000 pods in 40 Deployments: time and memory.

The fake (``bench/fakeapi/``, the one the tests use too) runs in this process and serves the
cluster in pages of ``--page-size`` (500, the default); ``placement-webhooks audit
--write-reports`` runs as a child process, so its wall time and its peak RSS are its own and
not the fake's. The peak is the child's ``VmHWM`` read at its exit: ``ru_maxrss`` from
``wait4`` would not do, because Linux carries the RSS of the (v)forking parent, which holds
the whole fake cluster, into the child's ``ru_maxrss`` at exec. The cluster:
``--deployments`` Deployments (40)
in 4 namespaces, each with its ReplicaSet and ``--pods`` pods in all (20,000), every other
Deployment's pods missing the default tolerations (drift to find and group), one bare pod
breaking dedicated-nodes, and 50 Nodes. Every object is stored as a real API server
stores it (status, managedFields, the token volume), from ``bench/stored.py``. The four
Namespaces carry the labels and annotations of ``shop`` in ``bench/configs/cluster.yaml``,
and its RuntimeClasses are served too, so the full config's namespace plugins have work.

Every run is made twice, side by side: with the default config and with the full config
(``bench/configs/full.yaml``); the figures of each, and the ratio of their wall times.

Targets on the project's 2-core machine: at most 60 s wall time and at most 250 MiB peak
RSS per run. It prints each run, then the worst of ``--repeat`` (3) runs, and how many
pages of pods each read; last, one run on a cluster a quarter the size, to show that memory
follows the findings and not the number of pods. ``make bench`` runs it; alone:
``python -m bench.audit_bench``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench import scenario
from bench import stored as cluster
from bench.fakeapi.server import FakeApiServer

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 60.0
TARGET_MIB = 250.0


def objects(deployments: int, pods: int) -> list[dict[str, Any]]:
    """The benchmark cluster (see the module docstring)."""
    namespaces = [f"team-{i}" for i in range(4)]
    context = list(yaml.safe_load_all(scenario.CLUSTER_OBJECTS.read_text(encoding="utf-8")))
    shop = next(o for o in context if o["kind"] == "Namespace" and o["metadata"]["name"] == "shop")
    out: list[dict[str, Any]] = [o for o in context if o["kind"] == "RuntimeClass"]
    for name in namespaces:
        namespace = cluster.namespace(name, **shop["metadata"]["labels"])
        namespace["metadata"]["annotations"] = dict(shop["metadata"]["annotations"])
        out.append(namespace)
    per = pods // deployments
    for i in range(deployments):
        tolerations = [] if i % 2 else None  # every other Deployment drifts
        out += cluster.deployment_with_pods(
            f"app-{i:02d}", namespaces[i % len(namespaces)], per, tolerations=tolerations
        )
    intruder = [*cluster.DEFAULT_TOLERATIONS, cluster.DEDICATED_TAINT]
    out.append(cluster.pod("intruder", namespaces[0], tolerations=intruder))
    out += [cluster.node(f"worker-{i:02d}") for i in range(50)]
    return out


#: Runs ``placement-webhooks ARGS`` and, at exit, writes the process's VmHWM (KiB) to FILE.
WRAPPER = """
import atexit, runpy, sys
def peak(path=sys.argv[1]):
    with open("/proc/self/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(path, "w") as out:
        out.write(kib)
atexit.register(peak)
sys.argv = ["placement-webhooks", *sys.argv[2:]]
runpy.run_module("webhooks", run_name="__main__")
"""


def run_once(kubeconfig: Path, config: Path | None, page_size: int) -> tuple[float, float, int]:
    """One audit in a child process: (wall seconds, peak RSS MiB, exit code)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    peak = kubeconfig.with_name("peak")
    command = [
        sys.executable,
        "-c",
        WRAPPER,
        str(peak),
        "audit",
        "--kubeconfig",
        str(kubeconfig),
        *(["--config", str(config)] if config is not None else []),
        "--page-size",
        str(page_size),
        "--write-reports",
        "-o",
        "json=" + os.devnull,
    ]
    start = time.perf_counter()
    child = subprocess.run(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    wall = time.perf_counter() - start
    if child.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({child.returncode}): {child.stderr.decode()}")
    return wall, int(peak.read_text()) / 1024, child.returncode


def main() -> None:
    """Build the cluster, serve it, audit it ``--repeat`` times per config, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--deployments", type=int, default=40)
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for name in scenario.CONFIG_FILES:
        print(scenario.describe(name, scenario.config(name)))
    fake = FakeApiServer().start()
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in scenario.CONFIG_FILES}
    try:
        fake.load(objects(args.deployments, args.pods))
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = fake.kubeconfig(Path(tmp) / "kubeconfig")
            print(f"cluster:    {args.pods:,} pods in {args.deployments} Deployments, 50 Nodes")
            print(f"page size:  {args.page_size}")
            for i in range(args.repeat):
                for name, config in scenario.CONFIG_FILES.items():
                    before = fake.count("list", "pods")
                    wall, rss, code = run_once(kubeconfig, config, args.page_size)
                    pages = fake.count("list", "pods") - before
                    runs[name].append((wall, rss))
                    print(
                        f"run {i + 1} {name:8} {wall:6.2f} s wall, {rss:6.1f} MiB peak RSS, "
                        f"exit {code}, {pages} pages of pods"
                    )
            reports = len(fake.stored("reports")) + len(fake.stored("clusterreports"))
            with fake.lock:
                fake.objects.clear()
            fake.load(objects(args.deployments, args.pods // 4))
            for name, config in scenario.CONFIG_FILES.items():
                wall, small, _ = run_once(kubeconfig, config, args.page_size)
                print(
                    f"{args.pods // 4:,} pods, {name}: {wall:6.2f} s wall, {small:6.1f} MiB peak "
                    "RSS (memory follows the findings, not the pods)"
                )
    finally:
        fake.stop()
    print(f"reports:    {reports} written (last run)")
    for name, found in runs.items():
        worst_wall = max(w for w, _ in found)
        worst_rss = max(r for _, r in found)
        ok = worst_wall <= TARGET_SECONDS and worst_rss <= TARGET_MIB
        print(
            f"worst {name:8} {worst_wall:.2f} s (target <= {TARGET_SECONDS:g} s), "
            f"{worst_rss:.1f} MiB (target <= {TARGET_MIB:g} MiB): {'within' if ok else 'MISSED'}"
        )
    walls = scenario.ratios([w for w, _ in runs["full"]], [w for w, _ in runs["default"]])
    print(f"full / default wall time: {scenario.spread(walls)}")


if __name__ == "__main__":
    main()
