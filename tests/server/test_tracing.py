"""``serve --otlp-endpoint``: a span per review and per plugin half, continuing traceparent."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from tests.reviews import pod, review
from webhooks.cli import main as cli
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.plugins import REGISTRY
from webhooks.server import tracing
from webhooks.server.app import ServerState, create_app
from webhooks.server.assemble import build_state
from webhooks.server.runner import ServeOptions
from webhooks.server.tracing import (
    EXPORT_TIMEOUT,
    INSTALL,
    QUEUE_SIZE,
    REVIEW_SPAN,
    Tracing,
    start_tracing,
    traces_url,
)

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.shutdown()


def _tracing(exporter: SpanExporter, batch: bool = False) -> Tracing:
    provider = TracerProvider()
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    return Tracing(provider, provider.get_tracer("test"))


def _serve(tracer: Tracing, path: str, body: Any, headers: dict[str, str]) -> None:
    admission = Admission(REGISTRY, load_config(None, REGISTRY), record=True, clock=time.time_ns)
    client = create_app(ServerState(admission, tracer=tracer)).test_client()
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    client.post(path, data=data, content_type="application/json", headers=headers)


def _review_span(spans: Sequence[ReadableSpan]) -> ReadableSpan:
    (found,) = [s for s in spans if s.name == REVIEW_SPAN]
    return found


HEADERS = [
    pytest.param(
        {"traceparent": TRACEPARENT},
        (int(TRACE_ID, 16), int(PARENT_ID, 16)),
        id="the API server's traceparent is continued: its trace id, its span as parent",
    ),
    pytest.param(
        {"traceparent": TRACEPARENT, "tracestate": "apiserver=1"},
        (int(TRACE_ID, 16), int(PARENT_ID, 16)),
        id="a tracestate beside it is carried too",
    ),
    pytest.param(
        {"traceparent": "00-zz-not-a-trace-parent"},
        None,
        id="a malformed traceparent starts a new trace, never an error",
    ),
    pytest.param(
        {"traceparent": f"00-{'0' * 32}-{PARENT_ID}-01"},
        None,
        id="an all-zero trace id is malformed too",
    ),
    pytest.param({}, None, id="no header starts a new trace"),
]


@pytest.mark.parametrize(("headers", "parent"), HEADERS)
def test_a_review_span_continues_a_well_formed_traceparent_only(
    exported: InMemorySpanExporter, headers: dict[str, str], parent: tuple[int, int] | None
) -> None:
    _serve(_tracing(exported), "/mutate", review(pod(), uid="u-1"), headers)
    span = _review_span(exported.get_finished_spans())
    assert span.kind is SpanKind.SERVER
    if parent is None:
        assert span.parent is None
    else:
        assert span.parent is not None and span.parent.is_remote
        assert (span.context.trace_id, span.parent.span_id) == parent
    if "tracestate" in headers:
        assert span.context.trace_state.get("apiserver") == "1"


def test_a_review_span_carries_the_review_and_each_half_gets_a_child(
    exported: InMemorySpanExporter,
) -> None:
    _serve(_tracing(exported), "/mutate", review(pod(), uid="u-1"), {"traceparent": TRACEPARENT})
    spans = exported.get_finished_spans()
    span = _review_span(spans)
    assert (
        dict(span.attributes or {}).items()
        >= {
            "admission.uid": "u-1",
            "admission.operation": "CREATE",
            "admission.kind": "/v1/Pod",
            "admission.namespace": "default",
            "admission.decision": "patched",
        }.items()
    )
    children = [s for s in spans if s is not span]
    assert children and all(
        s.parent is not None and s.parent.span_id == span.context.span_id for s in children
    )
    assert all(s.context.trace_id == int(TRACE_ID, 16) for s in children)
    names = {s.name: dict(s.attributes or {}) for s in children}
    assert (
        names["mutate default-toleration-seconds"].items()
        >= {
            "admission.outcome": "patched",
            "admission.patch_ops": 1,
        }.items()
    )
    assert all(name.startswith("mutate ") for name in names)
    assert all(
        span.start_time <= s.start_time <= s.end_time <= span.end_time  # type: ignore[operator]
        for s in children
    )


def test_a_refused_request_gets_a_review_span_without_children(
    exported: InMemorySpanExporter,
) -> None:
    _serve(_tracing(exported), "/validate", b"{not json", {"traceparent": TRACEPARENT})
    (span,) = exported.get_finished_spans()
    assert (
        dict(span.attributes or {}).items()
        >= {
            "admission.decision": "bad_request",
            "http.response.status_code": 400,
        }.items()
    )


class _Stalled(SpanExporter):
    """A collector that never answers: every export waits until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls += 1
        self.release.wait()
        return SpanExportResult.FAILURE


def test_a_collector_that_never_answers_never_holds_up_a_review() -> None:
    stalled = _Stalled()
    tracer = _tracing(stalled, batch=True)
    admission = Admission(REGISTRY, load_config(None, REGISTRY), record=True, clock=time.time_ns)
    client = create_app(ServerState(admission, tracer=tracer)).test_client()
    body = orjson.dumps(review(pod()))
    try:
        # More reviews than the queue holds: ending a span only queues it (or drops it),
        # so every one is answered while the one export in flight waits forever.
        for _ in range(QUEUE_SIZE // 8):
            answer = client.post("/mutate", data=body, content_type="application/json")
            assert answer.status_code == 200
    finally:
        stalled.release.set()
        tracer.shutdown()


def test_start_tracing_exports_in_batches_with_a_bounded_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from opentelemetry.exporter.otlp.proto.http import trace_exporter
    from opentelemetry.sdk.trace import export

    made: dict[str, dict[str, Any]] = {}

    class Exporter(trace_exporter.OTLPSpanExporter):  # type: ignore[misc]
        def __init__(self, **kw: Any) -> None:
            made["exporter"] = kw
            super().__init__(**kw)

    class Batch(export.BatchSpanProcessor):
        def __init__(self, exporter: SpanExporter, **kw: Any) -> None:
            made["processor"] = kw
            super().__init__(exporter, **kw)

    monkeypatch.setattr(trace_exporter, "OTLPSpanExporter", Exporter)
    monkeypatch.setattr(export, "BatchSpanProcessor", Batch)
    tracer = start_tracing("http://127.0.0.1:9")
    try:
        (processor,) = tracer.provider._active_span_processor._span_processors
        assert isinstance(processor, BatchSpanProcessor)
    finally:
        tracer.shutdown()
    assert made["exporter"] == {
        "endpoint": "http://127.0.0.1:9/v1/traces",
        "timeout": EXPORT_TIMEOUT,
    }
    assert made["processor"]["max_queue_size"] == QUEUE_SIZE
    assert made["processor"]["export_timeout_millis"] == EXPORT_TIMEOUT * 1000


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        pytest.param(
            "http://collector:4318",
            "http://collector:4318/v1/traces",
            id="no path gets OTLP's traces path",
        ),
        pytest.param(
            "http://collector:4318/", "http://collector:4318/v1/traces", id="a bare slash too"
        ),
        pytest.param(
            "https://c.example/otlp/v1/traces",
            "https://c.example/otlp/v1/traces",
            id="a path is kept",
        ),
    ],
)
def test_traces_url(endpoint: str, url: str) -> None:
    assert traces_url(endpoint) == url


@pytest.mark.parametrize(
    "endpoint",
    [
        pytest.param("collector:4318", id="no scheme"),
        pytest.param("grpc://collector:4317", id="not http"),
        pytest.param("http://", id="no host"),
    ],
)
def test_traces_url_refuses_what_spans_cannot_be_posted_to(endpoint: str) -> None:
    with pytest.raises(ValueError, match="--otlp-endpoint"):
        traces_url(endpoint)


def test_without_the_extra_the_option_stops_start_up_naming_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tracing.importlib.util, "find_spec", lambda name: None)
    result = CliRunner().invoke(cli, ["serve", "--otlp-endpoint", "http://127.0.0.1:4318"])
    assert result.exit_code == 2
    assert "--otlp-endpoint" in result.output and INSTALL in result.output
    assert INSTALL == "pip install 'placement-webhooks[otlp]'"


def test_a_url_spans_cannot_be_posted_to_stops_start_up() -> None:
    result = CliRunner().invoke(cli, ["serve", "--otlp-endpoint", "collector:4318"])
    assert result.exit_code == 2 and "http:// or https://" in result.output


def test_each_worker_sets_up_its_tracer_when_it_builds_its_state(tmp_path: Path) -> None:
    from webhooks.certs import pki

    served = tmp_path / "served"
    pki.generate(served, hosts=["localhost"])
    options = ServeOptions(
        cert_dir=served, runtime_dir=tmp_path, otlp_endpoint="http://127.0.0.1:9"
    )
    # build_state runs in WebhookServer.load, which gunicorn calls in each worker after
    # fork; the master never builds one.
    state = build_state(options)
    try:
        assert state.tracer is not None
        assert state.admission.record and state.admission.clock is time.time_ns
    finally:
        state.close()
    assert build_state(ServeOptions(cert_dir=served, runtime_dir=tmp_path)).tracer is None
