"""What one growth sample is and how an in-process surface is measured.

A surface's cost must grow linearly with its input: doubling the input may double time
and memory, never quadruple them. So every surface is measured at a size N and at 2N,
side by side, and the ratio of the two is what the bench prints. A ratio near 2 is linear
growth, near 4 quadratic, near 1 flat (a bound was hit, or the cost does not depend on N).

Time is the best of a few runs of CPU time of the calling thread (``time.thread_time``):
the minimum is the least disturbed by other work on a shared machine, and CPU time leaves
out waits for a core. Peak memory is ``tracemalloc``'s peak over one run, less what was
allocated before it (the input itself is built before measuring, so it is not counted),
in a run of its own because tracing slows Python down. Surfaces that run in another
process (the server, the CLI) measure themselves and return a :class:`Sample`.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Sample:
    """One measurement at one size: seconds, and peak bytes (``None``: not measured)."""

    seconds: float
    peak_bytes: int | None


@dataclass(frozen=True, slots=True)
class Surface:
    """An input surface: its name, what N counts, the N to start from, and how to sample it.

    ``sample(n)`` measures the surface on an input of size ``n``; :func:`in_process`
    makes one from a builder and a runner.
    """

    name: str
    unit: str
    size: int
    sample: Callable[[int], Sample]


def in_process(
    build: Callable[[int], Any],
    run: Callable[[Any], object],
    repeat: int = 3,
    memory: bool = True,
) -> Callable[[int], Sample]:
    """A sampler that builds an input of size n before each run, then times or traces ``run``.

    Why the input is built outside the measured window: the bench asks what the surface
    costs for an input of that size, not what making the input costs. Why it is built
    anew for each run: a surface that keeps answers per value must be measured as a
    client sending new inputs meets it, so a builder that wants to miss such memos makes
    each input different (a counter in a name, say).
    """

    def sample(n: int) -> Sample:
        run(build(n))  # warm-up: imports, first-call caches
        best = float("inf")
        for _ in range(repeat):
            value = build(n)
            gc.collect()
            start = time.thread_time()
            run(value)
            best = min(best, time.thread_time() - start)
            del value
        peak = None
        if memory:
            value = build(n)
            peak = traced_peak(lambda: run(value))
        return Sample(best, peak)

    return sample


def traced_peak(call: Callable[[], object]) -> int:
    """Bytes ``call`` allocated at its peak, over what was allocated when it began."""
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return max(peak - base, 0)
