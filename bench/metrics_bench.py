"""In-process benchmark: what recording one review's metrics costs, ours against prometheus-client.

A review updates three series: the request counter, the latency histogram and one plugin
decision counter. This times exactly that with the server's own :class:`Metrics` and with
prometheus-client (children resolved once and cached, as a careful integration would), in
the library's multiprocess mode (what gunicorn workers need: every update is written to a
memory-mapped file under one process-wide lock) and in its single-process mode. Batches
are interleaved, median of 9.

The rule we hold to (issue 13): adopt the library for the per-request series only if it
costs at most 5 us more per review than the current code.

Usage: python -m bench.metrics_bench [--number 100000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

SCRIPT = """
import os, statistics, sys, timeit
from prometheus_client import CollectorRegistry, Counter, Histogram
from webhooks.server.app import DECISIONS, DECISIONS_HELP, REQUESTS, REQUESTS_HELP
from webhooks.server.metrics import BUCKETS, HISTOGRAM, HISTOGRAM_HELP, Metrics

number = int(sys.argv[1])
LABELS = ("/mutate", "patched")
PLUGIN = ("default-toleration-seconds", "patched")
registry = CollectorRegistry()
requests = Counter(REQUESTS, REQUESTS_HELP, ["endpoint", "outcome"], registry=registry)
decisions = Counter(DECISIONS, DECISIONS_HELP, ["plugin", "decision"], registry=registry)
histogram = Histogram(
    HISTOGRAM, HISTOGRAM_HELP, ["endpoint", "outcome"], buckets=BUCKETS, registry=registry
)
children = {}


def library():
    pair = children.get(LABELS)
    if pair is None:
        pair = children[LABELS] = (
            requests.labels(*LABELS), histogram.labels(*LABELS)
        )
    pair[0].inc()
    pair[1].observe(0.0012)
    child = children.get(PLUGIN)
    if child is None:
        child = children[PLUGIN] = decisions.labels(*PLUGIN)
    child.inc()


ours = Metrics()
labels = (("endpoint", LABELS[0]), ("outcome", LABELS[1]))
counts = [
    (REQUESTS, REQUESTS_HELP, labels),
    (DECISIONS, DECISIONS_HELP, (("plugin", PLUGIN[0]), ("decision", PLUGIN[1]))),
]


def current():
    ours.record(counts, labels, 0.0012)


a, b = [], []
for _ in range(9):
    a.append(timeit.timeit(library, number=number) / number * 1e6)
    b.append(timeit.timeit(current, number=number) / number * 1e6)
print(statistics.median(a), statistics.median(b))
"""


def measure(multiprocess: bool, number: int) -> tuple[float, float]:
    """(library, current) microseconds per review, in a fresh interpreter.

    Why a subprocess: prometheus-client picks its value class when it is first imported,
    from the environment, so each mode needs its own interpreter.
    """
    env = dict(os.environ)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    with tempfile.TemporaryDirectory() as directory:
        if multiprocess:
            env["PROMETHEUS_MULTIPROC_DIR"] = directory
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(number)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    """Print the per-review cost of both, in both of the library's modes."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--number", type=int, default=100_000)
    args = parser.parse_args()
    print(f"{'metrics per review':34} {'library us':>10} {'current us':>10} {'extra us':>9}")
    for label, multiprocess in (
        ("prometheus-client multiprocess", True),
        ("prometheus-client single process", False),
    ):
        library, current = measure(multiprocess, args.number)
        print(f"{label:34} {library:10.2f} {current:10.2f} {library - current:9.2f}")


if __name__ == "__main__":
    main()
