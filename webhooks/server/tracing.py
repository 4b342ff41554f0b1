"""Spans of each review and of each plugin half it called, sent over OTLP/HTTP.

``serve --otlp-endpoint URL`` turns it on; it needs the optional extra ``otlp`` (the
OpenTelemetry SDK and its OTLP/HTTP exporter), and without it start-up stops naming the
option and the install command (:func:`missing`). A review's span, ``admission.review``,
continues the trace of the W3C ``traceparent`` (and ``tracestate``) header the API server
sends when its tracing is on, so a slow pod create can be followed from kube-apiserver
into each plugin; a header that cannot be read starts a new trace, never an error.

Why spans are made after the answer, from what the chain recorded (its halves with
their clock times, :attr:`~webhooks.core.result.Outcome.halves`): the core stays free of
any tracing library, and a review pays for spans only when tracing is on. Why a batch
processor with a bounded queue and export timeout: export runs in a thread of its own,
so a slow or dead collector costs dropped spans, never a slower review.
"""

from __future__ import annotations

import gc
import importlib.util
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from webhooks import __version__
from webhooks.server.logformat import bounded

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer as OtelTracer

    from webhooks.server.replies import Reply

#: The extra that brings the SDK, and how to install it.
INSTALL = "pip install 'placement-webhooks[otlp]'"
#: The modules the extra provides.
NEEDED = ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter")
#: Seconds one export may take, retries included; then the batch is dropped.
EXPORT_TIMEOUT = 5.0
#: Spans waiting for export per worker; past it the oldest are dropped, never waited for.
QUEUE_SIZE = 2048
#: Milliseconds between exports (a batch also leaves when it is full).
SCHEDULE_DELAY_MS = 1000
#: Spans per export request.
BATCH_SIZE = 512
#: The path an endpoint given without one gets: OTLP/HTTP's for traces.
TRACES_PATH = "/v1/traces"
#: The span of a review; each half's is ``"<phase> <plugin>"``.
REVIEW_SPAN = "admission.review"


def missing() -> str | None:
    """Why ``--otlp-endpoint`` cannot work here (the extra is not installed), or ``None``."""
    for name in NEEDED:
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            found = None
        if found is None:
            return f"--otlp-endpoint needs the OpenTelemetry SDK, not installed: {INSTALL}"
    return None


def traces_url(endpoint: str) -> str:
    """The URL spans are posted to: ``endpoint`` as given, or with ``/v1/traces`` when it
    names no path (``http://collector:4318``). Raises ``ValueError`` for a URL that is not
    http(s) with a host."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--otlp-endpoint {endpoint!r}: an http:// or https:// URL is needed")
    if parts.path in ("", "/"):
        return parts._replace(path=TRACES_PATH).geturl()
    return endpoint


class Tracing:
    """One worker's tracer: makes a review's spans, and stops the exporter at worker exit."""

    def __init__(self, provider: TracerProvider, tracer: OtelTracer) -> None:
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.provider = provider
        self.tracer = tracer
        self._propagator = TraceContextTextMapPropagator()

    def review(
        self,
        environ: Mapping[str, Any],
        reply: Reply,
        decision: str,
        started: int,
        ended: int,
    ) -> None:
        """The spans of one answered request: the review's, then one per half it called
        (a half skipped by a policy exception ran nothing and gets none).

        ``started`` and ``ended`` are ``time.time_ns()`` around the answer, the clock the
        chain timed the halves with.
        """
        from opentelemetry.trace import SpanKind, set_span_in_context

        carrier = {}
        for header, key in (("traceparent", "HTTP_TRACEPARENT"), ("tracestate", "HTTP_TRACESTATE")):
            value = environ.get(key)
            if value:
                carrier[header] = value
        parent = self._propagator.extract(carrier) if carrier else None
        attributes: dict[str, Any] = {
            "admission.decision": decision,
            "http.response.status_code": reply.status,
        }
        req, outcome = reply.request, reply.outcome
        if req is not None:
            attributes["admission.uid"] = bounded(req.uid)
            attributes["admission.operation"] = req.operation
            attributes["admission.kind"] = bounded(f"{req.kind_group}/{req.version}/{req.kind}")
            attributes["admission.namespace"] = bounded(req.namespace)
        if outcome is not None and not outcome.allowed:
            attributes["admission.code"] = outcome.code
        span = self.tracer.start_span(
            REVIEW_SPAN,
            context=parent,
            kind=SpanKind.SERVER,
            attributes=attributes,
            start_time=started,
        )
        if outcome is not None:
            inside = set_span_in_context(span)
            for half in outcome.halves:
                if half.outcome == "skipped":
                    continue
                child = self.tracer.start_span(
                    f"{half.phase} {half.plugin}",
                    context=inside,
                    attributes={
                        "admission.plugin": half.plugin,
                        "admission.phase": half.phase,
                        "admission.outcome": half.outcome,
                        "admission.patch_ops": half.ops,
                    },
                    start_time=half.started,
                )
                child.end(end_time=half.ended)
        span.end(end_time=ended)

    def shutdown(self) -> None:
        """Export what is queued (within the export timeout) and stop the exporter's thread."""
        self.provider.shutdown()


def _processor_module(batch: type) -> str:
    """The module whose logger the batch processor's queue warns through (it moved
    between SDK releases: the processor's own, or the shared batching module)."""
    inner = getattr(batch, "__init__", None)
    shared = getattr(inner, "__globals__", {}).get("BatchProcessor")
    return str(getattr(shared, "__module__", batch.__module__))


def start_tracing(endpoint: str) -> Tracing:
    """A tracer exporting to ``endpoint`` through a batch processor; call it in the worker.

    Why in each worker, after fork: the processor's export thread and the exporter's
    connections belong to one process; built in the gunicorn master, the workers would
    inherit a thread that does not exist in them.
    """
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

    # The processor warns once per span it drops from a full queue, in the thread that
    # ended the span: a review's. Left on, a dead collector would turn every review into a
    # log write; the exporter's own error, once per failed batch, still says spans are lost.
    logging.getLogger(_processor_module(BatchSpanProcessor)).setLevel(logging.ERROR)
    resource = Resource.create(
        {"service.name": "placement-webhooks", "service.version": __version__}
    )
    provider = TracerProvider(resource=resource)

    class Exporter(OTLPSpanExporter):
        """The OTLP/HTTP exporter, collecting the cycles a failed export leaves.

        Why: a refused or timed-out export leaves its exception, traceback and connection
        state in reference cycles (thousands of objects a time), and the workers make full
        collections rarely (:mod:`webhooks.collector`): with a dead collector the worker
        grew with every export (``bench/tracing_bench.py``'s growth line). One full
        collection after a failure, in the export thread, at most once per export timeout,
        frees them; it walks only what is newer than the worker's start (``gc.freeze``), and
        a healthy collector never triggers it.
        """

        def export(self, spans: Any) -> Any:
            result = super().export(spans)
            if result is not SpanExportResult.SUCCESS:
                gc.collect()
            return result

    exporter = Exporter(endpoint=traces_url(endpoint), timeout=EXPORT_TIMEOUT)
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter,
            max_queue_size=QUEUE_SIZE,
            schedule_delay_millis=SCHEDULE_DELAY_MS,
            max_export_batch_size=BATCH_SIZE,
            export_timeout_millis=EXPORT_TIMEOUT * 1000,
        )
    )
    return Tracing(provider, provider.get_tracer("webhooks.server", __version__))
