"""HTTP benchmark: the real server, with the default and with the full config, against a
bare Flask app and a bare WSGI function.

All four run under identical gunicorn settings (those of the real server and the chart)
over TLS, driven by ``wrk`` side by side in one run, interleaved, median of ``--repeat``.
Absolute numbers on a shared machine are noise; the ratios are the result. The two real
servers read their Namespaces and RuntimeClasses from a fake API server in this process
(``bench/fakeapi/``: list and watch into the server's cache, as from a cluster), holding
``bench/configs/cluster.yaml``; ``full`` runs ``bench/configs/full.yaml``. Every server
gets a warm-up run of wrk before the measured ones.

Per worker: each server runs ONE worker (4 threads) by default. With several workers,
wrk's keep-alive connections land on them at random (the kernel hands each accept to
whichever worker asks first), and a run in which one worker holds most connections halves
that server's throughput whatever its code does: the ratios swung from 0.33x to 1.7x that
way. One worker per server measures the code, not the draw. Each ratio is printed as the
median of the repeats and their spread (min-max).

Then the workers' memory of both real servers (``VmRSS`` now and ``VmHWM``, the peak) and
boot to the first 200 on ``/mutate`` on the same worker count.

Usage: python -m bench.http_bench [--duration 5] [--repeat 3] [--connections 8] [--workers 1]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import payloads, scenario, servers
from controlplane.harness.process import free_port
from webhooks.certs.pki import generate

LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
if os.getenv("BENCH_CLOSE") == "1" then wrk.headers["Connection"] = "close" end
local f = io.open(os.getenv("BENCH_BODY"), "rb")
wrk.body = f:read("*all")
f:close()
"""

#: The servers: what ``bench.serve`` runs, and with which config (real servers only).
KINDS: dict[str, tuple[str, str | None]] = {
    "default": ("real", "default"),
    "full": ("real", "full"),
    "flask": ("flask", None),
    "wsgi": ("wsgi", None),
}
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


def boot_to_first_200(certs: Path, body: Path, workers: int, config: Path) -> float:
    """Seconds from process start to the first 200 answer on /mutate."""
    port = free_port()
    started = time.monotonic()
    proc = servers.spawn("real", port, certs, workers, config)
    try:
        request = ("POST", "/mutate", body.read_bytes())
        answered = servers.first_200(port, certs / "ca.crt", started + 30, request, pause=0.005)
        return float("nan") if answered is None else answered - started
    finally:
        servers.stop(proc)


def wrk(
    args: argparse.Namespace, lua: Path, port: int, body: Path, close: bool, seconds: int
) -> Run:
    """One wrk run against ``port``."""
    env = {**os.environ, "BENCH_BODY": str(body), "BENCH_CLOSE": "1" if close else "0"}
    out = subprocess.run(
        [
            "wrk",
            f"-t{args.threads}",
            f"-c{args.connections}",
            f"-d{seconds}s",
            "--latency",
            "-s",
            str(lua),
            f"https://127.0.0.1:{port}/mutate",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=seconds + 60,
    ).stdout
    return parse_wrk(out)


def report(
    results: dict[tuple[str, str], list[Run]],
    memory: dict[str, list[tuple[float, float]]],
    boot: dict[str, float],
    workers: int,
) -> None:
    """Print the table, the ratios, the workers' memory and the boot times."""

    def med(label: str, kind: str, attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in results[(label, kind)])

    print()
    print(f"{'scenario':30} {'server':8} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}")
    for label, _, _ in SCENARIOS:
        for kind in KINDS:
            errors = sum(r.errors for r in results[(label, kind)])
            print(
                f"{label:30} {kind:8} {med(label, kind, 'rps'):9.0f} "
                f"{med(label, kind, 'p50_ms'):8.2f} "
                f"{med(label, kind, 'p99_ms'):8.2f} {errors:7d}"
            )

    def ratio(label: str, attr: str, kind: str, base: str) -> str:
        """Median and spread of the per-repeat ratios kind/base (same repeat, side by side)."""
        pairs = zip(results[(label, kind)], results[(label, base)], strict=True)
        return scenario.spread([getattr(r, attr) / getattr(b, attr) for r, b in pairs])

    print()
    print("ratios, median of the repeats (spread):")
    for label, _, _ in SCENARIOS:
        for kind in ("default", "full"):
            print(
                f"  {label:30} {kind:8} req/s vs Flask {ratio(label, 'rps', kind, 'flask')}   "
                f"vs WSGI {ratio(label, 'rps', kind, 'wsgi')}   "
                f"p99 vs Flask {ratio(label, 'p99_ms', kind, 'flask')}"
            )
        print(f"  {label:30} full / default req/s {ratio(label, 'rps', 'full', 'default')}")
    print()
    for kind, found in memory.items():
        shown = ", ".join(f"{rss:.1f} now / {peak:.1f} peak" for rss, peak in found)
        print(f"worker memory, {kind} config, after the runs (VmRSS / VmHWM): {shown} MiB")
    for kind, seconds in boot.items():
        print(
            f"boot to first 200 on /mutate, {kind} config, {workers} worker(s), "
            f"cluster synced: {seconds:.2f} s (median of 3)"
        )


def main() -> None:
    """Run every scenario against every server and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    for name in scenario.CONFIG_FILES:
        print(scenario.describe(name, scenario.config(name)))
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
        f"200 KB = {bodies['large'].stat().st_size} B; the real servers' cluster: a fake API "
        "server's Namespaces and RuntimeClasses in their cache"
    )
    results: dict[tuple[str, str], list[Run]] = {}
    memory: dict[str, list[tuple[float, float]]] = {}
    with servers.served_cluster(work) as (_, configs):
        running: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
        try:
            for kind, (serve, config) in KINDS.items():  # one by one: all stopped on failure
                file = configs[config] if config is not None else None
                running[kind] = servers.start(serve, certs, args.workers, file)
            for _, port in running.values():  # warm-up: caches, imports, TLS session
                wrk(args, lua, port, bodies["small"], False, 2)
            for label, size, close in SCENARIOS:
                for _ in range(args.repeat):
                    for kind, (_, port) in running.items():
                        run = wrk(args, lua, port, bodies[size], close, args.duration)
                        results.setdefault((label, kind), []).append(run)
            for kind in ("default", "full"):
                master = running[kind][0].pid
                memory[kind] = [servers.memory_mib(pid) for pid in servers.workers(master)]
        finally:
            for proc, _ in running.values():
                servers.stop(proc)
        boot = {
            kind: statistics.median(
                boot_to_first_200(certs, bodies["small"], args.workers, configs[kind])
                for _ in range(3)
            )
            for kind in ("default", "full")
        }

    report(results, memory, boot, args.workers)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
