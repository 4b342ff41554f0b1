"""The Flask app factory: routes that move bytes between HTTP and the core, nothing more.

No policy lives here. Each admission route judges the HTTP envelope (client certificate,
size, content type: :func:`_answer`, the one place that does), reads the body, calls
:meth:`~webhooks.core.admission.Admission.handle` through
:func:`~webhooks.server.replies.review_reply` and writes its reply, so the server and the
CLI cannot disagree. How a connection is framed around an oversized body is the WSGI
server's business, not the app's (the worker's :mod:`~webhooks.server.reader`).
"""

from __future__ import annotations

import collections
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from flask import Flask, Response, request
from werkzeug.exceptions import ClientDisconnected, HTTPException

from webhooks.core.admission import Admission
from webhooks.core.plugin import Phase
from webhooks.server.framing import MAX_BODY
from webhooks.server.logformat import (
    REVIEW_LINES,
    SHOWN_PATH,
    LogFormat,
    Stamp,
    encode,
    shown_path,
)
from webhooks.server.metrics import CONTENT_TYPE, Metrics
from webhooks.server.replies import Reply, bad_request, review_reply

if TYPE_CHECKING:
    from webhooks.server.tracing import Tracing

__all__ = (
    "MAX_BODY",
    "SHOWN_PATH",
    "ReadyCheck",
    "ReviewLog",
    "ServerState",
    "create_app",
    "shown_path",
)

ReadyCheck = Callable[[], str | None]

#: The endpoint label of a path outside the closed set (what the registry names).
OTHER = "other"
#: Answers that refuse the HTTP request before any review is read: no client certificate
#: (401), an unknown plugin (404), a body not received in time (408), too large (413) or of
#: the wrong type (415). Any client, unauthenticated ones included, can send as many as it
#: likes, so they are counted in series that exist from the start
#: (``placement_webhooks_refused_requests_total``) and their review log lines are sampled
#: (:data:`REFUSAL_LOG_INTERVAL`).
REFUSED = frozenset({401, 404, 408, 413, 415})
#: A refusal's review log line is written at most once per this many seconds per status;
#: the next one written says how many were left out meanwhile (``suppressed``). Why 1 s:
#: a misconfigured caller (a missing client certificate: every review a 401) still shows
#: within a second, while any client's refusals cost at most five lines a second per
#: worker (one per status) instead of one per request (133 MB of log after 400,000).
REFUSAL_LOG_INTERVAL = 1.0
#: The WSGI environ key through which the worker says which listener a request came on.
PORT_KEY = "webhooks.port"


class ReviewLog:
    """One JSON line per review on a stream: who asked what, what we decided, how fast.

    It carries identifiers and decisions only, never object bodies, so logs cannot leak
    Secrets or environment values that pods carry. With an ``interval`` (the server's
    case) lines are queued and written in batches by a thread of their own, at most that
    many seconds late: a write per review was a system call in the request thread, and
    each one handed the interpreter lock to another thread and waited to get it back.
    What a line holds is the ``log_format``'s (:mod:`webhooks.server.logformat`).
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        log_format: LogFormat = "text",
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self._clock = clock
        #: Per refusal status: when its last line was written, and how many were left out.
        self._refusals: dict[int, tuple[float, int]] = {}
        self._lock = threading.Lock()
        self._stamp = Stamp()
        self._render = REVIEW_LINES[log_format]
        self.json = log_format == "json"
        self._pending: collections.deque[str] = collections.deque()
        self._stop = threading.Event()

    def start(self) -> None:
        """Start the batch writer (only with an ``interval``)."""
        if self.interval is None:
            return
        interval = self.interval

        def loop() -> None:
            while not self._stop.wait(interval):
                self.flush()

        threading.Thread(target=loop, name="review-log", daemon=True).start()

    def flush(self) -> None:
        """Write every queued line, in order, with one write."""
        lines = []
        pending = self._pending
        while pending:
            lines.append(pending.popleft())
        if lines:
            with self._lock:
                self.stream.write("".join(lines))
                self.stream.flush()

    def stop(self) -> None:
        """Stop the batch writer after writing what is queued."""
        self._stop.set()
        self.flush()

    def timestamp(self) -> str:
        """The current time as every line of the log spells it (:class:`logformat.Stamp`)."""
        return self._stamp()

    def _sampled(self, status: int) -> int | None:
        """Whether a refusal with ``status`` gets a line now: ``None`` if not, else how many
        were left out since its last one (see :data:`REFUSAL_LOG_INTERVAL`)."""
        now = self._clock()
        with self._lock:
            last, left_out = self._refusals.get(status, (float("-inf"), 0))
            if now - last < REFUSAL_LOG_INTERVAL:
                self._refusals[status] = (last, left_out + 1)
                return None
            self._refusals[status] = (now, 0)
            return left_out

    def write(
        self,
        endpoint: str,
        reply: Reply,
        seconds: float,
        decision: str,
        path: str | None = None,
        traceparent: str | None = None,
    ) -> None:
        """Write the line for one answered request (for a refusal, when sampled).

        ``endpoint`` is the metrics label (a closed set); ``path``, when the request's path
        is outside that set, is shown escaped and cut (:mod:`webhooks.server.logformat`);
        ``traceparent`` is the request's header, which JSON lines show.
        """
        suppressed = None
        if reply.status in REFUSED:
            suppressed = self._sampled(reply.status)
            if suppressed is None:
                return
        fields = self._render(
            self.timestamp(), endpoint, reply, seconds, decision, path, suppressed, traceparent
        )
        # Decoded at once, so orjson's buffer is freed and reused by the next line: queued
        # as bytes until the batch is written, each line took fresh memory and cost more.
        data = encode(fields)
        if self.interval is not None:
            self._pending.append(data)
            return
        with self._lock:
            self.stream.write(data)
            self.stream.flush()


@dataclass
class ServerState:
    """What the routes need besides the admission chain: readiness, metrics, logs, auth.

    A readiness check returns ``None`` when fine, else the reason the pod is not ready.
    ``drain_marker`` is a file the master creates on SIGTERM, so every worker reports
    not-ready while it keeps serving; ``require_client_cert`` refuses admission calls that
    did not present a certificate signed by the configured client CA. ``closers`` stop
    what the state started (metrics writer, cluster watches) when its worker exits.
    ``ready_detail`` follows ``ok`` on a ready ``/readyz``: what works less than
    configured without making the pod unready (settings the cluster's release lacks).
    """

    admission: Admission
    ready_checks: list[ReadyCheck] = field(default_factory=list)
    metrics: Metrics = field(default_factory=Metrics)
    drain_marker: Path | None = None
    require_client_cert: bool = False
    review_log: ReviewLog | None = None
    #: Spans per review and per plugin half (``serve --otlp-endpoint``), else ``None``.
    tracer: Tracing | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)
    ready_detail: str = ""

    def close(self) -> None:
        """Stop everything the state started, once; later calls do nothing."""
        closers, self.closers = self.closers, []
        for closer in closers:
            closer()

    def not_ready_reason(self) -> str | None:
        """The first failing readiness check's reason, or ``None`` when ready."""
        if self.drain_marker is not None and self.drain_marker.exists():
            return "shutting down"
        for check in self.ready_checks:
            reason = check()
            if reason:
                return reason
        return None


def endpoint_label(phase: Phase, plugin: str | None, known: frozenset[str]) -> str:
    """The ``endpoint`` label of an admission path: from a closed set, whatever the client sent.

    Why: a label value made from the URL let any client create series without bound (each
    one a file entry in every worker and lines in every scrape); the set here is the two
    chains and the registry's plugins under each, and anything else is ``other``.
    """
    if plugin is None:
        return f"/{phase}"
    return f"/{phase}/{plugin}" if plugin in known else OTHER


def _reply(reply: Reply) -> Response:
    return Response(reply.body, status=reply.status, content_type=reply.content_type)


def _outcome_label(reply: Reply) -> str:
    if reply.outcome is None:
        return "bad_request" if reply.status < 500 else "error"
    if not reply.outcome.allowed:
        return "error" if reply.outcome.code >= 500 else "denied"
    return "patched" if reply.outcome.patch else "allowed"


def _peer_certificate(environ: dict[str, Any]) -> bool:
    """Whether the TLS peer presented a certificate the server verified (the worker says)."""
    return bool(environ.get("webhooks.peer_certificate", False))


def _content_length(environ: dict[str, Any]) -> int | None:
    raw = environ.get("CONTENT_LENGTH")
    return int(raw) if raw and raw.isdigit() else None


def _answer(state: ServerState, phase: Phase, plugin: str | None) -> tuple[Reply, bool]:
    """Check the HTTP envelope, then let the core answer; also whether to close the connection.

    Reads the WSGI environ directly rather than through ``request``'s properties: each
    property is a context lookup, and they were a measurable share of a 4 KB review.
    """
    environ = request.environ
    length = _content_length(environ)
    if state.require_client_cert and not _peer_certificate(environ):
        return bad_request(
            "a client certificate signed by the configured CA is required", 401
        ), False
    if length is not None and length > MAX_BODY:
        # Unread: the WSGI server frames the connection around it (the worker reads and
        # discards a body up to DRAIN_LIMIT, else closes after this answer).
        return bad_request(f"request body larger than {MAX_BODY} bytes", 413), False
    raw_type = environ.get("CONTENT_TYPE", "")
    # The API server always sends exactly "application/json"; parse only anything else.
    if raw_type and raw_type != "application/json" and request.mimetype != "application/json":
        return bad_request(
            f"content type must be application/json, got {request.mimetype}", 415
        ), False
    try:
        if length is None:
            body = request.get_data(cache=False)
        else:
            body = environ["wsgi.input"].read(length)
    except (TimeoutError, OSError, ClientDisconnected):
        body = None
    if body is None or (length is not None and len(body) < length):
        # The socket timed out (or the client went away) part-way through the body; the
        # connection's framing is lost, so it is closed after this answer.
        return bad_request("request body not received in time", 408), True
    return review_reply(state.admission, body, (phase,), plugin), False


def _account(
    state: ServerState,
    endpoint: str,
    reply: Reply,
    elapsed: float,
    path: str | None,
    started_ns: int,
) -> None:
    """Metrics, the review log line and the spans for one request (a refusal: see
    ``REFUSED``)."""
    decision = _outcome_label(reply)
    outcome = reply.outcome
    if reply.status in REFUSED:
        state.metrics.refused(request.environ.get(PORT_KEY, "admission"), reply.status)
    elif outcome is None or not (outcome.decisions or outcome.excepted or outcome.expired):
        state.metrics.record(endpoint, decision, elapsed)
    else:
        state.metrics.record(
            endpoint,
            decision,
            elapsed,
            outcome.decisions,
            [(e, p, "applied") for e, p in outcome.excepted]
            + [(e, p, "expired") for e, p in outcome.expired],
        )
    if state.review_log is not None:
        # Only JSON lines show the header; text lines skip the request-context lookup.
        traceparent = request.environ.get("HTTP_TRACEPARENT") if state.review_log.json else None
        state.review_log.write(endpoint, reply, elapsed, decision, path, traceparent)
    if state.tracer is not None:
        state.tracer.review(request.environ, reply, decision, started_ns, time.time_ns())


def create_app(state: ServerState) -> Flask:
    """Build the WSGI app for one worker around ``state``."""
    app = Flask("webhooks")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.extensions["placement-webhooks"] = state
    known = frozenset(state.admission.registry.names)

    def answer_review(phase: Phase, plugin: str | None) -> Response:
        started_ns = time.time_ns() if state.tracer is not None else 0
        started = time.perf_counter()
        reply, close = _answer(state, phase, plugin)
        endpoint = endpoint_label(phase, plugin, known)
        path = f"/{phase}/{plugin}" if endpoint == OTHER else None
        _account(state, endpoint, reply, time.perf_counter() - started, path, started_ns)
        response = _reply(reply)
        if close:
            response.headers["Connection"] = "close"
        return response

    @app.post("/mutate")
    def mutate_all() -> Response:
        return answer_review("mutate", None)

    @app.post("/validate")
    def validate_all() -> Response:
        return answer_review("validate", None)

    @app.post("/mutate/<plugin>")
    def mutate_one(plugin: str) -> Response:
        return answer_review("mutate", plugin)

    @app.post("/validate/<plugin>")
    def validate_one(plugin: str) -> Response:
        return answer_review("validate", plugin)

    @app.get("/healthz")
    def healthz() -> Response:
        return Response("ok\n", content_type="text/plain; charset=utf-8")

    @app.get("/readyz")
    def readyz() -> Response:
        reason = state.not_ready_reason()
        if reason:
            return Response(f"not ready: {reason}\n", 503, content_type="text/plain; charset=utf-8")
        return Response("ok\n" + state.ready_detail, content_type="text/plain; charset=utf-8")

    @app.get("/metrics")
    def metrics_route() -> Response:
        return Response(state.metrics.render(), content_type=CONTENT_TYPE)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Any:
        code = exc.code or 500
        if code < 500:
            state.metrics.refused(request.environ.get(PORT_KEY, "admission"), code)
        reason = {
            413: f"request body larger than {MAX_BODY} bytes",
            404: "not found",
            405: "method not allowed",
        }.get(code, exc.description or exc.name)
        return _reply(bad_request(reason, code))

    return app
