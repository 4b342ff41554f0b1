"""The release matrix: build every supported release and run the short suite on each.

Usage (from the repository root; ``make matrix`` wraps it)::

    python -m controlplane.matrix            # every release but the newest
    python -m controlplane.matrix --all      # the newest too
    python -m controlplane.matrix --release 1.34 --full   # one release, the whole e2e suite

Why a target of its own: ``.ci/run`` runs the whole suite on the newest release, and a
machine with no cache spends most of its hour building that release, Helm and kwok; each
older release is another cold build of the same size, so the matrix cannot fit in the same
hour (docs/releases.md has the figures). The releases come from the product's table
(``webhooks.k8s.releases``), never from a list here.

Each release runs in a child process with ``KUBERNETES_VERSION`` set, because the harness
reads the release once at import. A failing release does not stop the others: a matrix is
read as a whole, and every release's outcome is printed at the end.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence

from webhooks.k8s.releases import NEWEST, RELEASES, Release, release

#: The short suite: the differential corpus (webhooks against the in-tree plugins and the
#: DaemonSet controller), the webhooks admitting through the API server, the chart installed
#: by the real Helm with managed certificates, failover, explain against the scheduler (plain
#: and DRA), the native policies against the webhooks (and the CEL each release accepts, and
#: the chart's native.enabled), static admission manifests, and what a release without an
#: API does to a setting that needs it.
SHORT_SUITE: tuple[str, ...] = (
    "tests/controlplane/test_harness.py",
    "tests/controlplane/differential",
    "tests/controlplane/test_webhooks_admission.py",
    "tests/controlplane/chart/test_managed_certs.py",
    "tests/controlplane/test_failover.py",
    "tests/controlplane/test_explain_scheduler.py",
    "tests/controlplane/test_dra_scheduler.py",
    "tests/controlplane/test_native_differential.py",
    "tests/controlplane/test_native_cel_release.py",
    "tests/controlplane/chart/test_native_release.py",
    "tests/controlplane/test_static_manifests.py",
    "tests/controlplane/test_absent_apis.py",
    "tests/controlplane/chart/test_doctor.py",
    "tests/controlplane/test_doctor_cluster.py",
    "tests/controlplane/test_tracing.py",
)


def _run(row: Release, full: bool, pytest_args: Sequence[str]) -> tuple[int, float]:
    """Build ``row`` (unless cached) and run its suite; the exit status and the seconds."""
    env = {**os.environ, "KUBERNETES_VERSION": row.proven}
    started = time.monotonic()
    build = subprocess.run([sys.executable, "-m", "controlplane.build"], env=env, check=False)
    if build.returncode != 0:
        return build.returncode, time.monotonic() - started
    paths = ["tests/controlplane"] if full else list(SHORT_SUITE)
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", *paths, *pytest_args], env=env, check=False
    )
    return tests.returncode, time.monotonic() - started


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``make matrix``."""
    parser = argparse.ArgumentParser(prog="python -m controlplane.matrix")
    parser.add_argument("--all", action="store_true", help="the newest release too")
    parser.add_argument(
        "--release", action="append", default=[], help="only this release (repeatable)"
    )
    parser.add_argument("--full", action="store_true", help="the whole e2e suite, not the short")
    args, pytest_args = parser.parse_known_args(argv)
    rows = [release(name) for name in args.release] or [
        row for row in RELEASES if args.all or row is not NEWEST
    ]
    outcomes: list[str] = []
    status = 0
    for row in rows:
        code, seconds = _run(row, args.full, pytest_args)
        outcomes.append(f"{row.proven}: {'passed' if code == 0 else 'FAILED'} in {seconds:.0f} s")
        status = status or code
    for line in outcomes:
        print(f"matrix: {line}")
    return status


if __name__ == "__main__":
    sys.exit(main())
