"""In-process benchmark: the whole chain (parse, plugins, patch, response bytes) against
``orjson.loads`` + ``orjson.dumps`` of the same review, at 4 KB and 200 KB.

Usage: python -m bench.chain_bench [--number 2000]
"""

from __future__ import annotations

import argparse
import statistics
import timeit

import orjson

from bench import payloads
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.plugins import REGISTRY


def measure(fn: object, number: int, repeat: int = 7) -> float:
    """Median seconds per call over ``repeat`` batches of ``number`` calls."""
    times = timeit.repeat(fn, number=number, repeat=repeat)  # type: ignore[arg-type]
    return statistics.median(times) / number


def main() -> None:
    """Print per-call times and the ratio for both sizes."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    admission = Admission(REGISTRY, load_config(None, REGISTRY))
    print(f"{'review':8} {'chain us':>10} {'orjson us':>10} {'ratio':>7}")
    for label, body, number in (
        ("4 KB", payloads.small(), args.number),
        ("200 KB", payloads.large(), max(args.number // 20, 50)),
    ):
        reply = admission.handle(body, ("mutate",))
        assert reply.status == 200 and reply.outcome is not None and reply.outcome.patch
        chain = measure(lambda body=body: admission.handle(body, ("mutate",)), number)
        base = measure(lambda body=body: orjson.dumps(orjson.loads(body)), number)
        print(f"{label:8} {chain * 1e6:10.1f} {base * 1e6:10.1f} {chain / base:7.2f}")


if __name__ == "__main__":
    main()
