"""``make scale``: every mode side by side through steady creates and storms, then the faults.

Usage: ``.venv/bin/python -m bench.scale [--modes a,b] [--only steady,storm] [--nodes N]
[--per-batch N] [--rounds N] [--replicas N]``. Prints tables only; docs/scale.md shows them
as printed, with the machine they ran on.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from bench.scale import steady, storm
from bench.scale.modes import NAMES, apiserver_for, available, installed_modes
from controlplane.harness import ControlPlaneOptions, running


def _machine() -> str:
    load = os.getloadavg()
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )


def run_steady(args: argparse.Namespace) -> None:
    """The steady-create tables, one per concurrency, every mode on one etcd."""
    modes, skipped = available(args.modes)
    for line in skipped:
        print(f"skipped {line}")
    options = ControlPlaneOptions(
        apiservers=tuple(apiserver_for(mode) for mode in modes),
        scheduler=False,
        controller_manager=None,
    )
    started = time.monotonic()
    with running(options) as plane, installed_modes(modes, plane, plane.directory) as ready:
        print(f"{len(modes)} API servers on one etcd up in {time.monotonic() - started:.0f} s")
        for mode in modes:
            print(f"  {mode.name:14} {mode.what}")
        for concurrency in args.concurrency:
            tallies = steady.run(
                ready,
                concurrency,
                per_batch=args.per_batch,
                rounds=args.rounds,
                prefix=f"c{concurrency}-",
            )
            print("\n".join(steady.table(concurrency, tallies)), flush=True)
            print(f"capacity at concurrency {concurrency} (from the admission CPU above):")
            print("\n".join(steady.capacity(tallies)), flush=True)


def run_storms(args: argparse.Namespace) -> None:
    """The storm tables: every mode on a control plane and fleet of its own, in turn."""
    modes, skipped = available(args.modes)
    for line in skipped:
        print(f"skipped {line}")
    results: list[storm.StormResult] = []
    for round_index, order in enumerate(storm.rotations(modes, args.storm_rounds)):
        for mode in order:
            started = time.monotonic()
            results += storm.run_mode(
                mode,
                Path(tempfile.mkdtemp(prefix="placement-webhooks-storm-")),
                nodes=args.nodes,
                replicas=args.replicas,
                completions=args.completions,
                timeout=args.storm_timeout,
            )
            print(
                f"storm round {round_index + 1}, {mode.name}: {time.monotonic() - started:.0f} s",
                flush=True,
            )
    print(
        f"storms: a Deployment scaled 0 -> {args.replicas} and a Job of {args.completions} "
        f"completions (parallelism {min(args.completions, 500)}), {args.nodes} kwok nodes"
    )
    print("\n".join(storm.table(results)), flush=True)


def main(argv: list[str] | None = None) -> int:
    """Parse, run what was asked, print."""
    parser = argparse.ArgumentParser(prog="make scale", description=__doc__)
    parser.add_argument("--modes", type=lambda s: tuple(s.split(",")), default=NAMES)
    parser.add_argument("--only", type=lambda s: tuple(s.split(",")), default=("steady", "storm"))
    parser.add_argument(
        "--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 16, 64]
    )
    parser.add_argument("--per-batch", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--replicas", type=int, default=2000)
    parser.add_argument("--completions", type=int, default=2000)
    parser.add_argument("--storm-rounds", type=int, default=1)
    parser.add_argument("--storm-timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    unknown = [m for m in args.modes if m not in NAMES]
    if unknown:
        parser.error(f"unknown modes {unknown}; choose from {', '.join(NAMES)}")
    print(f"machine: {_machine()}")
    if "steady" in args.only:
        run_steady(args)
    if "storm" in args.only:
        run_storms(args)
    print(f"machine after: {_machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
