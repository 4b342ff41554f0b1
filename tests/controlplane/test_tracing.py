"""A real kube-apiserver with tracing on: our spans continue the trace it sends to ``serve``.

kube-apiserver's tracing (``--tracing-config-file``, a ``TracingConfiguration`` of
``apiserver.config.k8s.io/v1``) makes its webhook client send the W3C ``traceparent`` of
its span for each webhook call. ``serve --otlp-endpoint`` continues that trace: one
``admission.review`` span per review, whose parent is the API server's span, and one
child span per plugin half. The API server's own spans go to an endpoint where nothing
listens (they are not what is proved here); ours go to a small OTLP/HTTP receiver in the
test, decoded with opentelemetry-proto. ``--log-format json`` runs beside it, and its
lines carry the ``traceparent`` each review arrived with: what ties a span to the header.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from controlplane.harness import ControlPlane, ControlPlaneOptions, create_namespace, pod_manifest
from controlplane.harness.modes import apiserver_options
from controlplane.harness.process import free_port
from tests.controlplane.conftest import FIGURES, started_plane
from tests.waiting import eventually

REVIEW_SPAN = "admission.review"


class Receiver:
    """An OTLP/HTTP trace receiver: keeps every span posted to ``/v1/traces``."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest.FromString(body)
                with receiver.lock:
                    for resource in request.resource_spans:
                        for scope in resource.scope_spans:
                            receiver.spans.extend(scope.spans)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200 if self.path == "/v1/traces" else 404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def snapshot(self) -> list[Span]:
        with self.lock:
            return list(self.spans)


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.stop()


@pytest.fixture(scope="module")
def plane(receiver: Receiver, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """MODE=webhooks; the API server traces every request, ``serve`` exports to ``receiver``
    and logs JSON."""
    config = tmp_path_factory.mktemp("tracing") / "tracing.yaml"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "apiserver.config.k8s.io/v1",
                "kind": "TracingConfiguration",
                # OTLP/gRPC where nothing listens: the API server's spans are dropped, its
                # traceparent is sent all the same.
                "endpoint": f"127.0.0.1:{free_port()}",
                "samplingRatePerMillion": 1000000,
            }
        )
    )
    api = dataclasses.replace(
        apiserver_options("webhooks"),
        extra_args=(f"--tracing-config-file={config}",),
        serve_args=("--log-format=json", f"--otlp-endpoint={receiver.url}"),
    )
    options = ControlPlaneOptions(apiservers=(api,), scheduler=False, controller_manager=None)
    with started_plane(options, "webhooks mode, API server tracing") as started:
        yield started


def _lines(log: Path) -> list[dict[str, Any]]:
    """Every line ``serve`` wrote (stdout and stderr), each parsed as JSON."""
    return [json.loads(raw) for raw in log.read_text().splitlines() if raw]


def test_our_spans_continue_the_trace_the_api_server_sends(
    plane: ControlPlane, receiver: Receiver
) -> None:
    api = plane.api
    with api.client() as client:
        create_namespace(client, "traced")
    status, created = api.request("POST", "/api/v1/namespaces/traced/pods", pod_manifest("p"))
    assert status == 201, created
    log = plane.webhooks[api.name].component.log

    def reviewed() -> list[dict[str, Any]] | None:
        lines = [x for x in _lines(log) if x.get("message") == "review"]
        pods = [x for x in lines if x.get("name") == "p" and x.get("namespace") == "traced"]
        return pods if {x["endpoint"] for x in pods} >= {"/mutate", "/validate"} else None

    reviews = eventually(reviewed, "the pod's mutating and validating review lines", 30)

    for line in reviews:
        # The header as the webhook received it: version, trace id, parent id, sampled.
        version, _, _, flags = line["traceparent"].split("-")
        assert (version, flags) == ("00", "01")

    def exported() -> list[tuple[dict[str, Any], Span, list[Span]]] | None:
        spans = receiver.snapshot()
        found = []
        for line in reviews:
            _, trace_id, parent_id, _ = line["traceparent"].split("-")
            ours = [
                s
                for s in spans
                if s.name == REVIEW_SPAN
                and s.trace_id.hex() == trace_id
                and s.parent_span_id.hex() == parent_id
            ]
            if len(ours) != 1:
                return None
            children = [s for s in spans if s.parent_span_id == ours[0].span_id]
            if not children:
                return None
            found.append((line, ours[0], children))
        return found

    matched = eventually(exported, "a review span per review line, under the header's span", 30)
    # One pod create is one trace: every webhook call of it carries the same trace id.
    assert len({span.trace_id for _, span, _ in matched}) == 1
    for line, span, children in matched:
        attributes = {a.key: a.value for a in span.attributes}
        # The API server gives each webhook call a uid of its own: the line's is the span's.
        assert attributes["admission.uid"].string_value == line["uid"]
        assert attributes["admission.operation"].string_value == "CREATE"
        assert attributes["admission.kind"].string_value == "/v1/Pod"
        assert attributes["admission.namespace"].string_value == "traced"
        assert attributes["admission.decision"].string_value == line["decision"]
        ran = sorted(
            f"{p['phase']} {p['name']}" for p in line["plugins"] if p["outcome"] != "skipped"
        )
        assert sorted(c.name for c in children) == ran
        assert all(c.trace_id == span.trace_id for c in children)
    FIGURES.append(
        f"tracing: {len(matched)} reviews of one pod create continued the API server's trace, "
        f"{sum(len(c) for _, _, c in matched)} plugin-half spans under them"
    )


def test_every_line_serve_wrote_is_a_json_object(plane: ControlPlane) -> None:
    log = plane.webhooks[plane.api.name].component.log
    lines = _lines(log)
    assert lines and all({"time", "level", "message"} <= line.keys() for line in lines)
    assert any(line["message"] == "review" and line.get("uid") for line in lines)
