"""In-process benchmark: what recording one review's metrics costs, ours against prometheus-client.

A review updates three series: the request counter, the latency histogram and one plugin
decision counter. This times exactly that with the server's :class:`Metrics` (built on
prometheus-client, children resolved once and cached) against the hand-written counters
it replaced, in the library's multiprocess mode (what gunicorn workers use: every update
is written to a memory-mapped file under one process-wide lock) and in its single-process
mode. Batches are interleaved, median of 9, in CPU time of the timing thread.

The rule we held to (issue 13): adopt the library for the per-request series only if it
costs at most 5 us more per review than the hand-written code.

Usage: python -m bench.metrics_bench [--number 100000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

SCRIPT = """
import bisect, statistics, sys, threading, time, timeit
from collections import defaultdict
from webhooks.server.metrics import BUCKETS, Metrics

number = int(sys.argv[1])


class HandWritten:
    # The per-review part of the hand-written metrics that prometheus-client replaced
    # (issue 13): one lock, dict counters, per-interval histogram buckets.

    def __init__(self):
        self._lock = threading.Lock()
        self._counters = defaultdict(lambda: defaultdict(float))
        self._help = {}
        self._hist = {}

    def record(self, counts, histogram, seconds):
        with self._lock:
            for name, help_text, labels in counts:
                self._help[name] = help_text
                self._counters[name][labels] += 1
            row = self._hist.get(histogram)
            if row is None:
                row = self._hist[histogram] = [0.0] * (len(BUCKETS) + 2)
            row[bisect.bisect_left(BUCKETS, seconds)] += 1
            row[-1] += seconds


library = Metrics()
decisions = [("default-toleration-seconds", "patched")]
before = HandWritten()
labels = (("endpoint", "/mutate"), ("outcome", "patched"))
counts = [
    ("placement_webhooks_requests_total", "h", labels),
    (
        "placement_webhooks_plugin_decisions_total",
        "h",
        (("plugin", "default-toleration-seconds"), ("decision", "patched")),
    ),
]
assert (library.directory is not None) == (sys.argv[2] == "1"), "wrong prometheus-client mode"


def now():
    library.record("/mutate", "patched", 0.0012, decisions)


def then():
    before.record(counts, labels, 0.0012)


a, b = [], []
for _ in range(9):
    # The thread's CPU time: other jobs' load on a shared machine does not count.
    a.append(timeit.timeit(now, number=number, timer=time.thread_time) / number * 1e6)
    b.append(timeit.timeit(then, number=number, timer=time.thread_time) / number * 1e6)
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
            [sys.executable, "-c", SCRIPT, str(number), "1" if multiprocess else "0"],
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
    print(f"{'metrics per review':34} {'library us':>10} {'before us':>10} {'extra us':>9}")
    for label, multiprocess in (
        ("prometheus-client multiprocess", True),
        ("prometheus-client single process", False),
    ):
        library, current = measure(multiprocess, args.number)
        print(f"{label:34} {library:10.2f} {current:10.2f} {library - current:9.2f}")


if __name__ == "__main__":
    main()
