"""In-process benchmark: the mutating chain (parse, plugins, patch, response bytes) with the
default and the full config, against ``orjson.loads`` + ``orjson.dumps`` of the same
review, at 4 KB and 200 KB.

Both configs run over the same static cluster (``bench/configs/cluster.yaml``) on the same
review (``bench/payloads.py``); the three functions take turns in batches, so each ratio is
taken within a round: the median of the rounds and their spread are printed.

Usage: python -m bench.chain_bench [--number 200] [--rounds 25]
"""

from __future__ import annotations

import argparse
import gc
import statistics
from collections.abc import Callable

import orjson

from bench import payloads, scenario
from webhooks.core.admission import Admission


def _mutate(admission: Admission, body: bytes) -> Callable[[], object]:
    answer = admission.handle(body, ("mutate",))
    assert answer.outcome.allowed
    return lambda: admission.handle(body, ("mutate",))


def main() -> None:
    """Print per-call times and the ratios for both sizes."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()
    admissions = scenario.admissions()
    for name, admission in admissions.items():
        print(scenario.describe(name, admission.config))
    gc.collect()
    gc.freeze()
    print(
        f"\n{'review':8} {'default us':>10} {'full us':>9} {'orjson us':>10}"
        f" {'default/orjson':>20} {'full/orjson':>20} {'full/default':>20}"
    )
    for label, body, number in (
        ("4 KB", payloads.small(), args.number),
        ("200 KB", payloads.large(), max(args.number // 20, 10)),
    ):
        times = scenario.interleaved(
            {
                "default": _mutate(admissions["default"], body),
                "full": _mutate(admissions["full"], body),
                "orjson": lambda body=body: orjson.dumps(orjson.loads(body)),
            },
            number,
            args.rounds,
        )
        med = {name: statistics.median(values) * 1e6 for name, values in times.items()}
        print(
            f"{label:8} {med['default']:10.1f} {med['full']:9.1f} {med['orjson']:10.1f}"
            f" {scenario.spread(scenario.ratios(times['default'], times['orjson'])):>20}"
            f" {scenario.spread(scenario.ratios(times['full'], times['orjson'])):>20}"
            f" {scenario.spread(scenario.ratios(times['full'], times['default'])):>20}"
        )


if __name__ == "__main__":
    main()
