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

Usage: python -m bench.hostile_bench [--reviews 200] [--rate 10] [--idle 500] [--silent 100]
       [--slow 20]
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
from pathlib import Path
from typing import Any

import orjson

from bench import payloads, scenario
from bench.servers import served_cluster, start, stop, worker_peak_mib, worker_rss_mib
from webhooks.certs import generate


def _tls(port: int, ctx: ssl.SSLContext) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return ctx.wrap_socket(raw, server_hostname="localhost")


class Holder:
    """The hostile clients of one run, driven by one selector loop in their own process.

    ``held`` is a shared array: connections currently open of each kind (idle TCP, silent
    TLS, byte-a-second), then how often each kind was reopened after the server closed it.
    """

    def __init__(self, port: int, cafile: str, counts: tuple[int, int, int], held: Any) -> None:
        self.port = port
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
        """Open one connection of ``kind`` (0 idle TCP, 1 silent TLS, 2 byte-a-second)."""
        try:
            if kind == 0:
                sock: Any = socket.create_connection(("127.0.0.1", self.port), timeout=10)
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
        self.held[3 + kind] += 1

    def trickle(self) -> None:
        """Send every slow client's next byte."""
        for fd, sent in list(self.slow_sent.items()):
            try:
                self.kinds[fd][1].send(self.body[sent : sent + 1])
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
    counts: tuple[int, int, int],
    stop_event: multiprocessing.synchronize.Event,
    held: Any,
) -> None:
    """Process entry point: run a :class:`Holder` until ``stop_event`` is set.

    Its own process, so its work never delays the timed client.
    """
    Holder(port, cafile, counts, held).run(stop_event)


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


def timed_reviews(
    args: argparse.Namespace, port: int, cafile: str, master: int, held: Any
) -> tuple[list[float], list[str], dict[int, float], list[int]]:
    """Send the real reviews at the steady rate; latencies, errors, peak RSS, low-water marks."""
    ctx = ssl.create_default_context(cafile=cafile)
    template = orjson.loads(payloads.small())
    latencies: list[float] = []
    errors: list[str] = []
    rss: dict[int, float] = {}
    low_water = [args.idle, args.silent, args.slow]
    started = time.monotonic()
    for i in range(args.reviews):
        wait = started + i / args.rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        uid = f"hostile-{i}"
        template["request"]["uid"] = uid
        seconds, error = review_once(port, ctx, orjson.dumps(template), uid)
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
    counts = (args.idle, args.silent, args.slow)
    held = multiprocessing.Array("i", 6, lock=False)
    stop_event = multiprocessing.Event()
    holder = multiprocessing.Process(
        target=hold, args=(port, cafile, counts, stop_event, held), daemon=True
    )
    try:
        holder.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(held[i] < counts[i] for i in range(3)):
            time.sleep(0.1)
        time.sleep(1.0)
        print(f"holding: {held[0]} idle TCP, {held[1]} silent TLS, {held[2]} byte-a-second bodies")
        latencies, errors, _, low_water = timed_reviews(args, port, cafile, proc.pid, held)
        reopened = (held[3], held[4], held[5])
        peaks = worker_peak_mib(proc.pid)
    finally:
        stop_event.set()
        holder.join(timeout=10)
        if holder.is_alive():
            holder.kill()
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


def main() -> None:
    """For each config: start the server, the hostile clients, then time the real reviews."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reviews", type=int, default=200)
    parser.add_argument("--rate", type=float, default=10.0, help="real reviews per second")
    parser.add_argument("--idle", type=int, default=500, help="TCP connections that never talk")
    parser.add_argument("--silent", type=int, default=100, help="TLS connections, then silence")
    parser.add_argument("--slow", type=int, default=20, help="bodies sent a byte a second")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hostile-"))
    certs = work / "certs"
    generate(certs, hosts=["localhost", "127.0.0.1"])
    try:
        with served_cluster(work) as (_, configs):
            for name, config in configs.items():
                print(f"\n{scenario.describe(name, scenario.config(name))}")
                print("2 workers x 4 threads; Namespaces and RuntimeClasses from a fake API server")
                run(args, certs, config)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
