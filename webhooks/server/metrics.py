"""Prometheus text-format metrics kept in process, with no client library.

Why hand-rolled: a handful of counters and one histogram do not justify a dependency on the
request path, and the text format is small and stable.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, NamedTuple

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

Labels = tuple[tuple[str, str], ...]


def _fmt_labels(labels: Labels, extra: tuple[tuple[str, str], ...] = ()) -> str:
    items = (*labels, *extra)
    if not items:
        return ""
    inner = ",".join(f'{k}="{_esc(v)}"' for k, v in items)
    return "{" + inner + "}"


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Family(NamedTuple):
    """One metric family produced at scrape time by a collector (see :meth:`Metrics.collect`)."""

    name: str
    kind: Literal["counter", "gauge"]
    help: str
    samples: Sequence[tuple[Labels, float]]


class Metrics:
    """Counters, gauges (as callables read at scrape time) and request-duration histograms."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, dict[Labels, float]] = defaultdict(lambda: defaultdict(float))
        self._help: dict[str, str] = {}
        self._hist: dict[Labels, list[float]] = {}
        self._gauges: dict[str, tuple[str, Callable[[], float | None]]] = {}
        self._collectors: list[Callable[[], Iterable[Family]]] = []

    def inc(self, name: str, help_text: str, labels: Labels = (), value: float = 1.0) -> None:
        """Add ``value`` to counter ``name`` with ``labels``."""
        with self._lock:
            self._help[name] = help_text
            self._counters[name][labels] += value

    def observe(self, labels: Labels, seconds: float) -> None:
        """Record one request duration under ``labels``."""
        with self._lock:
            row = self._hist.get(labels)
            if row is None:
                row = self._hist[labels] = [0.0] * (len(BUCKETS) + 2)
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    row[i] += 1
            row[-2] += 1
            row[-1] += seconds

    def gauge(self, name: str, help_text: str, read: Callable[[], float | None]) -> None:
        """Register a gauge read at scrape time (omitted when ``read`` returns ``None``)."""
        self._gauges[name] = (help_text, read)

    def collect(self, read: Callable[[], Iterable[Family]]) -> None:
        """Register a collector whose families are read at scrape time.

        Why: some figures are kept by other objects (the cluster caches count their own
        lists, watches and lookups); reading them when scraped costs nothing per request.
        """
        self._collectors.append(read)

    def render(self) -> str:
        """The whole registry in Prometheus text exposition format 0.0.4."""
        out: list[str] = []
        with self._lock:
            for name, series in sorted(self._counters.items()):
                out.append(f"# HELP {name} {self._help[name]}")
                out.append(f"# TYPE {name} counter")
                out.extend(f"{name}{_fmt_labels(lb)} {v:g}" for lb, v in sorted(series.items()))
            if self._hist:
                name = "placement_webhooks_request_duration_seconds"
                out.append(f"# HELP {name} Time to answer an admission review.")
                out.append(f"# TYPE {name} histogram")
                for labels, row in sorted(self._hist.items()):
                    for i, bound in enumerate(BUCKETS):
                        le = (("le", f"{bound:g}"),)
                        out.append(f"{name}_bucket{_fmt_labels(labels, le)} {row[i]:g}")
                    inf = (("le", "+Inf"),)
                    out.append(f"{name}_bucket{_fmt_labels(labels, inf)} {row[-2]:g}")
                    out.append(f"{name}_count{_fmt_labels(labels)} {row[-2]:g}")
                    out.append(f"{name}_sum{_fmt_labels(labels)} {row[-1]:g}")
        for name, (help_text, read) in sorted(self._gauges.items()):
            value = read()
            if value is None:
                continue
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} gauge")
            out.append(f"{name} {value:g}")
        for collector in self._collectors:
            for family in collector():
                out.append(f"# HELP {family.name} {family.help}")
                out.append(f"# TYPE {family.name} {family.kind}")
                out.extend(f"{family.name}{_fmt_labels(lb)} {v:g}" for lb, v in family.samples)
        return "\n".join(out) + "\n"
