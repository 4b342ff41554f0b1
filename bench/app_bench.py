"""In-process benchmark: each app's own cost per 4 KB review, as the worker calls it.

The worker hands a thread a parsed head and the whole body; the thread builds the environ
and runs the app (``webhooks.server.wsgi.Responder``). This times exactly that, without
sockets or TLS, for the bare WSGI function, the bare Flask app and the real app (with and
without its review log), next to the chain alone (``Admission.handle``: bytes in, bytes
out). Batches are interleaved, median of 9. It says how much of the HTTP ratios is the
apps' own work (docs/performance.md).

Usage: python -m bench.app_bench [--number 3000]
"""

from __future__ import annotations

import argparse
import gc
import io
import statistics
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path

from bench import apps, payloads
from webhooks.certs import generate
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.plugins import REGISTRY
from webhooks.server.assemble import build_app
from webhooks.server.framing import parse_head
from webhooks.server.runner import ServeOptions
from webhooks.server.wsgi import HttpDate, Responder


def main() -> None:
    """Print microseconds per review for each app."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--number", type=int, default=3000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="app-bench-"))
    generate(work / "certs", hosts=["localhost"])
    body = payloads.small()
    head = parse_head(
        b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    )
    real = build_app(ServeOptions(cert_dir=work / "certs", runtime_dir=work, log_reviews=False))
    logged = build_app(ServeOptions(cert_dir=work / "certs", runtime_dir=work, log_reviews=True))
    state = logged.app.extensions["placement-webhooks"]  # type: ignore[attr-defined]
    state.review_log.stream = io.StringIO()  # the lines are built and queued, then dropped
    date = HttpDate()
    targets = {
        "bare WSGI": apps.bare_wsgi,
        "bare Flask": apps.bare_flask(),
        "real, no review log": real.app,
        "real": logged.app,
    }
    admission = Admission(REGISTRY, load_config(None, REGISTRY))

    def through(app: object) -> Callable[[], object]:
        responder = Responder(app, ("127.0.0.1", 8443), "https", date)  # type: ignore[arg-type]

        def call() -> object:
            env = responder.environ(head, body, ("127.0.0.1", 5555))
            return responder.respond(env, True)

        return call

    calls = {name: through(app) for name, app in targets.items()}
    calls["the chain alone"] = lambda: admission.handle(body, ("mutate",))
    for call in calls.values():
        call()
    gc.freeze()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(9):
        for name, call in calls.items():
            times[name].append(timeit.timeit(call, number=args.number) / args.number * 1e6)
    print(f"{'4 KB review, in process':24} {'us':>8}")
    for name, values in times.items():
        print(f"{name:24} {statistics.median(values):8.1f}")
    real.close()
    logged.close()


if __name__ == "__main__":
    main()
