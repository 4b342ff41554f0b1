"""What the log and trace modes of ``serve`` cost a review: five real servers side by side.

Each mode is a real server (``bench.serve real``: the real server's gunicorn settings,
ONE worker x 4 threads, the same config, its cluster from a fake API server in this
process) with stderr to a file, differing only in these options:

- ``default``: ``serve``'s defaults (``--log-format text``, a review line per review);
- ``no-review-log``: ``--no-log-reviews``, gunicorn's lines only;
- ``json``: ``--log-format json`` (every line JSON, a review line with its plugin halves);
- ``otlp``: ``--otlp-endpoint`` to a collector in this process that answers 200;
- ``otlp-stuck``: ``--otlp-endpoint`` to one that accepts connections and never answers.

Every mode gets the same ``/mutate`` reviews (the benchmarks' ~4 KB Pod), each with a
sampled W3C ``traceparent`` of its own, over one keep-alive TLS connection per mode. The
modes take turns in ``--rounds`` rounds (the order rotating each round), so load on a
shared machine falls on all of them alike. Printed per mode: median and p99 latency seen
by the client, the worker's CPU per review (user + system time from ``/proc/<pid>/stat``
over the whole measured run, its idle threads included, in clock ticks), and each as a
ratio to ``default``; the median's ratio is the median of the rounds' own ratios, with
their spread. Then what reached the answering collector (spans per review, and whether
every review span carries the trace of its header), the review lines each log holds, and
a growth line for ``json``, ``otlp`` and ``otlp-stuck``: N (``--growth``) reviews then 2N
more on the same server, their time and the worker's ``VmRSS`` before and after each, so a
cost or a queue that grows with the reviews shows (the span queue is bounded at
:data:`~webhooks.server.tracing.QUEUE_SIZE` spans, so its memory should stop growing).
Why N is large: against a stuck collector each export waits
:data:`~webhooks.server.tracing.EXPORT_TIMEOUT` seconds before it gives up, so the growth
run must outlast many of those for what each failed export leaves behind to show.

Usage: python -m bench.tracing_bench [--reviews 2000] [--rounds 10] [--growth 10000]
       [--config default|full] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import http.server
import os
import secrets
import selectors
import shutil
import socket
import ssl
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from bench import payloads, scenario, servers
from webhooks.certs.pki import generate
from webhooks.server import tracing

#: Reviews each mode answers before measuring: imports, caches, the TLS session.
WARM_UP = 50
#: Seconds to wait after the last round, so the last batch of spans is exported (and
#: counted in the worker's CPU) before it is read.
SETTLE = 2.0 * tracing.SCHEDULE_DELAY_MS / 1000
#: The modes the growth lines run: the JSON review log, and spans to either collector.
GROWN = ("json", "otlp", "otlp-stuck")
#: ``--quick``: enough to see each mode work, not to quote.
QUICK = {"reviews": 300, "rounds": 3, "growth": 1000}


@dataclass
class Mode:
    """One server: its ``bench.serve`` options, and what it measured."""

    name: str
    options: list[str]
    proc: subprocess.Popen[bytes] | None = None
    port: int = 0
    worker: int = 0
    log: Path | None = None
    sent: int = 0
    latencies: list[float] = field(default_factory=list)
    round_medians: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0


class Collector(http.server.ThreadingHTTPServer):
    """An OTLP/HTTP endpoint that answers every export with 200 and keeps the bodies.

    Why keep them undecoded: decoding is done after the run, so this process's CPU during
    the rounds is the same whatever the mode.
    """

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        super().__init__(("127.0.0.1", 0), _Export)


class _Export(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.bodies.append(body)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")  # an empty ExportTraceServiceResponse
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the bench prints only figures."""


@contextlib.contextmanager
def stuck_collector() -> Iterator[int]:
    """A port that accepts connections and reads what is sent, and never answers; the
    exporter's requests wait until its own timeout."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    stop = threading.Event()

    def loop() -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(listener, selectors.EVENT_READ)
            while not stop.is_set():
                for key, _ in sel.select(0.2):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    if sock is listener:
                        conn, _ = listener.accept()
                        conn.setblocking(False)
                        sel.register(conn, selectors.EVENT_READ)
                    elif not sock.recv(65536):
                        sel.unregister(sock)
                        sock.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        listener.close()


class Client:
    """One keep-alive TLS connection that posts reviews to ``/mutate`` and times each."""

    def __init__(self, port: int, cafile: Path) -> None:
        ctx = ssl.create_default_context(cafile=str(cafile))
        self.conn = http.client.HTTPSConnection("localhost", port, context=ctx, timeout=30)

    def review(self, body: bytes, traceparent: str) -> float:
        """Seconds from sending the review to reading the whole answer."""
        headers = {"Content-Type": "application/json", "traceparent": traceparent}
        started = time.perf_counter()
        self.conn.request("POST", "/mutate", body=body, headers=headers)
        response = self.conn.getresponse()
        answer = response.read()
        elapsed = time.perf_counter() - started
        if response.status != 200:
            raise SystemExit(f"HTTP {response.status}: {answer[:200]!r}")
        return elapsed

    def batch(self, body: bytes, parents: list[str]) -> list[float]:
        """One review per header, in order."""
        return [self.review(body, parent) for parent in parents]

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def traceparents(count: int) -> list[str]:
    """``count`` sampled W3C trace headers, each a trace of its own."""
    return [f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01" for _ in range(count)]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (all its threads, those ended too)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def modes(collector_port: int, stuck_port: int) -> list[Mode]:
    """The five servers, ``default`` first (the ratios' base)."""
    return [
        Mode("default", []),
        Mode("no-review-log", ["--no-log-reviews"]),
        Mode("json", ["--log-format", "json"]),
        Mode("otlp", ["--otlp-endpoint", f"http://127.0.0.1:{collector_port}"]),
        Mode("otlp-stuck", ["--otlp-endpoint", f"http://127.0.0.1:{stuck_port}"]),
    ]


def measure(running: list[Mode], clients: dict[str, Client], body: bytes, args: Args) -> set[str]:
    """The interleaved rounds; fills each mode's latencies, round medians and CPU time, and
    returns the trace ids sent."""
    per_round = args.reviews // args.rounds
    parents = traceparents(per_round * args.rounds)
    before = {m.name: cpu_seconds(m.worker) for m in running}
    for r in range(args.rounds):
        chunk = parents[r * per_round : (r + 1) * per_round]
        order = running[r % len(running) :] + running[: r % len(running)]
        for mode in order:
            times = clients[mode.name].batch(body, chunk)
            mode.latencies.extend(times)
            mode.round_medians.append(statistics.median(times))
            mode.sent += len(times)
    time.sleep(SETTLE)
    for mode in running:
        mode.cpu_seconds = cpu_seconds(mode.worker) - before[mode.name]
    return {parent.split("-")[1] for parent in parents}


def growth(mode: Mode, client: Client, body: bytes, n: int) -> str:
    """N reviews, then 2N, on ``mode``'s server: time and the worker's RSS after each."""
    rss = [servers.memory_mib(mode.worker)[0]]
    seconds = []
    for count in (n, 2 * n):
        started = time.perf_counter()
        client.batch(body, traceparents(count))
        mode.sent += count
        seconds.append(time.perf_counter() - started)
        rss.append(servers.memory_mib(mode.worker)[0])
    return (
        f"growth, {mode.name}: N={n:,} reviews {seconds[0]:.2f} s, 2N {seconds[1]:.2f} s "
        f"({seconds[1] / seconds[0]:.2f}x); worker VmRSS before {rss[0]:.1f}, after N "
        f"{rss[1]:.1f}, after 2N more {rss[2]:.1f} MiB"
    )


def collected(bodies: list[bytes], sent: set[str], reviews: int) -> str:
    """What the answering collector received, decoded now that the rounds are over."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    spans = 0
    review_traces: list[str] = []
    for raw in bodies:
        request = ExportTraceServiceRequest()
        request.ParseFromString(raw)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                spans += len(scope.spans)
                review_traces.extend(
                    s.trace_id.hex() for s in scope.spans if s.name == tracing.REVIEW_SPAN
                )
    in_trace = sum(t in sent for t in review_traces)
    return (
        f"answering collector: {len(bodies)} exports, {spans:,} spans for {reviews:,} reviews "
        f"({spans / reviews:.2f} per review); review spans in the trace of their "
        f"traceparent: {in_trace:,} of {len(review_traces):,}"
    )


def review_lines(mode: Mode) -> str:
    """How many review lines a server's log holds for the reviews sent, and how many of
    its lines are JSON objects."""
    assert mode.log is not None
    lines = mode.log.read_bytes().splitlines()
    reviews = sum(b'"review"' in line for line in lines)
    parsed = 0
    for line in lines:
        with contextlib.suppress(orjson.JSONDecodeError):
            parsed += isinstance(orjson.loads(line), dict)
    return (
        f"{reviews:,} review lines for {mode.sent:,} reviews; "
        f"{parsed:,} of {len(lines):,} lines are JSON objects"
    )


def report(running: list[Mode], reviews: int) -> None:
    """The table and the ratios to ``default``."""
    base = running[0]

    def cpu_ms(mode: Mode) -> float:
        return mode.cpu_seconds * 1000 / reviews

    print(
        f"\n{'mode':14} {'median ms':>9} {'p99 ms':>7} {'CPU ms/review':>13}   "
        f"{'median vs default':>22} {'p99 vs default':>14} {'CPU vs default':>14}"
    )
    for mode in running:
        median = statistics.median(mode.latencies) * 1000
        p99 = percentile(mode.latencies, 0.99) * 1000
        base_p99 = percentile(base.latencies, 0.99) * 1000
        ratio = scenario.spread(scenario.ratios(mode.round_medians, base.round_medians))
        print(
            f"{mode.name:14} {median:9.2f} {p99:7.2f} {cpu_ms(mode):13.2f}   {ratio:>22} "
            f"{p99 / base_p99:13.2f}x {cpu_ms(mode) / cpu_ms(base):13.2f}x"
        )


@dataclass
class Args:
    """The options, after ``--quick``."""

    reviews: int
    rounds: int
    growth: int
    config: str


def parse() -> Args:
    """Read the options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reviews", type=int, default=2000, help="measured reviews per mode")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--growth", type=int, default=10000, help="N of the growth lines")
    parser.add_argument("--config", choices=list(scenario.CONFIG_FILES), default="default")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK}: a look, not a figure")
    ns = parser.parse_args()
    if ns.quick:
        ns.reviews, ns.rounds, ns.growth = QUICK["reviews"], QUICK["rounds"], QUICK["growth"]
    if ns.rounds < 1 or ns.reviews < ns.rounds or ns.growth < 1:
        parser.error("--reviews must be at least --rounds, --rounds and --growth at least 1")
    return Args(ns.reviews - ns.reviews % ns.rounds, ns.rounds, ns.growth, ns.config)


def main() -> None:
    """Start the five servers, run the rounds and the growth lines, print the figures."""
    args = parse()
    reason = tracing.missing()
    if reason is not None:
        raise SystemExit(reason)
    work = Path(tempfile.mkdtemp(prefix="bench-tracing-"))
    certs = work / "certs"
    generate(certs, hosts=["localhost", "127.0.0.1"])
    body = payloads.small()
    load = os.getloadavg()
    print(scenario.describe(args.config, scenario.config(args.config)))
    print(
        f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f} at the start; each server 1 worker x 4 threads, stderr to a file; "
        f"{args.reviews:,} reviews per mode ({len(body):,} B, POST /mutate, a sampled "
        f"traceparent each) in {args.rounds} interleaved rounds on one keep-alive TLS "
        f"connection per mode, after {WARM_UP} warm-up reviews"
    )
    collector = Collector()
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    clients: dict[str, Client] = {}
    running: list[Mode] = []
    try:
        with (
            stuck_collector() as stuck_port,
            servers.served_cluster(work) as (_, configs),
        ):
            for mode in modes(collector.server_address[1], stuck_port):
                mode.log = work / f"{mode.name}.log"
                mode.proc, mode.port = servers.start(
                    "real", certs, 1, configs[args.config], extra=mode.options, log=mode.log
                )
                running.append(mode)
                mode.worker = servers.workers(mode.proc.pid)[0]
                clients[mode.name] = Client(mode.port, certs / "ca.crt")
                clients[mode.name].batch(body, traceparents(WARM_UP))
                mode.sent += WARM_UP
            time.sleep(SETTLE)  # the warm-up's spans exported, and not counted
            collector.bodies.clear()
            sent = measure(running, clients, body, args)
            exported = list(collector.bodies)
            report(running, args.reviews)
            print()
            by_name = {m.name: m for m in running}
            for name in GROWN:
                print(growth(by_name[name], clients[name], body, args.growth), flush=True)
    finally:
        for client in clients.values():
            client.close()
        for mode in running:
            if mode.proc is not None:
                servers.stop(mode.proc)
        collector.shutdown()
    print()
    print(collected(exported, sent, args.reviews))
    for mode in running:
        print(f"log of {mode.name}: {review_lines(mode)}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
