"""Prometheus metrics from prometheus-client, added up across gunicorn workers.

Why the library and its multiprocess mode: each gunicorn worker is a process with its own
counters while a scrape lands on one of them. In multiprocess mode every worker writes its
series into memory-mapped files in a shared directory (``PROMETHEUS_MULTIPROC_DIR``, set
by the master before any worker starts) and a scrape reads them all, so counters add up
and never go backwards when a worker is replaced. Recording a review through it costs
about 4 us more than the hand-written counters it replaced (``bench/metrics_bench.py``).

Values known only at scrape time (certificate expiry) come from collectors registered
beside the multiprocess collector. The cluster caches keep their own counts inside each
worker, which neither mode can read from another process; :class:`Metrics` therefore
copies them into library series (counters by their increase, gauges in a ``live*`` mode)
about once a second and just before the worker answers a scrape (see ``clusterseries``).

prometheus-client is imported inside the methods here: it chooses its storage when first
imported, from the environment, and the master sets that environment only once it has a
runtime directory.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from webhooks import __version__
from webhooks.server.framing import REASONS

if TYPE_CHECKING:
    from prometheus_client.registry import Collector

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
HISTOGRAM = "placement_webhooks_request_duration_seconds"
HISTOGRAM_HELP = "Time to answer an admission review."
REQUESTS = "placement_webhooks_requests_total"
REQUESTS_HELP = "Admission reviews answered, by endpoint and outcome."
DECISIONS = "placement_webhooks_plugin_decisions_total"
DECISIONS_HELP = "Decisions per plugin: patched, denied, warned, audited, monitored, or a notice."
EXCEPTIONS = "placement_webhooks_exceptions_total"
EXCEPTIONS_HELP = (
    "Plugins skipped by an exception (state applied), or not skipped because it expired "
    "(state expired)."
)
REFUSED = "placement_webhooks_refused_requests_total"
REFUSED_HELP = (
    "Requests refused before any review was read (unframable, a path the port does not "
    "serve, no client certificate, too large, the wrong type, too late), by port and status."
)
CLOSED = "placement_webhooks_connections_closed_total"
CLOSED_HELP = (
    "Connections closed to make room for a newcomer, by port and the class chosen (closing, "
    "stalled_head, idle, stalled_body, unfinished), or newcomers closed at once when none "
    "could be (full)."
)
#: The ``port`` label: the admission (TLS) listener and the plain metrics listener.
PORTS = frozenset({"admission", "metrics"})
#: The ``status`` label of :data:`REFUSED`: the statuses the server refuses with (500 is an
#: error of ours, not a refusal).
REFUSAL_STATUSES = frozenset(status for status in REASONS if status != 500)
#: The ``reason`` label of :data:`CLOSED` (the budget's classes, and ``full``).
CLOSE_REASONS = frozenset({"closing", "stalled_head", "idle", "stalled_body", "unfinished", "full"})
RELOADS = "placement_webhooks_config_reloads_total"
RELOADS_HELP = "SIGHUP reloads by outcome: applied (new workers started), or refused (bad config)."
RELOAD_OUTCOMES = ("applied", "refused")
#: Where multiprocess mode keeps its files; the master sets it before workers start.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
BUILD_INFO = "placement_webhooks_build_info"
BUILD_INFO_HELP = "Always 1; the label version is the running build's (webhooks.__version__)."


def multiprocess_dir() -> str | None:
    """The directory of multiprocess mode when the library is in it, else ``None``."""
    from prometheus_client import values

    if getattr(values.ValueClass, "_multiprocess", False):
        return os.environ.get(MULTIPROC_ENV)
    return None


class Metrics:
    """The request series of one worker, scrape-time collectors, and a once-a-second sync.

    One per worker (or per test app): it owns its registry, so nothing here is global
    beyond the library's choice of storage.
    """

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.directory = multiprocess_dir()
        self.registry = CollectorRegistry()
        self._requests = Counter(
            REQUESTS, REQUESTS_HELP, ["endpoint", "outcome"], registry=self.registry
        )
        self._decisions = Counter(
            DECISIONS, DECISIONS_HELP, ["plugin", "decision"], registry=self.registry
        )
        self._exceptions = Counter(
            EXCEPTIONS, EXCEPTIONS_HELP, ["exception", "plugin", "state"], registry=self.registry
        )
        self._duration = Histogram(
            HISTOGRAM,
            HISTOGRAM_HELP,
            ["endpoint", "outcome"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        refusals = loop_series()
        self.registry.register(refusals.refused_family)
        self.registry.register(refusals.closed_family)
        self.refused = refusals.refused
        self._children: dict[tuple[str, str], Any] = {}
        self._decided: dict[tuple[str, str], Any] = {}
        self._collectors: list[Collector] = []
        self._syncs: list[Callable[[], None]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def record(
        self,
        endpoint: str,
        outcome: str,
        seconds: float,
        decisions: Iterable[tuple[str, str]] = (),
        exceptions: Iterable[tuple[str, str, str]] = (),
    ) -> None:
        """Count one answered review, observe its latency, and count each plugin decision.

        Why the cached children: resolving label values through the library takes a lock
        and a dict lookup per call; a review needs the same few series again and again.
        """
        key = (endpoint, outcome)
        pair = self._children.get(key)
        if pair is None:
            pair = self._children[key] = (
                self._requests.labels(endpoint, outcome),
                self._duration.labels(endpoint, outcome),
            )
        pair[0].inc()
        pair[1].observe(seconds)
        for decision in decisions:
            child = self._decided.get(decision)
            if child is None:
                child = self._decided[decision] = self._decisions.labels(*decision)
            child.inc()
        for labels in exceptions:
            self._exceptions.labels(*labels).inc()

    def collect(self, collector: Collector) -> None:
        """Register a collector read at scrape time (its families describe this worker)."""
        self._collectors.append(collector)
        if self.directory is None:
            self.registry.register(collector)

    def sync(self, update: Callable[[], None]) -> None:
        """Run ``update`` about once a second (after :meth:`start`) and before each scrape.

        Why: figures kept by other objects of a worker (the cluster caches) reach the
        shared files only when copied; scrapes answered by another worker see them at
        most a second late, the answering worker's own are current.
        """
        self._syncs.append(update)

    def _run_syncs(self) -> None:
        for update in self._syncs:
            update()

    def start(self, interval: float = 1.0) -> None:
        """Start the sync thread (a no-op without anything to sync)."""
        if not self._syncs or self._thread is not None:
            return

        def loop() -> None:
            while not self._stop.wait(interval):
                self._run_syncs()

        self._thread = threading.Thread(target=loop, name="metrics-sync", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the sync thread after one last sync, so a worker's final counts are kept."""
        self._stop.set()
        self._run_syncs()

    def render(self) -> bytes:
        """The exposition: every worker's series in multiprocess mode, plus the collectors."""
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.multiprocess import MultiProcessCollector

        self._run_syncs()
        if self.directory is None:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=self.directory)  # type: ignore[no-untyped-call]
        for collector in self._collectors:
            registry.register(collector)
        return generate_latest(registry)


class LoopSeries:
    """Refusals and connections closed for room, counted with closed label sets.

    Why one per process, shared by the worker's loop and the app: any client, without
    authentication, can make as many refusals as it likes, so they are counted instead of
    logged line by line, and no label takes a value the client chose (a path, an address):
    ``port`` is one of :data:`PORTS`, ``status`` one of :data:`REFUSAL_STATUSES`
    (anything else is ``other``), ``reason`` one of :data:`CLOSE_REASONS`. Every series of
    those sets exists from the start, at zero, so a refusal changes a count and never the
    set of series a scrape reads.
    """

    def __init__(self) -> None:
        from prometheus_client import Counter

        self.refused_family = Counter(REFUSED, REFUSED_HELP, ["port", "status"], registry=None)
        self.closed_family = Counter(CLOSED, CLOSED_HELP, ["port", "reason"], registry=None)
        self._children: dict[tuple[str, str, str], Any] = {}
        self._lock = threading.Lock()
        for port in sorted(PORTS):
            for status in sorted(REFUSAL_STATUSES):
                self._child(REFUSED, self.refused_family, port, str(status))
            for reason in sorted(CLOSE_REASONS):
                self._child(CLOSED, self.closed_family, port, reason)

    def _child(self, name: str, family: Any, port: str, value: str) -> Any:
        key = (name, port, value)
        child = self._children.get(key)
        if child is None:
            with self._lock:
                child = self._children[key] = family.labels(port, value)
        return child

    def refused(self, port: str, status: int) -> None:
        """Count a request refused with ``status`` on ``port`` (``admission`` or ``metrics``)."""
        label = str(status) if status in REFUSAL_STATUSES else "other"
        port = port if port in PORTS else "admission"
        self._child(REFUSED, self.refused_family, port, label).inc()

    def closed(self, port: str, reason: str) -> None:
        """Count a connection on ``port`` closed for room (or refused: ``full``), by ``reason``."""
        label = reason if reason in CLOSE_REASONS else "other"
        port = port if port in PORTS else "admission"
        self._child(CLOSED, self.closed_family, port, label).inc()


_loop_series: list[LoopSeries] = []
_loop_lock = threading.Lock()


def loop_series() -> LoopSeries:
    """The process's :class:`LoopSeries`, made on first use (after the environment is set).

    Why one: in multiprocess mode two objects counting the same series in one process
    would each write their own total into the shared file, and one would overwrite the
    other.
    """
    with _loop_lock:
        if not _loop_series:
            _loop_series.append(LoopSeries())
        return _loop_series[0]


class GaugeCollector:
    """Scrape-time gauges without labels, each omitted while its reader returns ``None``.

    Why: certificate expiry is a property of files, read when asked; storing it in the
    shared files would show a stale value from whichever worker wrote last.
    """

    def __init__(self) -> None:
        self._gauges: list[tuple[str, str, Callable[[], float | None]]] = []

    def add(self, name: str, help_text: str, read: Callable[[], float | None]) -> None:
        """Expose ``read()`` as gauge ``name``."""
        self._gauges.append((name, help_text, read))

    def collect(self) -> Iterable[Any]:
        """The current values (called by the registry at each scrape)."""
        from prometheus_client.core import GaugeMetricFamily

        for name, help_text, read in self._gauges:
            value = read()
            if value is not None:
                yield GaugeMetricFamily(name, help_text, value=value)


class BuildInfo:
    """``placement_webhooks_build_info{version="..."} 1``: which build a scrape came from.

    Why a collector and not a gauge in the shared files: the value is a constant of the
    code the worker runs, so reading it at scrape time is exact, and a worker replaced by
    a newer build never leaves its old version behind in the multiprocess files.
    """

    def collect(self) -> Iterable[Any]:
        """The one series (called by the registry at each scrape)."""
        from prometheus_client.core import GaugeMetricFamily

        family = GaugeMetricFamily(BUILD_INFO, BUILD_INFO_HELP, labels=["version"])
        family.add_metric([__version__], 1)
        yield family


class ReloadCounter:
    """The master's count of SIGHUP reloads by outcome, scraped through any worker.

    Why it works from the master: in multiprocess mode a series is a file in the shared
    directory, named by the process that writes it, and a scrape adds up every file there,
    so the master's own counter shows beside the workers' series (as long as it lives,
    which is as long as the server). Without multiprocess mode (no runtime directory) no
    scrape could see it, and counting is skipped; the log line remains.
    """

    def __init__(self) -> None:
        self._children: dict[str, Any] = {}
        if multiprocess_dir() is None:
            return
        from prometheus_client import Counter

        counter = Counter(RELOADS, RELOADS_HELP, ["outcome"], registry=None)
        # Both series exist from the start at 0, so an alert on their increase sees the first.
        self._children = {outcome: counter.labels(outcome) for outcome in RELOAD_OUTCOMES}

    def count(self, outcome: str) -> None:
        """Count one reload that was ``applied`` or ``refused``."""
        child = self._children.get(outcome)
        if child is not None:
            child.inc()


def mark_worker_dead(pid: int) -> None:
    """Drop a dead worker's ``live*`` gauges from the shared files (master, on child exit).

    Why: a replaced worker's cache gauges would otherwise keep counting in the pod's
    ``livemin``/``livemax`` figures; its counters stay, so totals never go backwards.
    """
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        from prometheus_client.multiprocess import mark_process_dead

        mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]
