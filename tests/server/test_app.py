"""The Flask routes through the test client: bytes in, bytes out, two error channels."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient

from tests.reviews import container, pod, review
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.core.plugin import Phase
from webhooks.plugins import REGISTRY
from webhooks.server.app import (
    MAX_BODY,
    PORT_KEY,
    REFUSAL_LOG_INTERVAL,
    SHOWN_PATH,
    ServerState,
    create_app,
    endpoint_label,
    shown_path,
)


@pytest.fixture
def state() -> ServerState:
    return ServerState(Admission(REGISTRY, load_config(None, REGISTRY)))


@pytest.fixture
def client(state: ServerState) -> FlaskClient:
    return create_app(state).test_client()


def _post(client: FlaskClient, path: str, body: Any, **kw: Any) -> Any:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    return client.post(
        path, data=data, content_type=kw.pop("content_type", "application/json"), **kw
    )


def test_mutate_returns_the_default_tolerations_and_echoes_the_uid(client: FlaskClient) -> None:
    body = review(pod(), uid="u-1")
    resp = _post(client, "/mutate", body)
    assert resp.status_code == 200
    out = resp.get_json()
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    assert out["response"]["uid"] == "u-1"
    assert out["response"]["patchType"] == "JSONPatch"
    patch = orjson.loads(base64.b64decode(out["response"]["patch"]))
    keys = [t["key"] for t in patch[0]["value"]]
    assert keys == ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]


def test_one_plugin_route_runs_only_that_plugin(client: FlaskClient) -> None:
    obj = pod(containers=[container(requests={"nvidia.com/gpu": "1"})])
    out = _post(client, "/mutate/extended-resource-toleration", review(obj)).get_json()
    patch = orjson.loads(base64.b64decode(out["response"]["patch"]))
    assert patch == [
        {
            "op": "add",
            "path": "/spec/tolerations",
            "value": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        }
    ]


def test_validate_with_no_validators_allows_without_a_patch(client: FlaskClient) -> None:
    out = _post(client, "/validate/default-toleration-seconds", review(pod())).get_json()
    assert out["response"] == {"uid": out["response"]["uid"], "allowed": True}


BAD = [
    ("a body that is not JSON", b"not json", 400, "body is not valid JSON"),
    (
        "a review with the wrong apiVersion",
        {"apiVersion": "v1", "kind": "AdmissionReview"},
        400,
        "apiVersion",
    ),
    (
        "a review with no uid",
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}},
        400,
        "uid",
    ),
]


@pytest.mark.parametrize(
    ("body", "status", "reason"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_a_malformed_review_gets_a_400_with_a_one_line_reason(
    client: FlaskClient, body: Any, status: int, reason: str
) -> None:
    resp = _post(client, "/mutate", body)
    assert resp.status_code == status
    text = resp.get_data(as_text=True)
    assert reason in text and text.count("\n") == 1


def test_an_oversized_body_gets_413_and_the_app_keeps_serving(client: FlaskClient) -> None:
    resp = _post(client, "/mutate", b"x" * (MAX_BODY + 1))
    assert resp.status_code == 413
    assert "larger than" in resp.get_data(as_text=True)
    assert _post(client, "/mutate", review(pod())).status_code == 200


def test_a_wrong_content_type_gets_415(client: FlaskClient) -> None:
    resp = _post(client, "/mutate", review(pod()), content_type="text/plain")
    assert resp.status_code == 415


def test_an_unknown_plugin_gets_404(client: FlaskClient) -> None:
    assert _post(client, "/mutate/nope", review(pod())).status_code == 404


def test_get_on_an_admission_path_is_405(client: FlaskClient) -> None:
    assert client.get("/mutate").status_code == 405


def test_health_readiness_and_metrics(client: FlaskClient, state: ServerState) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    state.ready_checks.append(lambda: "cache not synced")
    resp = client.get("/readyz")
    assert resp.status_code == 503 and "cache not synced" in resp.get_data(as_text=True)
    _post(client, "/mutate", review(pod()))
    text = client.get("/metrics").get_data(as_text=True)
    assert 'placement_webhooks_requests_total{endpoint="/mutate",outcome="patched"} 1' in text
    assert "placement_webhooks_request_duration_seconds_bucket" in text
    assert 'plugin="default-toleration-seconds"' in text


def test_policy_decisions_and_exceptions_are_counted_and_logged() -> None:
    import io

    from webhooks.server.app import ReviewLog

    config = load_config(
        {
            "plugins": {
                "extended-resource-toleration": {
                    "enforce": {"guarded": [{"taintKey": "nvidia.com/gpu"}]},
                    "action": "warn",
                },
                "default-toleration-seconds": {"mutation": "monitor"},
                "runtime-class": {"enabled": False},
            },
            "exceptions": [
                {"name": "late", "plugins": ["daemonset-tolerations"], "expires": "2020-01-01"},
            ],
        },
        REGISTRY,
    )
    stream = io.StringIO()
    state = ServerState(Admission(REGISTRY, config), review_log=ReviewLog(stream, interval=None))
    client = create_app(state).test_client()
    obj = pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])
    for path in ("/mutate", "/validate"):
        answer = orjson.loads(_post(client, path, review(obj)).get_data())["response"]
        assert answer["allowed"]
    assert answer["warnings"][0].startswith("extended-resource-toleration: toleration")
    text = client.get("/metrics").get_data(as_text=True)
    decisions = "placement_webhooks_plugin_decisions_total"
    assert f'{decisions}{{decision="warned",plugin="extended-resource-toleration"}}' in text
    assert f'{decisions}{{decision="monitored",plugin="default-toleration-seconds"}}' in text
    exceptions = "placement_webhooks_exceptions_total"
    assert (
        f'{exceptions}{{exception="late",plugin="daemonset-tolerations",state="expired"}}' in text
    )
    log = state.review_log
    assert log is not None
    log.flush()
    logged = stream.getvalue()
    assert '"advisories"' in logged and '"monitored"' in logged


# --------------------------------------------------------------------------- closed label set


def _series(client: FlaskClient) -> set[str]:
    """The series /metrics shows: each sample's name and labels, without its value."""
    text = client.get("/metrics").get_data(as_text=True)
    return {ln.rsplit(" ", 1)[0] for ln in text.splitlines() if ln and not ln.startswith("#")}


LABELS = [
    ("the mutating chain is its path", "mutate", None, "/mutate"),
    ("the validating chain is its path", "validate", None, "/validate"),
    ("a registered plugin is its path", "validate", "runtime-class", "/validate/runtime-class"),
    (
        "a plugin is its path under either phase, halves or not",
        "mutate",
        "taint-toleration-rules",
        "/mutate/taint-toleration-rules",
    ),
    ("an unknown name is other", "validate", "no-such-plugin", "other"),
    ("a NUL is other", "mutate", "\x00", "other"),
    ("a name a plugin's name starts with is other", "mutate", "runtime-class-x", "other"),
]


@pytest.mark.parametrize(
    ("phase", "plugin", "label"), [t[1:] for t in LABELS], ids=[t[0] for t in LABELS]
)
def test_the_endpoint_label_comes_from_a_closed_set(
    phase: Phase, plugin: str | None, label: str
) -> None:
    assert endpoint_label(phase, plugin, frozenset(REGISTRY.names)) == label


REFUSALS = [
    ("an unknown plugin (404)", "/validate/no-such-plugin", {}, 404),
    ("a NUL for a plugin name (404)", "/mutate/%00", {}, 404),
    ("a body over the limit (413)", "/mutate", {"data": b"x" * (MAX_BODY + 1)}, 413),
    ("the wrong content type (415)", "/mutate", {"content_type": "text/yaml"}, 415),
]


@pytest.mark.parametrize(
    ("path", "kw", "status"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_a_request_refused_before_its_review_is_read_adds_no_series(
    client: FlaskClient, path: str, kw: dict[str, Any], status: int
) -> None:
    _post(client, "/mutate", review(pod()))
    before = _series(client)
    body = kw.pop("data", review(pod()))
    assert _post(client, path, body, **kw).status_code == status
    assert _series(client) == before


def test_a_client_without_a_certificate_adds_no_series() -> None:
    state = ServerState(Admission(REGISTRY, load_config(None, REGISTRY)), require_client_cert=True)
    client = create_app(state).test_client()
    before = _series(client)
    for path in ("/mutate", "/validate/runtime-class", "/mutate/unheard-of"):
        assert _post(client, path, review(pod())).status_code == 401
    assert _series(client) == before


def _refused(client: FlaskClient, port: str, status: int) -> float:
    """The count of ``placement_webhooks_refused_requests_total`` for ``port`` and ``status``."""
    text = client.get("/metrics").get_data(as_text=True)
    series = f'placement_webhooks_refused_requests_total{{port="{port}",status="{status}"}}'
    values = [ln.rsplit(" ", 1)[1] for ln in text.splitlines() if ln.startswith(series + " ")]
    assert len(values) == 1, f"{series} missing"
    return float(values[0])


def test_a_thousand_random_plugin_names_are_counted_and_add_no_series(
    client: FlaskClient,
) -> None:
    _post(client, "/mutate", review(pod()))
    before, counted = _series(client), _refused(client, "admission", 404)
    body = orjson.dumps(review(pod()))
    for i in range(1000):
        assert _post(client, f"/validate/random-{i:x}-{i * 7919:x}", body).status_code == 404
    assert _series(client) == before
    assert _refused(client, "admission", 404) == counted + 1000


@pytest.mark.parametrize(
    ("port", "path", "status"),
    [
        ("admission", "/nowhere", 404),
        ("admission", "/mutate/nope", 404),
        ("metrics", "/nowhere", 404),
        ("admission", "/healthz", 405),
    ],
    ids=[
        "an unknown path over TLS",
        "an unknown plugin over TLS",
        "the listener the worker names is the port label",
        "a POST to a probe path",
    ],
)
def test_a_refusal_is_counted_by_port_and_status(
    client: FlaskClient, port: str, path: str, status: int
) -> None:
    before = _refused(client, port, status)
    answer = client.post(
        path, data=b"{}", content_type="application/json", environ_base={PORT_KEY: port}
    )
    assert answer.status_code == status
    assert _refused(client, port, status) == before + 1


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _log_of(requests: list[tuple[float, str, int]]) -> list[dict[str, Any]]:
    """The review log lines of ``requests``: (seconds since start, path, expected status)."""
    import io

    from webhooks.server.app import ReviewLog

    stream, clock = io.StringIO(), _Clock()
    state = ServerState(
        Admission(REGISTRY, load_config(None, REGISTRY)),
        review_log=ReviewLog(stream, interval=None, clock=clock),
    )
    client = create_app(state).test_client()
    start = clock.now
    for at, path, status in requests:
        clock.now = start + at
        assert _post(client, path, review(pod())).status_code == status
    return [orjson.loads(line) for line in stream.getvalue().splitlines()]


SAMPLED: list[tuple[str, list[tuple[float, str, int]], list[tuple[int, int | None]]]] = [
    (
        "a thousand 404s within a second write one line",
        [(i / 1000, f"/mutate/nope-{i}", 404) for i in range(1000)],
        [(404, None)],
    ),
    (
        "the next line after the interval says how many were left out",
        [
            (0.0, "/mutate/a", 404),
            (0.5, "/mutate/b", 404),
            (0.9, "/mutate/c", 404),
            (REFUSAL_LOG_INTERVAL, "/mutate/d", 404),
        ],
        [(404, None), (404, 2)],
    ),
    (
        "each status has its own interval",
        [(0.0, "/mutate/a", 404), (0.1, "/mutate", 200), (0.2, "/mutate/b", 404)],
        [(404, None), (200, None)],
    ),
    (
        "reviews are never left out",
        [(0.0, "/mutate", 200)] * 50,
        [(200, None)] * 50,
    ),
]


@pytest.mark.parametrize(
    ("requests", "lines"), [c[1:] for c in SAMPLED], ids=[c[0] for c in SAMPLED]
)
def test_refusals_get_sampled_review_log_lines(
    requests: list[tuple[float, str, int]], lines: list[tuple[int, int | None]]
) -> None:
    assert [(ln["status"], ln.get("suppressed")) for ln in _log_of(requests)] == lines


SHOWN = [
    ("a plain path is itself", "/mutate/nope", "/mutate/nope"),
    ("a NUL is escaped", "/mutate/\x00", "/mutate/\\x00"),
    ("a newline cannot start a line of its own", "/mutate/a\nb", "/mutate/a\\nb"),
    ("a line separator is escaped", "/mutate/\u2028", "/mutate/\\u2028"),
    ("a terminal escape is escaped", "/mutate/\x1b[2J", "/mutate/\\x1b[2J"),
    ("a backslash is doubled", "/mutate/\\x00", "/mutate/\\\\x00"),
    ("a long path is cut", "/mutate/" + "a" * 500, ("/mutate/" + "a" * 500)[:SHOWN_PATH] + "..."),
]


@pytest.mark.parametrize(("path", "shown"), [t[1:] for t in SHOWN], ids=[t[0] for t in SHOWN])
def test_the_review_log_shows_a_client_s_path_escaped_and_cut(path: str, shown: str) -> None:
    assert shown_path(path) == shown


def test_a_review_log_line_for_an_unknown_path_says_other_and_shows_the_path_safely() -> None:
    import io

    from webhooks.server.app import ReviewLog

    stream = io.StringIO()
    state = ServerState(
        Admission(REGISTRY, load_config(None, REGISTRY)),
        review_log=ReviewLog(stream, interval=None),
    )
    client = create_app(state).test_client()
    assert _post(client, "/mutate/%00%E2%80%A8x", review(pod())).status_code == 404
    assert _post(client, "/mutate", review(pod())).status_code == 200
    first, second = (orjson.loads(line) for line in stream.getvalue().splitlines())
    assert (first["endpoint"], first["status"]) == ("other", 404)
    assert first["path"] == "/mutate/\\x00\\u2028x"
    assert second["endpoint"] == "/mutate" and "path" not in second
