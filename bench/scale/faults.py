"""Faults during a pod-create storm: one row per fault, each its own control plane.

``.venv/bin/python -m bench.scale.faults [--only NAME] [--pods N]``

Why a run per fault: a fault leaves traces (a restarted API server's reset counters, a
replica's restart, a relisted cache) that would blur the next one's figures. What each row
says and how it is measured is in :mod:`controlplane.harness.faultstorm`; the Service in
front of the two replicas is modelled in :mod:`controlplane.harness.endpoints`.
"""

from __future__ import annotations

import argparse
import sys
import time

from controlplane.harness.faultstorm import FAULTS, StormOptions, run_fault, summary


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "/") for cell in cells) + " |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Faults during a pod-create storm.")
    parser.add_argument("--only", choices=sorted(FAULTS), action="append")
    parser.add_argument("--pods", type=int, default=StormOptions().pods, help="Deployment size")
    parser.add_argument("--threads", type=int, default=StormOptions().threads)
    parser.add_argument(
        "--mutating-failure-policy",
        choices=("Fail", "Ignore"),
        default="Fail",
        help="webhook-config's --mutating-failure-policy (its default is Ignore)",
    )
    args = parser.parse_args(argv)
    options = StormOptions(
        pods=args.pods,
        threads=args.threads,
        mutating_failure_policy=args.mutating_failure_policy,
    )
    faults = args.only or list(FAULTS)
    rows: list[list[str]] = []
    header: list[str] = []
    for fault in faults:
        began = time.monotonic()
        result = run_fault(fault, options, say=lambda line: print(line, file=sys.stderr))
        cells = summary(result)
        header = list(cells)
        rows.append(list(cells.values()))
        print(f"## {fault}: {FAULTS[fault]} ({time.monotonic() - began:.0f} s)", file=sys.stderr)
        print(
            f"client threads: {result.client_attempted} creates, {result.client_failed} failed;"
            f" API server create codes {result.create_codes}",
            file=sys.stderr,
        )
        for example in result.unpoliced_examples:
            print(f"without the policy: {example}", file=sys.stderr)
        for note in result.notes:
            print(f"  {note}", file=sys.stderr)
    print(
        f"pods={options.pods} threads={options.threads} replicas=2 "
        f"mutating failurePolicy={options.mutating_failure_policy}, validating Fail, timeout 5 s"
    )
    print(_row(header))
    print(_row(["---"] * len(header)))
    for cells_ in rows:
        print(_row(cells_))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
