"""In-process benchmark: what each plugin costs on its own, and the default and full chains.

One review is what the API server makes of a Pod creation: ``/mutate``, then ``/validate``
on the mutated object (``Admission.handle``, bytes in, bytes out), on the ~4 KB review of
``bench/payloads.py`` in namespace ``shop`` (``bench/configs/cluster.yaml``: a node
selector, default tolerations, a whitelist, a dedicated group and failover seconds on the
Namespace; overhead and scheduling on the RuntimeClass), the cluster a static one.

Rows, all timed side by side in one run (a batch of each in turn per round, median of the
rounds and the spread of the per-round ratios):

- ``empty chain``: every plugin disabled: parse, answer, nothing else;
- each plugin alone, with its settings from ``bench/configs/full.yaml`` (``only=<plugin>``,
  as ``/mutate/<plugin>`` runs it);
- the default chain and the full chain;
- ``orjson.loads`` + ``orjson.dumps`` of the review, twice (once per call of a review).

Last, where the time of each chain goes: every plugin half is timed (``thread_time``, CPU time,
around its function) over ``--number`` reviews, per mutating pass (a change by one of our
own plugins runs the mutators again, as the API server reinvokes them), and the rest of
``Admission.handle`` (parse, the chain's own bookkeeping, exceptions and actions, the
patch, the response bytes) is what the halves do not account for.

Usage: python -m bench.plugin_bench [--number 100] [--rounds 25]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import orjson

from bench import payloads, scenario
from webhooks.core.admission import Admission
from webhooks.core.chain import Steps
from webhooks.core.config import load_config
from webhooks.plugins import REGISTRY


def main() -> None:
    """Print µs per review for each row and the ratios that matter."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()
    static = scenario.cluster()
    configs = {name: scenario.config(name) for name in scenario.CONFIG_FILES}
    for name, cfg in configs.items():
        print(scenario.describe(name, cfg))
    body = payloads.small()
    full = Admission(REGISTRY, configs["full"], static)
    nothing = load_config({"plugins": {p: {"enabled": False} for p in REGISTRY.names}}, REGISTRY)
    calls = {"empty chain": scenario.review_call(Admission(REGISTRY, nothing, static), body)}
    for plugin in REGISTRY.names:
        calls[plugin] = scenario.review_call(full, body, plugin)
    default = Admission(REGISTRY, configs["default"], static)
    calls["default chain"] = scenario.review_call(default, body)
    calls["full chain"] = scenario.review_call(full, body)
    calls["orjson loads+dumps x2"] = lambda: (
        orjson.dumps(orjson.loads(body)),
        orjson.dumps(orjson.loads(body)),
    )
    gc.collect()
    gc.freeze()
    times = scenario.interleaved(calls, args.number, args.rounds)
    base = times["empty chain"]
    json = times["orjson loads+dumps x2"]
    print(
        f"\n{len(body)} B review, mutate + validate, {args.rounds} rounds of {args.number}"
        " (median, and the spread of the per-round figures):"
    )
    print(f"{'':28} {'us per review':>14} {'over empty chain, us':>22} {'vs orjson':>20}")
    for name, values in times.items():
        over = [(t - b) * 1e6 for t, b in zip(values, base, strict=True)]
        print(
            f"{name:28} {statistics.median(values) * 1e6:14.1f} "
            f"{statistics.median(over):10.1f} ({min(over):.0f} to {max(over):.0f})"
            f" {scenario.spread(scenario.ratios(values, json)):>20}"
        )
    ratio = scenario.ratios(times["full chain"], times["default chain"])
    print(f"\nfull chain / default chain: {scenario.spread(ratio)}")
    for name in ("default", "full"):
        breakdown(Admission(REGISTRY, configs[name], static), name, body, args.number * 5)


def breakdown(admission: Admission, name: str, body: bytes, number: int) -> None:
    """Print where one review's time goes in ``admission``'s chain (module docstring)."""
    spent: dict[str, float] = {}
    passes = [0]
    chain = admission.steps()
    first = chain.mutators[0][1] if chain.mutators else None

    def timed(label: str, run: Callable[..., Any], half: object) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            if half is first:
                passes[0] += 1
            key = f"{label} (pass {passes[0]})" if label.endswith("mutate") else label
            started = time.thread_time()
            try:
                return run(*args)
            finally:
                spent[key] = spent.get(key, 0.0) + time.thread_time() - started

        return call

    steps = Steps(
        tuple(
            (p, replace(h, run=timed(f"{p.name} mutate", h.run, h)), *rest)
            for p, h, *rest in chain.mutators
        ),
        tuple(
            (p, replace(h, run=timed(f"{p.name} validate", h.run, h)), *rest)
            for p, h, *rest in chain.validators
        ),
    )
    admission._chains[None] = steps  # type: ignore[attr-defined]  # a bench's instrumentation
    call = scenario.review_call(admission, body)
    for _ in range(number // 10):
        call()
    spent.clear()
    started = time.thread_time()
    for _ in range(number):
        passes[0] = 0
        call()
    total = (time.thread_time() - started) / number * 1e6
    print(f"\nwhere a review's time goes, {name} chain ({number} reviews, us per review):")
    for key, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {key:48} {seconds / number * 1e6:8.1f}")
    rest = total - sum(spent.values()) / number * 1e6
    print(f"  {'the rest (parse, chain, patch, response)':48} {rest:8.1f}")
    print(f"  {'total':48} {total:8.1f}")


if __name__ == "__main__":
    main()
