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


def side_by_side(a: object, b: object, number: int, repeat: int = 9) -> tuple[float, float, float]:
    """Per-call seconds of ``a`` and ``b`` and the median ratio a/b, batches interleaved.

    Why interleaved: on a shared machine load drifts; alternating batches of the two
    functions exposes both to the same drift, so the ratio stays meaningful.
    """
    ta: list[float] = []
    tb: list[float] = []
    for _ in range(repeat):
        ta.append(timeit.timeit(a, number=number) / number)  # type: ignore[arg-type]
        tb.append(timeit.timeit(b, number=number) / number)  # type: ignore[arg-type]
    ratio = statistics.median(x / y for x, y in zip(ta, tb, strict=True))
    return statistics.median(ta), statistics.median(tb), ratio


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
        chain, base, ratio = side_by_side(
            lambda body=body: admission.handle(body, ("mutate",)),
            lambda body=body: orjson.dumps(orjson.loads(body)),
            number,
        )
        print(f"{label:8} {chain * 1e6:10.1f} {base * 1e6:10.1f} {ratio:7.2f}")


if __name__ == "__main__":
    main()
