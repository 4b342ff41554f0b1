"""Growth bench: every input surface at size N and 2N, side by side, time and peak memory.

Why: a budget per request only protects the server if the cost inside it grows linearly.
A surface whose cost is quadratic looks harmless at the sizes a test uses and takes
seconds at the sizes an attacker sends. Doubling the input shows the difference at once:
linear cost gives a ratio near 2, quadratic near 4. The target is at most 2.2 per
doubling on every surface (docs/operations.md, "Input budgets").

Every module of :mod:`bench.growth` contributes its ``SURFACES``; each surface says what N
counts and measures itself (:mod:`bench.growth.measure`: best-of CPU time of the calling
thread; ``tracemalloc`` peak over what was allocated before; surfaces in another process
measure wall time and that process's peak RSS). N and 2N are measured in alternation for
``--rounds`` rounds; a time ratio is the median of the rounds' own ratios, a memory ratio
that of the median peaks. Memory ratios under ``MEMORY_FLOOR`` of
growth are shown as flat: a few KiB either way is noise, not growth. The garbage collector
runs on the schedule the CLI and the server's workers set (:mod:`webhooks.collector`);
``--collector default`` keeps CPython's own, to see what that schedule changes.

Prints one row per surface; ``!`` marks a ratio above the target. Exit status 1 when
``--check`` is given and a surface is above it.

Usage: python -m bench.growth_bench [--only SUBSTRING] [--rounds 3] [--scale 1.0] [--check]
       [--collector tuned|default]
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import statistics
import sys

from bench import growth
from bench.growth.measure import Sample, Surface
from webhooks import collector

#: The most a doubling of the input may multiply a surface's time or memory by.
TARGET = 2.2
#: Below this much peak memory at 2N, memory is reported flat (no ratio).
MEMORY_FLOOR = 256 * 1024


def surfaces() -> list[Surface]:
    """Every surface of every module in :mod:`bench.growth`, in module order."""
    found: list[Surface] = []
    for info in sorted(pkgutil.iter_modules(growth.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{growth.__name__}.{info.name}")
        found.extend(getattr(module, "SURFACES", ()))
    return found


def _median_sample(samples: list[Sample]) -> Sample:
    peaks = [s.peak_bytes for s in samples if s.peak_bytes is not None]
    return Sample(
        statistics.median(s.seconds for s in samples),
        int(statistics.median(peaks)) if peaks else None,
    )


def _size(value: float) -> str:
    if value >= 1 << 20:
        return f"{value / (1 << 20):.1f} MiB"
    return f"{value / 1024:.0f} KiB"


def _duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} us"


def row(
    surface: Surface, n: int, smalls: list[Sample], larges: list[Sample], width: int = 78
) -> tuple[str, bool]:
    """The printed line of one surface, and whether a ratio is above the target.

    Why the time ratio is the median of each round's own ratio: a round measures N and 2N
    one right after the other, so both see the same load on a shared machine, and drift
    between rounds cancels out of their ratio; the times shown are the medians.
    """
    small, large = _median_sample(smalls), _median_sample(larges)
    over = False
    t_ratio = statistics.median(
        b.seconds / a.seconds if a.seconds > 0 else float("inf")
        for a, b in zip(smalls, larges, strict=True)
    )
    mark = "!" if t_ratio > TARGET else " "
    over |= t_ratio > TARGET
    if small.peak_bytes is None or large.peak_bytes is None:
        memory = f"{'not measured':>32}"
    elif large.peak_bytes < MEMORY_FLOOR:
        memory = f"{_size(small.peak_bytes):>10} {_size(large.peak_bytes):>10} {'flat':>10}"
    else:
        m_ratio = large.peak_bytes / max(small.peak_bytes, 1)
        m_mark = "!" if m_ratio > TARGET else " "
        over |= m_ratio > TARGET
        memory = (
            f"{_size(small.peak_bytes):>10} {_size(large.peak_bytes):>10} {m_ratio:>8.2f}x{m_mark}"
        )
    times = f"{_duration(small.seconds):>10} {_duration(large.seconds):>10} {t_ratio:>8.2f}x{mark}"
    return f"{label(surface, n):<{width}} {times} {memory}", over


def label(surface: Surface, n: int) -> str:
    """What a row says it measured: the surface and its N."""
    return f"{surface.name} (N={n:,} {surface.unit})"


def main(argv: list[str] | None = None) -> int:
    """Measure each surface at N and 2N and print the ratios; 1 under ``--check`` if over."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], help="substring of a name")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every N by this")
    parser.add_argument("--check", action="store_true", help=f"exit 1 above {TARGET}x")
    parser.add_argument("--collector", choices=["tuned", "default"], default="tuned")
    args = parser.parse_args(argv)
    if args.collector == "tuned":
        collector.tune()  # the collector's schedule of the CLI and the server's workers
    chosen = [s for s in surfaces() if not args.only or any(part in s.name for part in args.only)]
    sizes = {s.name: max(1, int(s.size * args.scale)) for s in chosen}
    width = max([len(label(s, sizes[s.name])) for s in chosen] + [len("surface")])
    print(
        f"{'surface':<{width}} {'time N':>10} {'time 2N':>10} {'ratio':>9} "
        f"{'peak N':>10} {'peak 2N':>10} {'ratio':>9}",
        flush=True,
    )
    failed = []
    for surface in chosen:
        n = sizes[surface.name]
        smalls: list[Sample] = []
        larges: list[Sample] = []
        for _ in range(args.rounds):
            smalls.append(surface.sample(n))
            larges.append(surface.sample(2 * n))
        line, over = row(surface, n, smalls, larges, width)
        print(line, flush=True)
        if over:
            failed.append(surface.name)
    print(f"\ntarget: at most {TARGET}x per doubling; above it: {len(failed)}")
    for name in failed:
        print(f"  {name}")
    return 1 if failed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
