"""``serve --log-format json``: every line one JSON object, every client string bounded."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient

from tests.reviews import pod, review
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.plugins import REGISTRY
from webhooks.server.app import ReviewLog, ServerState, create_app
from webhooks.server.logformat import (
    FIELD_CAP,
    MESSAGE_CAP,
    JsonFormatter,
    JsonGunicornLogger,
    bounded,
    configure,
    line,
)

RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
#: What no line may exceed, whatever a client sends: every bounded field at its cap, and
#: the fixed fields around them.
LINE_BOUND = 16 * 1024


def _client(
    log_format: str, config: dict[str, Any] | None = None
) -> tuple[FlaskClient, io.StringIO]:
    stream = io.StringIO()
    admission = Admission(REGISTRY, load_config(config, REGISTRY), record=True)
    log = ReviewLog(stream, interval=None, log_format=log_format)  # type: ignore[arg-type]
    return create_app(ServerState(admission, review_log=log)).test_client(), stream


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    text = stream.getvalue()
    assert text.endswith("\n")
    return [json.loads(raw) for raw in text.splitlines()]


def _post(
    client: FlaskClient, path: str, body: Any, content_type: str = "application/json"
) -> None:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    client.post(path, data=data, content_type=content_type)


TOLERATED = {"key": "nvidia.com/gpu", "operator": "Exists"}
DENIED = {
    "plugins": {
        "extended-resource-toleration": {"enforce": {"guarded": [{"taintKey": "nvidia.com/gpu"}]}}
    }
}

REQUESTS = [
    pytest.param(
        "/mutate",
        review(pod(), uid="u-patched"),
        None,
        {
            "uid": "u-patched",
            "decision": "patched",
            "allowed": True,
            "code": 200,
            "operation": "CREATE",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
        },
        id="a mutated pod's line names its uid, kind by group version and kind, and patched",
    ),
    pytest.param(
        "/validate",
        review(pod(tolerations=[TOLERATED]), uid="u-denied"),
        DENIED,
        {"uid": "u-denied", "decision": "denied", "allowed": False, "code": 403},
        id="a refused pod's line says denied with the refusal's code",
    ),
    pytest.param(
        "/validate",
        b"{not json",
        None,
        {"decision": "bad_request", "allowed": False, "code": 400, "status": 400},
        id="an unusable review's line says bad_request and carries the error, no uid",
    ),
    pytest.param(
        '/mutate/no-such"}plugin',
        review(pod(), uid="u-404"),
        None,
        {"endpoint": "other", "code": 404, "path": '/mutate/no-such"}plugin'},
        id="a path outside the endpoints is kept, quotes escaped by the encoder",
    ),
]


@pytest.mark.parametrize(("path", "body", "config", "expected"), REQUESTS)
def test_each_review_line_is_one_json_object_with_time_level_message_and_its_fields(
    path: str, body: Any, config: dict[str, Any] | None, expected: dict[str, Any]
) -> None:
    client, stream = _client("json", config)
    _post(client, path, body)
    (parsed,) = _lines(stream)
    assert RFC3339_UTC.match(parsed["time"])
    assert (parsed["level"], parsed["message"]) == ("info", "review")
    assert isinstance(parsed["durationMs"], float)
    assert parsed.items() >= expected.items()


def test_a_review_line_lists_each_plugin_half_with_its_outcome_and_patch_operations() -> None:
    client, stream = _client("json", DENIED)
    _post(client, "/mutate", review(pod(), uid="u-1"))
    _post(client, "/validate", review(pod(tolerations=[TOLERATED]), uid="u-2"))
    mutated, validated = _lines(stream)
    halves = {(p["name"], p["phase"]): (p["outcome"], p["patchOps"]) for p in mutated["plugins"]}
    assert halves[("default-toleration-seconds", "mutate")] == ("patched", 1)
    assert all(phase == "mutate" for _, phase in halves)
    refusals = [p for p in validated["plugins"] if p["outcome"] == "denied"]
    assert [p["name"] for p in refusals] == ["extended-resource-toleration"]
    assert validated["reason"] == "Forbidden" and validated["denial"]


HOSTILE = 'a\n"}{"level":"critical"\r\u2028\x85' + "x" * (1 << 20)


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("name", id="a one-megabyte name with newlines and quotes"),
        pytest.param("namespace", id="a one-megabyte namespace with newlines and quotes"),
        pytest.param("uid", id="a one-megabyte uid with newlines and quotes"),
    ],
)
def test_a_hostile_string_gives_one_bounded_line_that_parses(where: str) -> None:
    client, stream = _client("json")
    body = review(pod(), uid="u-1")
    body["request"][where] = HOSTILE
    _post(client, "/mutate", body)
    text = stream.getvalue()
    assert text.count("\n") == 1 and len(text) < LINE_BOUND
    (parsed,) = _lines(stream)
    assert parsed["level"] == "info"
    assert parsed[where].startswith(HOSTILE[:FIELD_CAP])
    assert parsed[where].endswith(f"...[{len(HOSTILE)} characters]")


@pytest.mark.parametrize(
    ("text", "cap", "expected"),
    [
        pytest.param("short", 10, "short", id="a string within its cap is kept whole"),
        pytest.param(
            "x" * 11,
            10,
            "x" * 10 + "...[11 characters]",
            id="a longer one is cut and says how long",
        ),
    ],
)
def test_bounded(text: str, cap: int, expected: str) -> None:
    assert bounded(text, cap) == expected


def _record(message: str, level: int = logging.INFO, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("boom\nsecond line")
        except ValueError:
            exc_info = sys.exc_info()
    return logging.LogRecord("gunicorn.error", level, __file__, 1, message, (), exc_info)


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        pytest.param(
            _record("Booting worker"),
            {"level": "info", "message": "Booting worker"},
            id="a gunicorn line",
        ),
        pytest.param(
            _record("two\nlines", logging.WARNING),
            {"level": "warning", "message": "two\nlines"},
            id="a message with a newline stays one line",
        ),
        pytest.param(
            _record("worker failed", logging.ERROR, exc=True),
            {"level": "error", "message": "worker failed"},
            id="a traceback goes into the exception field of the same line",
        ),
        pytest.param(
            _record("m" * (MESSAGE_CAP * 4)),
            {"message": "m" * MESSAGE_CAP + f"...[{MESSAGE_CAP * 4} characters]"},
            id="a long message is cut",
        ),
    ],
)
def test_a_log_record_is_one_json_object(
    record: logging.LogRecord, expected: dict[str, Any]
) -> None:
    text = JsonFormatter().format(record)
    assert "\n" not in text
    parsed = json.loads(text)
    assert RFC3339_UTC.match(parsed["time"]) and parsed["logger"] == "gunicorn.error"
    assert parsed.items() >= expected.items()
    if record.exc_info:
        assert "ValueError: boom" in parsed["exception"]


def test_gunicorn_writes_json_through_the_logger_class(capsys: pytest.CaptureFixture[str]) -> None:
    from gunicorn.config import Config

    cfg = Config()
    cfg.set("errorlog", "-")
    logger = JsonGunicornLogger(cfg)
    try:
        logger.info("Listening at: %s", "http://127.0.0.1:1")
        logger.setup(cfg)  # a reload sets up again: still JSON, still one handler
        logger.warning("after a reload")
    finally:
        for handler in list(logger.error_log.handlers):
            logger.error_log.removeHandler(handler)
    first, second = (json.loads(raw) for raw in capsys.readouterr().err.splitlines())
    assert first["message"] == "Listening at: http://127.0.0.1:1"
    assert (second["level"], second["message"]) == ("warning", "after a reload")


@pytest.fixture
def root_json(capsys: pytest.CaptureFixture[str]) -> Iterator[None]:
    configure("json")
    yield
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_placement_webhooks", False):
            root.removeHandler(handler)
    logging.captureWarnings(False)


@pytest.mark.usefixtures("root_json")
def test_a_library_logger_writes_json_once_configured(capsys: pytest.CaptureFixture[str]) -> None:
    configure("json")  # twice, as a reload might: still one handler
    logging.getLogger("webhooks.server.certwatch").warning("certificate files: %s", "gone")
    (raw,) = capsys.readouterr().err.splitlines()
    parsed = json.loads(raw)
    assert (parsed["level"], parsed["message"]) == ("warning", "certificate files: gone")


def test_text_configures_nothing() -> None:
    before = list(logging.getLogger().handlers)
    configure("text")
    assert logging.getLogger().handlers == before


def test_a_cli_note_is_one_json_object() -> None:
    parsed = json.loads(line("info", "--native: serving\nnothing"))
    assert (parsed["level"], parsed["message"]) == ("info", "--native: serving\nnothing")


def test_text_review_lines_are_unchanged_by_the_json_format() -> None:
    client, stream = _client("text")
    _post(client, "/mutate", review(pod(), uid="u-1"))
    (parsed,) = _lines(stream)
    assert parsed["msg"] == "review" and "message" not in parsed and "plugins" not in parsed
    assert parsed["latencyMs"] >= 0 and parsed["kind"] == "Pod"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        pytest.param(
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            id="the API server's traceparent is shown as received",
        ),
        pytest.param(
            "t" * 5000,
            "t" * FIELD_CAP + "...[5000 characters]",
            id="a long one is cut like any client string",
        ),
    ],
)
def test_a_json_review_line_carries_the_traceparent_it_was_sent(header: str, expected: str) -> None:
    client, stream = _client("json")
    client.post(
        "/mutate",
        data=orjson.dumps(review(pod())),
        content_type="application/json",
        headers={"traceparent": header},
    )
    (parsed,) = _lines(stream)
    assert parsed["traceparent"] == expected
