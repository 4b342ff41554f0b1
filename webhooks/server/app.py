"""The Flask app factory: routes that move bytes between HTTP and the core, nothing more.

No policy lives here. Each admission route reads the body, calls
:meth:`~webhooks.core.admission.Admission.handle` and writes its reply, so the server and the
CLI cannot disagree.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from webhooks.core.admission import Admission, Reply, bad_request
from webhooks.core.plugin import Phase
from webhooks.server.metrics import Metrics

#: The API server caps admission bodies near this size too; larger is not a real review.
MAX_BODY = 6 * 1024 * 1024

ReadyCheck = Callable[[], str | None]

#: Where the app keeps its :class:`ServerState`, so gunicorn hooks can close it.
STATE_KEY = "placement-webhooks"


@dataclass
class ServerState:
    """What the routes need besides the admission chain: readiness checks and metrics.

    A readiness check returns ``None`` when fine, else the reason the pod is not ready.
    ``closers`` run once when the worker exits (stopping cluster watches, for example).
    """

    admission: Admission
    ready_checks: list[ReadyCheck] = field(default_factory=list)
    metrics: Metrics = field(default_factory=Metrics)
    draining: bool = False
    closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        """Run and forget the closers; why: a worker's background threads end with it."""
        closers, self.closers = self.closers, []
        for close in closers:
            close()

    def not_ready_reason(self) -> str | None:
        """The first failing readiness check's reason, or ``None`` when ready."""
        if self.draining:
            return "shutting down"
        for check in self.ready_checks:
            reason = check()
            if reason:
                return reason
        return None


def _reply(reply: Reply) -> Response:
    return Response(reply.body, status=reply.status, content_type=reply.content_type)


def _outcome_label(reply: Reply) -> str:
    if reply.outcome is None:
        return "bad_request" if reply.status < 500 else "error"
    if not reply.outcome.allowed:
        return "error" if reply.outcome.code >= 500 else "denied"
    return "patched" if reply.outcome.patch else "allowed"


def create_app(state: ServerState) -> Flask:
    """Build the WSGI app for one worker around ``state``."""
    app = Flask("webhooks")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.extensions[STATE_KEY] = state
    metrics = state.metrics

    def admit(phase: Phase, plugin: str | None) -> Response:
        started = time.perf_counter()
        ctype = request.mimetype
        if ctype and ctype != "application/json":
            reply = bad_request(f"content type must be application/json, got {ctype}", 415)
        else:
            body = request.get_data(cache=False)
            reply = state.admission.handle(body, (phase,), plugin)
        endpoint = f"/{phase}" + (f"/{plugin}" if plugin else "")
        outcome = _outcome_label(reply)
        metrics.inc(
            "placement_webhooks_requests_total",
            "Admission reviews answered, by endpoint and outcome.",
            (("endpoint", endpoint), ("outcome", outcome)),
        )
        if reply.outcome is not None:
            for name in reply.outcome.changed_by:
                metrics.inc(
                    "placement_webhooks_plugin_decisions_total",
                    "Decisions per plugin: patched or denied.",
                    (("plugin", name), ("decision", "patched")),
                )
            for name in reply.outcome.denied_by:
                metrics.inc(
                    "placement_webhooks_plugin_decisions_total",
                    "Decisions per plugin: patched or denied.",
                    (("plugin", name), ("decision", "denied")),
                )
        metrics.observe((("endpoint", endpoint),), time.perf_counter() - started)
        return _reply(reply)

    @app.post("/mutate")
    def mutate_all() -> Response:
        return admit("mutate", None)

    @app.post("/validate")
    def validate_all() -> Response:
        return admit("validate", None)

    @app.post("/mutate/<plugin>")
    def mutate_one(plugin: str) -> Response:
        return admit("mutate", plugin)

    @app.post("/validate/<plugin>")
    def validate_one(plugin: str) -> Response:
        return admit("validate", plugin)

    @app.get("/healthz")
    def healthz() -> Response:
        return Response("ok\n", content_type="text/plain; charset=utf-8")

    @app.get("/readyz")
    def readyz() -> Response:
        reason = state.not_ready_reason()
        if reason:
            return Response(f"not ready: {reason}\n", 503, content_type="text/plain; charset=utf-8")
        return Response("ok\n", content_type="text/plain; charset=utf-8")

    @app.get("/metrics")
    def metrics_route() -> Response:
        return Response(metrics.render(), content_type="text/plain; version=0.0.4; charset=utf-8")

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Any:
        code = exc.code or 500
        reason = {
            413: f"request body larger than {MAX_BODY} bytes",
            404: "not found",
            405: "method not allowed",
        }.get(code, exc.description or exc.name)
        return _reply(bad_request(reason, code))

    return app
