"""The offline tools at fleet scale, on the real bed: ``explain`` against the scheduler's
bindings, and ``audit`` of the whole cluster, with their time and memory (issue 32, item 6).

For each size (``--nodes``/``--pods``, and half of both first unless ``--no-growth``): a fresh
control plane (etcd, kube-apiserver with the in-tree plugins of our default config,
kube-scheduler at 500 requests per second, the fleet's kube-controller-manager), kwok, the fleet of
:mod:`controlplane.harness.fleet`, then the workload of :mod:`controlplane.harness.workload`
(Deployments over many namespaces, GPU and tenant pods, bare pods, pods that fit nowhere),
until every pod is bound or found unschedulable by the real scheduler. Then:

* ``explain --kubeconfig -o json`` over every node and a stratified random sample of
  ``--sample`` pods (``--seed``), judged pod by pod against the scheduler's decision
  (:func:`controlplane.harness.compare.disagreements`); its wall time and peak RSS. Before
  it, the run waits until every node is Ready and untainted, and the sampled unschedulable
  pods are created again so that the scheduler's reasons are about the nodes explain
  reads (on a loaded machine kwok may renew a Lease late and a node be tainted a while:
  the run counts such nodes and prints them);
* ``audit --kubeconfig -o json --config bench/configs/fleet.yaml`` over the whole cluster
  (the fleet's policy, stricter than the defaults the cluster admitted with, so there is
  something to find); its wall time, peak RSS, the objects it read and its results.

Why a fresh control plane per size: each size's figures then start from an empty etcd, and
the ratios between sizes say how each tool grows with the cluster.

Usage: python -m bench.scale.offline [--nodes 1000] [--pods 30000] [--sample 300] [--no-growth]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from controlplane.harness.fleet import FleetShape
from controlplane.harness.offline import (
    Agreement,
    Audit,
    audit_cluster,
    explain_sample,
    offline_bed,
    redecide,
    sample,
    settle,
    unhealthy_nodes,
)
from controlplane.harness.process import wait_until
from controlplane.harness.workload import (
    WorkloadShape,
    create_workload,
    created_count,
    stored_pods,
    undecided,
    workload_objects,
)

SEED = 32
#: The policy a platform team runs on this fleet: what ``audit`` judges the cluster by, so
#: that it has something to find (the cluster itself admitted pods with our defaults).
FLEET_CONFIG = Path(__file__).parents[1] / "configs" / "fleet.yaml"
DECIDE_TIMEOUT = 3600.0


@dataclass(frozen=True, slots=True)
class Size:
    """One size's figures."""

    nodes: int
    pods: int
    fleet_ready_s: float
    created_s: float
    decided_s: float
    bound: int
    unschedulable: int
    explain: Agreement
    audit: Audit
    #: Nodes seen not Ready or tainted not-ready/unreachable at some poll during the run.
    flapped: set[str]


def _progress(label: str, began: float, done: int, total: int) -> None:
    print(f"  {label}: {done:,}/{total:,} after {time.monotonic() - began:.0f} s", flush=True)


def measure(nodes: int, pods: int, sample_size: int, seed: int, directory: Path) -> Size:
    """One size on a fresh bed; prints progress as it goes."""
    shape = FleetShape(nodes=nodes)
    workload = workload_objects(shape, WorkloadShape(pods=pods))
    expected = workload.expected
    with offline_bed(shape) as bed:
        fleet_ready = bed.fleet.ready_in
        print(
            f"{nodes:,} nodes Ready in {fleet_ready:.1f} s; creating {expected:,} pods", flush=True
        )
        began = time.monotonic()
        create_workload(bed.api, workload)
        last = [0.0]
        flapped: set[str] = set()

        def all_created() -> bool:
            flapped.update(unhealthy_nodes(bed.api))
            count = created_count(bed.api, workload)
            if time.monotonic() - last[0] > 30:
                last[0] = time.monotonic()
                _progress("created", began, count, expected)
            return count >= expected

        wait_until(all_created, timeout=DECIDE_TIMEOUT, what="created", interval=5)
        created = time.monotonic() - began

        def all_decided() -> bool:
            flapped.update(unhealthy_nodes(bed.api))
            pending, undecided_ = undecided(bed.api)
            if time.monotonic() - last[0] > 30:
                last[0] = time.monotonic()
                _progress("bound", began, expected - pending, expected)
            return undecided_ == 0 and pending <= workload.stranded

        wait_until(all_decided, timeout=DECIDE_TIMEOUT, what="decided", interval=5)
        decided = time.monotonic() - began
        stored = stored_pods(bed.api)
        mine = {k: p for k, p in stored.items() if not k.startswith("kube-")}
        bound = sum(1 for p in mine.values() if p["spec"].get("nodeName"))
        print(
            f"{len(mine):,} pods created in {created:.1f} s, all decided in {decided:.1f} s "
            f"({bound:,} bound, {len(mine) - bound:,} unschedulable)",
            flush=True,
        )
        keys = sample(mine, sample_size, seed)
        # The scheduler judged the unschedulable pods minutes ago, maybe while some node was
        # tainted; explain must be compared with a decision made on the nodes it reads.
        flapped.update(unhealthy_nodes(bed.api))
        settled = settle(bed.api)
        mine = redecide(bed.api, mine, keys)
        agreement = explain_sample(bed.api, mine, keys, directory / f"{nodes}" / "explain")
        after = unhealthy_nodes(bed.api)
        flapped.update(after)
        print(
            f"nodes not Ready or tainted at some poll: {len(flapped)} "
            f"{sorted(flapped)[:10]}; settled {settled:.1f} s before explain; "
            f"unhealthy right after explain: {len(after)}",
            flush=True,
        )
        print(f"explain: {_explain_line(agreement)}", flush=True)
        audited = audit_cluster(bed.api, directory / f"{nodes}" / "audit", FLEET_CONFIG)
        print(f"audit: {_audit_line(audited)}", flush=True)
        return Size(
            nodes,
            len(mine),
            fleet_ready,
            created,
            decided,
            bound,
            len(mine) - bound,
            agreement,
            audited,
            flapped,
        )


def _explain_line(a: Agreement) -> str:
    return (
        f"{a.sampled} sampled ({a.bound} bound, {a.unschedulable} unschedulable) over "
        f"{a.nodes:,} nodes: {a.agreed} agree, {len(a.disagreements)} disagree; "
        f"{a.run.seconds:.1f} s, peak RSS {a.run.peak_rss_mib:.0f} MiB"
    )


def _audit_line(a: Audit) -> str:
    objects = ", ".join(f"{n:,} {kind}" for kind, n in sorted(a.objects.items()))
    return (
        f"read {objects}; {a.findings:,} results {dict(a.results)} on {a.pods_affected:,} "
        "objects; "
        f"{a.run.seconds:.1f} s, peak RSS {a.run.peak_rss_mib:.0f} MiB"
    )


def table(sizes: Sequence[Size]) -> str:
    """The sizes as a Markdown table, as docs/scale.md shows it."""
    lines = [
        "| nodes | pods | fleet Ready s | pods created s | all decided s | bound | unschedulable "
        "| explain sample | agree | disagree | explain s | explain MiB | audit pods "
        "| audit results | audit s | audit MiB | nodes that flapped |",
        "|---" * 17 + "|",
    ]
    for s in sizes:
        e, a = s.explain, s.audit
        lines.append(
            f"| {s.nodes:,} | {s.pods:,} | {s.fleet_ready_s:.1f} | {s.created_s:.1f} "
            f"| {s.decided_s:.1f} | {s.bound:,} | {s.unschedulable:,} | {e.sampled} | {e.agreed} "
            f"| {len(e.disagreements)} | {e.run.seconds:.1f} | {e.run.peak_rss_mib:.0f} "
            f"| {a.objects.get('Pod', 0):,} | {a.findings:,} | {a.run.seconds:.1f} "
            f"| {a.run.peak_rss_mib:.0f} | {len(s.flapped)} |"
        )
    return "\n".join(lines)


def ratios(small: Size, large: Size) -> str:
    """How each figure grew from ``small`` to ``large``."""

    def r(x: float, y: float) -> str:
        return f"{y / x:.2f}x" if x else "n/a"

    return (
        f"growth {small.nodes:,}/{small.pods:,} -> {large.nodes:,}/{large.pods:,} "
        f"(nodes {r(small.nodes, large.nodes)}, pods {r(small.pods, large.pods)}): "
        f"all decided {r(small.decided_s, large.decided_s)}, "
        f"explain time {r(small.explain.run.seconds, large.explain.run.seconds)} "
        "(the same sample over more nodes), "
        f"explain RSS {r(small.explain.run.peak_rss_mib, large.explain.run.peak_rss_mib)}, "
        f"audit time {r(small.audit.run.seconds, large.audit.run.seconds)}, "
        f"audit RSS {r(small.audit.run.peak_rss_mib, large.audit.run.peak_rss_mib)}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Measure half the size, then the size, and print the table, the ratios and every
    disagreement; exits 1 when explain disagrees with the scheduler on any sampled pod."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=30_000)
    parser.add_argument("--sample", type=int, default=300, help="pods explained")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--no-growth", action="store_true", help="skip the half size")
    args = parser.parse_args(argv)
    plan = [(args.nodes, args.pods)]
    if not args.no_growth:
        plan.insert(0, (args.nodes // 2, args.pods // 2))
    sizes: list[Size] = []
    with tempfile.TemporaryDirectory(prefix="offline-bench-") as tmp:
        for nodes, pods in plan:
            try:
                sizes.append(measure(nodes, pods, args.sample, args.seed, Path(tmp)))
            except Exception as exc:  # a size that does not hold is a result, not a crash
                print(f"{nodes:,} nodes / {pods:,} pods did not hold: {exc!r}", flush=True)
                traceback.print_exc()
    print(f"\nexplain and audit at scale on {os.cpu_count()} cores (sample seed {args.seed}):")
    print(table(sizes))
    if len(sizes) == 2:
        print(ratios(*sizes))
    wrong = [line for s in sizes for line in s.explain.disagreements]
    for line in wrong:
        print(f"disagreement: {line}")
    return 1 if wrong or len(sizes) < len(plan) else 0


if __name__ == "__main__":
    raise SystemExit(main())
