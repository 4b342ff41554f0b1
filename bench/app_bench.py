"""In-process benchmark: each app's own cost per 4 KB review, as the worker calls it.

The worker hands a thread a parsed head and the whole body; the thread builds the environ
and runs the app (``webhooks.server.wsgi.Responder``). This times exactly that, without
sockets or TLS, for the bare WSGI function, the bare Flask app and the real app (with and
without its review log; with the default and with the full config), next to the chain
alone (``Admission.handle``: bytes in, bytes out), the review log line alone and the
metrics of one review alone. The real app's cluster is the static
one of ``bench/configs/cluster.yaml``. Batches are interleaved (``--rounds`` of
``--number`` calls each): the median of the rounds and their spread. It says how much of
the HTTP ratios is the apps' own work (docs/performance.md).

Usage: python -m bench.app_bench [--number 200] [--rounds 21]
"""

from __future__ import annotations

import argparse
import gc
import io
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench import apps, payloads, scenario
from webhooks.certs.pki import generate
from webhooks.core.admission import Admission
from webhooks.plugins import REGISTRY
from webhooks.server.app import ReviewLog, create_app
from webhooks.server.assemble import build_state
from webhooks.server.framing import parse_head
from webhooks.server.metrics import Metrics
from webhooks.server.replies import review_reply
from webhooks.server.runner import ServeOptions
from webhooks.server.wsgi import HttpDate, Responder


def main() -> None:
    """Print microseconds per review for each app."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--number", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="app-bench-"))
    generate(work / "certs", hosts=["localhost"])
    body = payloads.small()
    head = parse_head(
        b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    )
    static = scenario.cluster()
    states = []

    def real(name: str, log_reviews: bool) -> object:
        """The real app with config ``name`` over the static cluster, as a worker builds it."""
        options = ServeOptions(cert_dir=work / "certs", runtime_dir=work, log_reviews=log_reviews)
        state = build_state(options)
        state.admission = Admission(REGISTRY, scenario.config(name), static)
        if state.review_log is not None:
            state.review_log.stream = io.StringIO()  # lines built and queued, then dropped
        states.append(state)
        return create_app(state)

    for name in scenario.CONFIG_FILES:
        print(scenario.describe(name, scenario.config(name)))
    date = HttpDate()
    targets = {
        "bare WSGI": apps.bare_wsgi,
        "bare Flask": apps.bare_flask(),
        "real, default, no log": real("default", False),
        "real, default": real("default", True),
        "real, full, no log": real("full", False),
        "real, full": real("full", True),
    }
    admissions = {
        name: Admission(REGISTRY, scenario.config(name), static) for name in scenario.CONFIG_FILES
    }

    def through(app: object) -> Callable[[], object]:
        responder = Responder(app, ("127.0.0.1", 8443), "https", date)  # type: ignore[arg-type]

        def call() -> object:
            env = responder.environ(head, body, ("127.0.0.1", 5555))
            return responder.respond(env, True)

        return call

    calls = {name: through(app) for name, app in targets.items()}
    for name, admission in admissions.items():
        calls[f"the chain alone, {name}"] = lambda a=admission: a.handle(body, ("mutate",))
    # Two parts of the real app on their own: its review log line (queued, as served) and
    # the metrics of one review (this process's prometheus-client mode).
    reply = review_reply(admissions["full"], body, ("mutate",))
    log = ReviewLog(io.StringIO(), interval=60.0)

    def log_line() -> None:
        log.write("/mutate", reply, 0.0012, "patched")
        if len(log._pending) > 100:  # as the writer thread empties it, every 50 ms in a worker
            log.flush()

    metrics = Metrics()
    decisions = reply.outcome.decisions if reply.outcome is not None else ()
    calls["review log line"] = log_line
    calls["metrics of one review"] = lambda: metrics.record("/mutate", "patched", 0.0012, decisions)
    gc.collect()
    gc.freeze()
    times = scenario.interleaved(calls, args.number, args.rounds)
    print(f"\n{'4 KB review, in process':28} {'us':>8}  spread")
    for name, values in times.items():
        us = [v * 1e6 for v in values]
        print(f"{name:28} {statistics.median(us):8.1f}  ({min(us):.1f}-{max(us):.1f})")
    flask = times["bare Flask"]
    for name in ("real, default", "real, full"):
        extra = [(r - f) * 1e6 for r, f in zip(times[name], flask, strict=True)]
        shown = f"{statistics.median(extra):.1f} us ({min(extra):.1f} to {max(extra):.1f})"
        print(f"{name} beyond bare Flask: {shown}")
    for state in states:
        state.close()


if __name__ == "__main__":
    main()
