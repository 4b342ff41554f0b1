"""Prometheus text-format metrics that add up across gunicorn workers, with no client library.

Why hand-rolled: a handful of counters and one histogram do not justify a dependency on the
request path. Why files: each worker is a process with its own counters, and a scrape lands
on one of them; so every worker writes a snapshot of its own series into a shared runtime
directory about once a second, and a scrape sums the snapshots of every worker that ever
ran (files of replaced workers stay, so counters never go backwards).
"""

from __future__ import annotations

import bisect
import contextlib
import os
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

import orjson

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
HISTOGRAM = "placement_webhooks_request_duration_seconds"
HISTOGRAM_HELP = "Time to answer an admission review."

Labels = tuple[tuple[str, str], ...]
Snapshot = dict[str, Any]


def _fmt_labels(labels: Iterable[Sequence[str]], extra: Iterable[Sequence[str]] = ()) -> str:
    items = [*labels, *extra]
    if not items:
        return ""
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in items) + "}"


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Family(NamedTuple):
    """One metric family produced at scrape time by a collector (see :meth:`Metrics.collect`).

    Counter families join the worker's snapshot, so they add up across workers like
    :meth:`Metrics.inc` counters; gauge families describe the worker that answers the scrape.
    """

    name: str
    kind: Literal["counter", "gauge"]
    help: str
    samples: Sequence[tuple[Labels, float]]


class Metrics:
    """Counters, per-interval histogram buckets, and gauges read at scrape time."""

    def __init__(self, directory: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, dict[Labels, float]] = defaultdict(lambda: defaultdict(float))
        self._help: dict[str, str] = {}
        self._hist: dict[Labels, list[float]] = {}
        self._gauges: dict[str, tuple[str, Callable[[], float | None]]] = {}
        self._collectors: list[Callable[[], Iterable[Family]]] = []
        self.directory = directory
        self._file = directory / f"metrics-{os.getpid()}.json" if directory else None
        self._stop = threading.Event()

    def inc(self, name: str, help_text: str, labels: Labels = (), value: float = 1.0) -> None:
        """Add ``value`` to counter ``name`` with ``labels``."""
        with self._lock:
            self._help[name] = help_text
            self._counters[name][labels] += value

    def observe(self, labels: Labels, seconds: float) -> None:
        """Record one request duration under ``labels``."""
        with self._lock:
            self._observe(labels, seconds)

    def _observe(self, labels: Labels, seconds: float) -> None:
        row = self._hist.get(labels)
        if row is None:
            row = self._hist[labels] = [0.0] * (len(BUCKETS) + 2)
        # Buckets are stored per interval and summed when rendered: one increment per call.
        row[bisect.bisect_left(BUCKETS, seconds)] += 1
        row[-1] += seconds

    def record(
        self, counts: Sequence[tuple[str, str, Labels]], histogram: Labels, seconds: float
    ) -> None:
        """Count ``counts`` (name, help, labels) and observe ``seconds``, under one lock.

        Why one call: every review updates several series, and one lock round-trip per
        review keeps metrics off the request path's profile.
        """
        with self._lock:
            for name, help_text, labels in counts:
                self._help[name] = help_text
                self._counters[name][labels] += 1
            self._observe(histogram, seconds)

    def gauge(self, name: str, help_text: str, read: Callable[[], float | None]) -> None:
        """Register a gauge read at scrape time (omitted when ``read`` returns ``None``)."""
        self._gauges[name] = (help_text, read)

    def collect(self, read: Callable[[], Iterable[Family]]) -> None:
        """Register a collector whose families are read at scrape time.

        Why: some figures are kept by other objects (the cluster caches count their own
        lists, watches and lookups); reading them when needed costs nothing per request.
        """
        self._collectors.append(read)

    def _collected(self, kind: str) -> list[Family]:
        return [f for read in self._collectors for f in read() if f.kind == kind]

    def snapshot(self) -> Snapshot:
        """This process's counters (collected ones included) and histogram as JSON-able data."""
        collected = self._collected("counter")
        with self._lock:
            snap: Snapshot = {
                "help": dict(self._help),
                "counters": {
                    name: [[list(map(list, lb)), v] for lb, v in series.items()]
                    for name, series in self._counters.items()
                },
                "hist": [[list(map(list, lb)), list(row)] for lb, row in self._hist.items()],
            }
        for family in collected:
            snap["help"][family.name] = family.help
            snap["counters"][family.name] = [[list(map(list, lb)), v] for lb, v in family.samples]
        return snap

    def write_snapshot(self) -> None:
        """Write this worker's snapshot file atomically (no-op without a directory)."""
        if self._file is None:
            return
        tmp = self._file.with_suffix(".tmp")
        with contextlib.suppress(OSError):
            tmp.write_bytes(orjson.dumps(self.snapshot()))
            tmp.replace(self._file)

    def start_writer(self, interval: float = 1.0) -> None:
        """Write the snapshot every ``interval`` seconds from a daemon thread."""
        if self._file is None:
            return

        def loop() -> None:
            while not self._stop.wait(interval):
                self.write_snapshot()

        threading.Thread(target=loop, name="metrics-writer", daemon=True).start()

    def stop_writer(self) -> None:
        """Stop the writer thread after one last snapshot."""
        self._stop.set()
        self.write_snapshot()

    def _snapshots(self) -> list[Snapshot]:
        if self.directory is None or self._file is None:
            return [self.snapshot()]
        self.write_snapshot()
        snaps = []
        for path in sorted(self.directory.glob("metrics-*.json")):
            with contextlib.suppress(OSError, orjson.JSONDecodeError):
                snaps.append(orjson.loads(path.read_bytes()))
        if not snaps:
            snaps.append(self.snapshot())
        return snaps

    def render(self) -> str:
        """Every worker's series summed, plus this worker's gauges, in text format 0.0.4."""
        helps: dict[str, str] = {}
        counters: dict[str, dict[Labels, float]] = defaultdict(lambda: defaultdict(float))
        hist: dict[Labels, list[float]] = {}
        for snap in self._snapshots():
            helps.update(snap["help"])
            for name, series in snap["counters"].items():
                for labels, value in series:
                    counters[name][tuple(tuple(p) for p in labels)] += value
            for labels, row in snap["hist"]:
                key = tuple(tuple(p) for p in labels)
                total = hist.setdefault(key, [0.0] * len(row))
                for i, value in enumerate(row):
                    total[i] += value
        out: list[str] = []
        for name, series in sorted(counters.items()):
            out.append(f"# HELP {name} {helps.get(name, name)}")
            out.append(f"# TYPE {name} counter")
            out.extend(f"{name}{_fmt_labels(lb)} {v:g}" for lb, v in sorted(series.items()))
        if hist:
            out.append(f"# HELP {HISTOGRAM} {HISTOGRAM_HELP}")
            out.append(f"# TYPE {HISTOGRAM} histogram")
            for labels, row in sorted(hist.items()):
                cumulative = 0.0
                for i, bound in enumerate(BUCKETS):
                    cumulative += row[i]
                    le = (("le", f"{bound:g}"),)
                    out.append(f"{HISTOGRAM}_bucket{_fmt_labels(labels, le)} {cumulative:g}")
                count = cumulative + row[-2]
                inf = (("le", "+Inf"),)
                out.append(f"{HISTOGRAM}_bucket{_fmt_labels(labels, inf)} {count:g}")
                out.append(f"{HISTOGRAM}_count{_fmt_labels(labels)} {count:g}")
                out.append(f"{HISTOGRAM}_sum{_fmt_labels(labels)} {row[-1]:g}")
        for name, (help_text, read) in sorted(self._gauges.items()):
            value = read()
            if value is None:
                continue
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} gauge")
            out.append(f"{name} {value:g}")
        for family in self._collected("gauge"):
            out.append(f"# HELP {family.name} {family.help}")
            out.append(f"# TYPE {family.name} gauge")
            out.extend(f"{family.name}{_fmt_labels(lb)} {v:g}" for lb, v in family.samples)
        return "\n".join(out) + "\n"
