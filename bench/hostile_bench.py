"""Hostile-load benchmark: real reviews on new connections while other clients misbehave.

The real server (2 workers x 4 threads, the chart's settings) is started over TLS. A
separate process then holds, for the whole run, 500 TCP connections that never start TLS,
100 TLS connections that say nothing after their handshake, and 20 clients that send a
review body one byte a second. Whenever the server closes one of them (the handshake and
request deadlines of ``--io-timeout``), it is opened again, so the pressure stays on. Meanwhile
this process sends real AdmissionReviews at a steady rate, each on a new connection (TCP,
TLS handshake, POST /mutate, response), and times them end to end.

Prints p50/p99/max and errors of the real reviews, how many hostile connections were held,
and the workers' peak RSS (``VmHWM`` at the end of the run). Targets (issue 13): p99 <= 50
ms over 200 reviews, no errors, worker RSS <= 80 MiB. The whole run is made twice: with the
default config and with the full config (``bench/configs/full.yaml``), both reading their
Namespaces and RuntimeClasses from a fake API server in this process into their cache.

``--metrics-flood N`` runs the metrics-port flood instead (issue 30): the server also
serves its plain metrics port, and N connections to it each send one byte of a head and
another each second (within the I/O timeout, which the bytes do not extend), reopened
whenever the server closes them; the reviews are timed the same way, and a kubelet-like
probe of ``/healthz`` on the metrics port is sent every tenth review. Before each port had
a budget of its own, 2,500 such connections filled the cap both ports shared and 6 of 91
reviews were answered. Target: every review and every probe answered.

Usage: python -m bench.hostile_bench [--reviews 200] [--rate 10] [--idle 500] [--silent 100]
       [--slow 20] [--metrics-flood 2500]
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import multiprocessing.synchronize
import selectors
import shutil
import socket
import ssl
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from bench import payloads, scenario
from bench.servers import (
    served_cluster,
    start,
    stop,
    worker_peak_mib,
    worker_rss_mib,
)
from controlplane.harness.process import free_port
from webhooks.certs.pki import generate


def _tls(port: int, ctx: ssl.SSLContext) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return ctx.wrap_socket(raw, server_hostname="localhost")


#: The kinds of hostile connection: idle TCP, silent TLS, a body a byte a second, and one
#: byte of a head (topped up each second) on the plain metrics port.
KINDS = 4


class Holder:
    """The hostile clients of one run, driven by one selector loop in their own process.

    ``held`` is a shared array: connections currently open of each kind (:data:`KINDS`),
    then how often each kind was reopened after the server closed it.
    """

    def __init__(
        self,
        port: int,
        cafile: str,
        counts: tuple[int, ...],
        held: Any,
        metrics_port: int = 0,
    ) -> None:
        self.port = port
        self.metrics_port = metrics_port
        self.ctx = ssl.create_default_context(cafile=cafile)
        self.counts = counts
        self.held = held
        self.body = payloads.small()
        self.head = (
            b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(self.body)).encode() + b"\r\n\r\n"
        )
        self.selector = selectors.DefaultSelector()
        self.kinds: dict[int, tuple[int, Any]] = {}
        self.slow_sent: dict[int, int] = {}

    def open_one(self, kind: int) -> None:
        """Open one connection of ``kind`` (0 idle TCP, 1 silent TLS, 2 byte-a-second, 3 one
        byte of a head on the metrics port)."""
        try:
            if kind == 0:
                sock: Any = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            elif kind == 3:
                sock = socket.create_connection(("127.0.0.1", self.metrics_port), timeout=10)
                sock.sendall(b"G")
                self.slow_sent[sock.fileno()] = 0
            else:
                sock = _tls(self.port, self.ctx)
                if kind == 2:
                    sock.sendall(self.head)
                    self.slow_sent[sock.fileno()] = 0
            sock.setblocking(False)
        except OSError:
            return
        self.kinds[sock.fileno()] = (kind, sock)
        self.selector.register(sock, selectors.EVENT_READ)
        self.held[kind] += 1

    def drop(self, fd: int) -> None:
        """Forget a connection the server closed (or answered), counting the reopening."""
        kind, sock = self.kinds.pop(fd)
        self.selector.unregister(sock)
        self.slow_sent.pop(fd, None)
        sock.close()
        self.held[kind] -= 1
        self.held[KINDS + kind] += 1

    def trickle(self) -> None:
        """Send every slow client's next byte (of a body, or of a head on the metrics port)."""
        for fd, sent in list(self.slow_sent.items()):
            kind, sock = self.kinds[fd]
            try:
                sock.send(b"E" if kind == 3 else self.body[sent : sent + 1])
                self.slow_sent[fd] = (sent + 1) % len(self.body)
            except (ssl.SSLWantWriteError, BlockingIOError):
                pass
            except OSError:
                self.drop(fd)

    def run(self, stop_event: multiprocessing.synchronize.Event) -> None:
        """Keep every kind at its count, a byte a second for the slow ones, until stopped."""
        next_byte = time.monotonic()
        while not stop_event.is_set():
            for kind, want in enumerate(self.counts):
                for _ in range(min(want - self.held[kind], 50)):
                    self.open_one(kind)
            for key, _ in self.selector.select(0.05):
                kind, sock = self.kinds[key.fd]
                try:
                    data = sock.recv(65536)
                except (ssl.SSLWantReadError, BlockingIOError):
                    continue
                except OSError:
                    data = b""
                if not data or kind != 1:
                    self.drop(key.fd)
            if time.monotonic() >= next_byte:
                next_byte += 1.0
                self.trickle()
        for fd in list(self.kinds):
            self.drop(fd)


def hold(
    port: int,
    cafile: str,
    counts: tuple[int, ...],
    stop_event: multiprocessing.synchronize.Event,
    held: Any,
    metrics_port: int = 0,
) -> None:
    """Process entry point: run a :class:`Holder` until ``stop_event`` is set.

    Its own process, so its work never delays the timed client.
    """
    Holder(port, cafile, counts, held, metrics_port).run(stop_event)


def review_once(port: int, ctx: ssl.SSLContext, body: bytes, uid: str) -> tuple[float, str | None]:
    """One review on a new connection; seconds taken, and what went wrong if anything."""
    started = time.perf_counter()
    conn = http.client.HTTPSConnection("localhost", port, context=ctx, timeout=10)
    try:
        conn.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        data = response.read()
        if response.status != 200:
            return time.perf_counter() - started, f"HTTP {response.status}"
        if orjson.loads(data)["response"]["uid"] != uid:
            return time.perf_counter() - started, "wrong uid"
    except (OSError, http.client.HTTPException) as exc:
        return time.perf_counter() - started, repr(exc)
    finally:
        conn.close()
    return time.perf_counter() - started, None


def steady_reviews(
    args: argparse.Namespace, port: int, cafile: str, prefix: str
) -> Iterator[tuple[int, float, str | None]]:
    """Send ``args.reviews`` real reviews at ``args.rate`` per second, each on a new
    connection; yields each one's number, seconds and error (``None``: answered).

    Why a generator: each run watches something else between reviews (worker memory, the
    metrics port), and the pace must not depend on what it watches.
    """
    ctx = ssl.create_default_context(cafile=cafile)
    template = orjson.loads(payloads.small())
    started = time.monotonic()
    for i in range(args.reviews):
        wait = started + i / args.rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        uid = f"{prefix}-{i}"
        template["request"]["uid"] = uid
        seconds, error = review_once(port, ctx, orjson.dumps(template), uid)
        yield i, seconds, error


@contextmanager
def holding(
    port: int, cafile: str, counts: tuple[int, int, int, int], metrics_port: int = 0
) -> Iterator[Any]:
    """The hostile connections of ``counts`` held open (for at most 60 s of trying) while
    the block runs; yields the shared counters :func:`hold` keeps. Why one place: every run
    must stop its holder the same way, whatever the block raised."""
    held = multiprocessing.Array("i", 2 * KINDS, lock=False)
    stop_event = multiprocessing.Event()
    holder = multiprocessing.Process(
        target=hold, args=(port, cafile, counts, stop_event, held, metrics_port), daemon=True
    )
    holder.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(held[i] < counts[i] for i in range(4)):
            time.sleep(0.1)
        time.sleep(1.0)
        yield held
    finally:
        stop_event.set()
        holder.join(timeout=10)
        if holder.is_alive():
            holder.kill()


def timed_reviews(
    args: argparse.Namespace, port: int, cafile: str, master: int, held: Any
) -> tuple[list[float], list[str], dict[int, float], list[int]]:
    """Send the real reviews at the steady rate; latencies, errors, peak RSS, low-water marks."""
    latencies: list[float] = []
    errors: list[str] = []
    rss: dict[int, float] = {}
    low_water = [args.idle, args.silent, args.slow]
    for i, seconds, error in steady_reviews(args, port, cafile, "hostile"):
        latencies.append(seconds)
        if error:
            errors.append(error)
        for kind in range(3):
            low_water[kind] = min(low_water[kind], held[kind])
        if i % 10 == 0:
            for n, mib in enumerate(worker_rss_mib(master)):
                rss[n] = max(rss.get(n, 0.0), mib)
    return latencies, errors, rss, low_water


def run(args: argparse.Namespace, certs: Path, config: Path) -> None:
    """One run with ``config``: start the server and the hostile clients, time the reviews."""
    cafile = str(certs / "ca.crt")
    proc, port = start("real", certs, 2, config)
    counts = (args.idle, args.silent, args.slow, 0)
    try:
        with holding(port, cafile, counts) as held:
            print(
                f"holding: {held[0]} idle TCP, {held[1]} silent TLS, {held[2]} byte-a-second bodies"
            )
            latencies, errors, _, low_water = timed_reviews(args, port, cafile, proc.pid, held)
            reopened = (held[KINDS], held[KINDS + 1], held[KINDS + 2])
            peaks = worker_peak_mib(proc.pid)
    finally:
        stop(proc)
    ms = sorted(s * 1000 for s in latencies)
    p50 = statistics.median(ms)
    p99 = ms[max(0, round(0.99 * len(ms)) - 1)]
    print(
        f"held at least: {low_water[0]} idle TCP, {low_water[1]} silent TLS, "
        f"{low_water[2]} slow bodies; reopened after the server closed them: "
        f"{reopened[0]} / {reopened[1]} / {reopened[2]}"
    )
    print(
        f"{len(ms)} reviews on new connections at {args.rate:g}/s: p50 {p50:.1f} ms, "
        f"p99 {p99:.1f} ms, max {ms[-1]:.1f} ms, errors {len(errors)}"
        + (f" (first: {errors[0]})" if errors else "")
    )
    print(f"worker RSS peak (VmHWM per worker): {', '.join(f'{v:.1f}' for v in peaks)} MiB")
    met = p99 <= 50 and not errors and bool(peaks) and max(peaks) <= 80
    print(f"targets (p99 <= 50 ms, no errors, RSS <= 80 MiB): {'met' if met else 'NOT met'}")


def probe_once(metrics_port: int) -> str | None:
    """A kubelet-like probe: ``GET /healthz`` on a new plain connection; what went wrong."""
    conn = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=10)
    try:
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        response.read()
        return None if response.status == 200 else f"HTTP {response.status}"
    except (OSError, http.client.HTTPException) as exc:
        return repr(exc)
    finally:
        conn.close()


def flood_reviews(
    args: argparse.Namespace, port: int, cafile: str, metrics_port: int, held: Any
) -> tuple[list[float], list[str], list[str | None], int]:
    """The timed reviews, and a probe every tenth; latencies, errors, probes, low-water mark."""
    latencies: list[float] = []
    errors: list[str] = []
    probes: list[str | None] = []
    low_water = args.metrics_flood
    for i, seconds, error in steady_reviews(args, port, cafile, "flood"):
        latencies.append(seconds)
        if error:
            errors.append(error)
        if i % 10 == 0:
            probes.append(probe_once(metrics_port))
        low_water = min(low_water, held[3])
    return latencies, errors, probes, low_water


def metrics_flood(args: argparse.Namespace, certs: Path, config: Path) -> None:
    """The metrics-port flood: one-byte heads held on the plain port while reviews are timed."""
    cafile = str(certs / "ca.crt")
    metrics_port = free_port()
    proc, port = start("real", certs, 2, config, metrics_port)
    counts = (0, 0, 0, args.metrics_flood)
    try:
        with holding(port, cafile, counts, metrics_port) as held:
            print(f"holding: {held[3]} connections to the metrics port, one byte of a head each")
            latencies, errors, probes, low_water = flood_reviews(
                args, port, cafile, metrics_port, held
            )
            reopened = held[KINDS + 3]
            peaks = worker_peak_mib(proc.pid)
    finally:
        stop(proc)
    ms = sorted(s * 1000 for s in latencies)
    p99 = ms[max(0, round(0.99 * len(ms)) - 1)]
    failed_probes = [p for p in probes if p is not None]
    print(
        f"held at least {low_water} one-byte heads; reopened after the server closed them: "
        f"{reopened}"
    )
    print(
        f"reviews answered: {len(ms) - len(errors)} of {len(ms)} on new connections at "
        f"{args.rate:g}/s: p50 {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms, "
        f"max {ms[-1]:.1f} ms" + (f" (first error: {errors[0]})" if errors else "")
    )
    print(
        f"probes of /healthz on the metrics port answered: {len(probes) - len(failed_probes)} "
        f"of {len(probes)}" + (f" (first error: {failed_probes[0]})" if failed_probes else "")
    )
    print(f"worker RSS peak (VmHWM per worker): {', '.join(f'{v:.1f}' for v in peaks)} MiB")
    met = not errors and not failed_probes
    print(f"target (every review and probe answered): {'met' if met else 'NOT met'}")


def main() -> None:
    """For each config: start the server, the hostile clients, then time the real reviews."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reviews", type=int, default=200)
    parser.add_argument("--rate", type=float, default=10.0, help="real reviews per second")
    parser.add_argument("--idle", type=int, default=500, help="TCP connections that never talk")
    parser.add_argument("--silent", type=int, default=100, help="TLS connections, then silence")
    parser.add_argument("--slow", type=int, default=20, help="bodies sent a byte a second")
    parser.add_argument(
        "--metrics-flood",
        type=int,
        default=0,
        metavar="N",
        help="instead: N one-byte heads held on the metrics port (the issue's figure: 2500)",
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hostile-"))
    certs = work / "certs"
    generate(certs, hosts=["localhost", "127.0.0.1"])
    try:
        with served_cluster(work) as (_, configs):
            if args.metrics_flood:
                print(f"\n{scenario.describe('default', scenario.config('default'))}")
                print("2 workers x 4 threads, --max-connections 1000; the metrics port flooded")
                metrics_flood(args, certs, configs["default"])
                return
            for name, config in configs.items():
                print(f"\n{scenario.describe(name, scenario.config(name))}")
                print("2 workers x 4 threads; Namespaces and RuntimeClasses from a fake API server")
                run(args, certs, config)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
