"""How large a kwok fleet this machine holds: write time, Ready time, and idle CPU per size.

For each ``--sizes`` (200, 500, 1,000 nodes) a fresh control plane (mode ``in-tree``, the
controller-manager of :func:`controlplane.harness.fleet.controller_manager`,
40 s grace period) and kwok start, the fleet of that size
(:mod:`controlplane.harness.fleet`) is written, and the run waits until every node is Ready
and untainted. Then nothing happens for ``--idle`` seconds (60) while the CPU time of kwok,
kube-apiserver, etcd and kube-controller-manager is read from ``/proc/<pid>/stat`` before
and after: what keeping the fleet alive costs (Lease renewals every 10 s per node, status
heartbeats every 5 minutes, the node monitor's look at every node every period).

Why a fresh control plane per size: what idles is then the fleet of that size only, and
each size's write time starts from an empty etcd.

A size "holds" when every node became Ready within the timeout and no node's Ready
condition changed during the idle window (a Lease renewed too late shows as a node going
Unknown, the first symptom of a kwok or API server that cannot keep up); nothing polls
during the window, so the CPU read is the fleet's alone.

Usage: python -m bench.scale.fleet_size [--sizes 200,500,1000] [--idle 60]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

from controlplane.harness import ControlPlaneOptions, running
from controlplane.harness.components import ApiServer
from controlplane.harness.fleet import FleetShape, controller_manager, create_fleet, ready_nodes
from controlplane.harness.kwok import start_kwok
from controlplane.harness.modes import apiserver_options
from controlplane.harness.process import Component

_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` (its threads included)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


@dataclass(frozen=True, slots=True)
class Size:
    """One fleet size's figures; CPU as cores used on average while idle."""

    nodes: int
    written_s: float
    ready_s: float
    idle_cores: dict[str, float]
    lost_ready: int


def _lost_ready(server: ApiServer, nodes: Sequence[str], since: dt.datetime) -> set[str]:
    """Nodes not Ready now, or whose Ready condition changed after ``since``.

    Why after the fact: polling every node during the idle window would be most of the
    API server's work in it.
    """
    status, body = server.get("/api/v1/nodes")
    if status != 200:
        raise RuntimeError(f"could not list nodes: {status} {body}")
    lost = set(nodes) - ready_nodes(server)
    for node in body["items"]:
        for condition in node["status"].get("conditions") or []:
            changed = dt.datetime.fromisoformat(condition["lastTransitionTime"])
            if condition["type"] == "Ready" and changed > since:
                lost.add(node["metadata"]["name"])
    return lost & set(nodes)


def measure(nodes: int, idle: float) -> Size:
    """One size: a fresh control plane and kwok, the fleet, then an idle window."""
    options = ControlPlaneOptions(
        apiservers=(apiserver_options("in-tree", None, name="main"),),
        controller_manager=controller_manager(40),
    )
    with running(options) as plane:
        kwok = start_kwok(plane.directory / "kwok", plane.api)
        try:
            fleet = create_fleet(plane.api, FleetShape(nodes=nodes), timeout=900)
            watched: dict[str, Component] = {
                "kwok": kwok,
                "kube-apiserver": plane.api.component,
            }
            for component in plane._components:
                if component.name in ("etcd", "kube-controller-manager"):
                    watched[component.name] = component
            before = {name: cpu_seconds(c.proc.pid) for name, c in watched.items()}
            ready_at = dt.datetime.now(dt.UTC).replace(microsecond=0)
            began = time.monotonic()
            time.sleep(idle)
            seconds = time.monotonic() - began
            cores = {
                name: (cpu_seconds(c.proc.pid) - before[name]) / seconds
                for name, c in watched.items()
            }
            lost = len(_lost_ready(plane.api, fleet.nodes, ready_at))
            return Size(nodes, fleet.created_in, fleet.ready_in, cores, lost)
        finally:
            kwok.stop()


def table(sizes: Sequence[Size]) -> str:
    """The sizes as a Markdown table, as docs/scale.md shows it."""
    names = list(sizes[0].idle_cores) if sizes else []
    head = "| nodes | written s | all Ready s | " + " | ".join(f"{n} idle cores" for n in names)
    lines = [head + " | nodes that lost Ready |", "|---" * (4 + len(names)) + "|"]
    for size in sizes:
        cores = " | ".join(f"{size.idle_cores[n]:.3f}" for n in names)
        lines.append(
            f"| {size.nodes:,} | {size.written_s:.1f} | {size.ready_s:.1f} | {cores} "
            f"| {size.lost_ready} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure each size in turn and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,500,1000")
    parser.add_argument("--idle", type=float, default=60.0, help="idle seconds measured")
    args = parser.parse_args(argv)
    sizes = []
    for nodes in (int(n) for n in args.sizes.split(",")):
        size = measure(nodes, args.idle)
        print(f"{nodes} nodes: {size}", flush=True)
        sizes.append(size)
    print(f"kwok fleet sizes on {os.cpu_count()} cores, idle window {args.idle:g} s:")
    print(table(sizes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
