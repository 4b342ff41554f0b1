"""The two configurations every benchmark runs, their cluster, and side-by-side timing.

Why one module: every script must run the same two configs against the same cluster and
say so the same way. ``default`` is the built-in configuration (no file); ``full`` is
``bench/configs/full.yaml``, every plugin and policy feature on, whose Namespaces and
RuntimeClasses are in ``bench/configs/cluster.yaml``. In process the cluster is a
:class:`~webhooks.cluster.files.StaticCluster` of those objects (what ``check --objects``
reads); served, a fake API server lists and watches them into the server's cache.
"""

from __future__ import annotations

import statistics
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

from webhooks.cluster.files import StaticCluster, read_objects
from webhooks.configfile import read_config
from webhooks.core.admission import Admission
from webhooks.core.config import Config
from webhooks.core.plugin import Phase
from webhooks.plugins import REGISTRY

CONFIGS_DIR = Path(__file__).resolve().parent / "configs"
FULL_CONFIG = CONFIGS_DIR / "full.yaml"
CLUSTER_OBJECTS = CONFIGS_DIR / "cluster.yaml"
#: The configs by name: ``None`` is the built-in default (no file).
CONFIG_FILES: dict[str, Path | None] = {"default": None, "full": FULL_CONFIG}


def config(name: str) -> Config:
    """The config called ``name`` (``default`` or ``full``)."""
    return read_config(CONFIG_FILES[name])


def cluster() -> StaticCluster:
    """The benchmarks' Namespaces and RuntimeClasses as a static cluster."""
    return read_objects([CLUSTER_OBJECTS])


def enabled(cfg: Config) -> list[str]:
    """The plugins ``cfg`` runs in its chain, in chain order (not every registered one)."""
    return [plugin.name for plugin in cfg.chain(REGISTRY)]


def describe(name: str, cfg: Config) -> str:
    """One line: the config, where it comes from, and the plugins it actually enables."""
    source = CONFIG_FILES[name]
    where = "built-in" if source is None else str(source.relative_to(CONFIGS_DIR.parent.parent))
    plugins = enabled(cfg)
    extra = f", {len(cfg.exceptions)} exception(s)" if cfg.exceptions else ""
    return f"{name} ({where}): {len(plugins)} plugins: {', '.join(plugins)}{extra}"


def admissions(static: StaticCluster | None = None) -> dict[str, Admission]:
    """An :class:`Admission` per config over the same cluster."""
    view = static if static is not None else cluster()
    return {name: Admission(REGISTRY, config(name), view) for name in CONFIG_FILES}


def mutated_body(admission: Admission, body: bytes, only: str | None = None) -> bytes:
    """``body`` with its object replaced by what ``admission``'s mutating chain returns.

    Why: the API server sends the validating webhook the object after mutation, so the
    validating half is timed on that.
    """
    import orjson

    review = orjson.loads(body)
    outcome = admission.handle(body, ("mutate",), only).outcome
    if outcome is not None and outcome.obj is not None:
        review["request"]["object"] = outcome.obj
    return orjson.dumps(review)


def review_call(admission: Admission, body: bytes, only: str | None = None) -> Callable[[], object]:
    """One review as the API server makes it: ``/mutate``, then ``/validate`` on the result."""
    validate_body = mutated_body(admission, body, only)
    mutate: tuple[Phase, ...] = ("mutate",)
    validate: tuple[Phase, ...] = ("validate",)

    def call() -> object:
        admission.handle(body, mutate, only)
        return admission.handle(validate_body, validate, only)

    return call


def interleaved(
    calls: dict[str, Callable[[], Any]], number: int, rounds: int
) -> dict[str, list[float]]:
    """CPU seconds per call of each function, one batch of ``number`` each per round, in turn.

    Why interleaved: on a shared machine load drifts; batches that take turns see the same
    drift, so a ratio of two of them taken within a round stays meaningful. Why the calling
    thread's CPU time (``time.thread_time``) and not wall time: on a machine whose other
    jobs keep more runnable threads than it has cores, wall time counts the waits for a
    core too, which have nothing to do with the code measured.
    """
    for call in calls.values():  # warm-up: caches filled, code paths taken once
        for _ in range(max(number // 10, 1)):
            call()
    timers = {name: timeit.Timer(call, timer=time.thread_time) for name, call in calls.items()}
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, timer in timers.items():
            times[name].append(timer.timeit(number=number) / number)
    return times


def ratios(a: list[float], b: list[float]) -> list[float]:
    """The per-round ratios a/b (the same round's batches, side by side)."""
    return [x / y for x, y in zip(a, b, strict=True)]


def spread(values: list[float], unit: str = "x", digits: int = 2) -> str:
    """``median (min-max)`` of ``values``, e.g. ``1.21x (1.15-1.30)``."""
    fmt = f"{{:.{digits}f}}"
    med = fmt.format(statistics.median(values))
    return f"{med}{unit} ({fmt.format(min(values))}-{fmt.format(max(values))})"
