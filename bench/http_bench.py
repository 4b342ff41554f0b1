"""HTTP benchmark: the real server against a bare Flask app and a bare WSGI function.

All three run under identical gunicorn settings (those of the real server and the chart)
over TLS, driven by ``wrk`` side by side in one run, interleaved, median of ``--repeat``.
Absolute numbers on a shared machine are noise; the ratios are the result.

Per worker: each server runs ONE worker (4 threads) by default. With several workers,
wrk's keep-alive connections land on them at random (the kernel hands each accept to
whichever worker asks first), and a run in which one worker holds most connections halves
that server's throughput whatever its code does: the ratios swung from 0.33x to 1.7x that
way. One worker per server measures the code, not the draw. Each ratio is printed as the
median of the repeats and their spread (min-max).

Usage: python -m bench.http_bench [--duration 5] [--repeat 3] [--connections 8] [--workers 1]
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import payloads
from webhooks.certs import generate

LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
if os.getenv("BENCH_CLOSE") == "1" then wrk.headers["Connection"] = "close" end
local f = io.open(os.getenv("BENCH_BODY"), "rb")
wrk.body = f:read("*all")
f:close()
"""

KINDS = ("real", "flask", "wsgi")
SCENARIOS = (
    ("4 KB pod, keep-alive", "small", False),
    ("200 KB pod, keep-alive", "large", False),
    ("4 KB pod, Connection: close", "small", True),
)


@dataclass
class Run:
    """One wrk run's figures."""

    rps: float
    p50_ms: float
    p99_ms: float
    errors: int


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def parse_wrk(out: str) -> Run:
    """Requests/s, p50, p99 and error counts from ``wrk --latency`` output."""
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"\s50%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"\s99%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    errors = 0
    for pattern in (
        r"Non-2xx or 3xx responses: (\d+)",
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
    ):
        match = re.search(pattern, out)
        if match:
            errors += sum(int(g) for g in match.groups())
    return Run(rps, p50, p99, errors)


def _spawn(kind: str, port: int, certs: Path, workers: int = 2) -> subprocess.Popen[bytes]:
    """``python -m bench.serve KIND`` on ``port``, in a session of its own for :func:`stop`."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.serve",
            kind,
            "--bind",
            f"127.0.0.1:{port}",
            "--cert-dir",
            str(certs),
            "--workers",
            str(workers),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _first_200(
    port: int,
    ca: Path,
    until: float,
    request: tuple[str, str, bytes | None] = ("GET", "/healthz", None),
    pause: float = 0.02,
) -> float | None:
    """When (``time.monotonic()``) ``request`` over TLS first answered 200; ``None`` at ``until``.

    Why here and not shared with the tests: bench must not import tests, and a polling
    client has no place in the shipped package; ``pause`` is short because the boot figure
    is measured with it.
    """
    ctx = ssl.create_default_context(cafile=str(ca))
    method, path, body = request
    headers = {"Content-Type": "application/json"} if body is not None else {}
    while time.monotonic() < until:
        try:
            conn = http.client.HTTPSConnection("localhost", port, context=ctx, timeout=2)
            conn.request(method, path, body=body, headers=headers)
            if conn.getresponse().status == 200:
                return time.monotonic()
        except (OSError, http.client.HTTPException):
            time.sleep(pause)
    return None


def start(kind: str, certs: Path, workers: int = 2) -> tuple[subprocess.Popen[bytes], int]:
    """Start one app under gunicorn; returns the process and its port."""
    port = _free_port()
    proc = _spawn(kind, port, certs, workers)
    if _first_200(port, certs / "ca.crt", time.monotonic() + 30) is None:
        stop(proc)
        raise SystemExit(f"{kind} server did not start")
    return proc, port


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server started by :func:`start`."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def worker_rss_mib(master: int) -> list[float]:
    """Resident memory of each worker (children of the gunicorn master), in MiB."""
    out = []
    children = Path(f"/proc/{master}/task/{master}/children")
    for pid in children.read_text().split() if children.exists() else []:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                out.append(int(line.split()[1]) / 1024)
    return out


def boot_to_first_200(certs: Path, body: Path) -> float:
    """Seconds from process start to the first 200 answer on /mutate."""
    port = _free_port()
    started = time.monotonic()
    proc = _spawn("real", port, certs)
    try:
        request = ("POST", "/mutate", body.read_bytes())
        answered = _first_200(port, certs / "ca.crt", started + 30, request, pause=0.005)
        return float("nan") if answered is None else answered - started
    finally:
        stop(proc)


def main() -> None:
    """Run every scenario against every app and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="gunicorn workers per server")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit(
            "wrk is not installed: run `make bench` (it installs wrk) or apt-get install wrk"
        )
    work = Path(tempfile.mkdtemp(prefix="bench-"))
    certs = work / "certs"
    generate(certs, hosts=["localhost", "127.0.0.1"])
    lua = work / "post.lua"
    lua.write_text(LUA)
    bodies = {"small": work / "small.json", "large": work / "large.json"}
    bodies["small"].write_bytes(payloads.small())
    bodies["large"].write_bytes(payloads.large())
    print(
        f"machine: {os.cpu_count()} cores; "
        f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s, "
        f"{args.workers} worker(s) x 4 threads per server, "
        f"median of {args.repeat}; review sizes: 4 KB = {bodies['small'].stat().st_size} B, "
        f"200 KB = {bodies['large'].stat().st_size} B"
    )
    servers = {kind: start(kind, certs, args.workers) for kind in KINDS}
    results: dict[tuple[str, str], list[Run]] = {}
    try:
        for label, size, close in SCENARIOS:
            for _ in range(args.repeat):
                for kind in KINDS:
                    _, port = servers[kind]
                    env = {
                        **os.environ,
                        "BENCH_BODY": str(bodies[size]),
                        "BENCH_CLOSE": "1" if close else "0",
                    }
                    out = subprocess.run(
                        [
                            "wrk",
                            f"-t{args.threads}",
                            f"-c{args.connections}",
                            f"-d{args.duration}s",
                            "--latency",
                            "-s",
                            str(lua),
                            f"https://127.0.0.1:{port}/mutate",
                        ],
                        capture_output=True,
                        text=True,
                        env=env,
                        check=True,
                        timeout=args.duration + 60,
                    ).stdout
                    results.setdefault((label, kind), []).append(parse_wrk(out))
        rss = worker_rss_mib(servers["real"][0].pid)
    finally:
        for proc, _ in servers.values():
            stop(proc)
    boot = statistics.median(boot_to_first_200(certs, bodies["small"]) for _ in range(3))

    def med(label: str, kind: str, attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in results[(label, kind)])

    print()
    print(f"{'scenario':30} {'app':6} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}")
    for label, _, _ in SCENARIOS:
        for kind in KINDS:
            errors = sum(r.errors for r in results[(label, kind)])
            print(
                f"{label:30} {kind:6} {med(label, kind, 'rps'):9.0f} "
                f"{med(label, kind, 'p50_ms'):8.2f} "
                f"{med(label, kind, 'p99_ms'):8.2f} {errors:7d}"
            )

    def ratio(label: str, attr: str, base: str) -> str:
        """Median and spread of the per-repeat ratios real/base (same repeat, side by side)."""
        pairs = zip(results[(label, "real")], results[(label, base)], strict=True)
        values = [getattr(r, attr) / getattr(b, attr) for r, b in pairs]
        return f"{statistics.median(values):4.2f}x ({min(values):.2f}-{max(values):.2f})"

    print()
    print("ratios (real / bare), median of the repeats (spread):")
    for label, _, _ in SCENARIOS:
        print(
            f"  {label:30} req/s vs Flask {ratio(label, 'rps', 'flask')}   "
            f"vs WSGI {ratio(label, 'rps', 'wsgi')}   "
            f"p99 vs Flask {ratio(label, 'p99_ms', 'flask')}"
        )
    print()
    print(f"worker RSS (real server, no cluster source): {', '.join(f'{r:.1f}' for r in rss)} MiB")
    print(f"boot to first 200 on /mutate: {boot:.2f} s (median of 3)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
