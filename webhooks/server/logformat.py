"""Every line ``serve`` logs, in one of two formats: ``text`` (the default) or ``json``.

``text`` is what the server always wrote: gunicorn's lines (``[time] [pid] [LEVEL]
message``) and one JSON review line per review (:func:`text_review`). ``json`` makes
every line one JSON object with ``time`` (RFC 3339, UTC), ``level`` and ``message``:
gunicorn's own logger, the library loggers (certificate watch, the exporter of traces),
Python warnings and the review lines (:func:`json_review`), so a collector never meets a
line it cannot parse.

Why one module: the two formats, the fields of a review and the caps on what clients
send are decided here and nowhere else. Every string a client chose (uid, kind, name,
namespace, a path, a denial's message) is escaped by the JSON encoder and cut to a cap
(:data:`FIELD_CAP`, :data:`MESSAGE_CAP`), so no request can forge a line or make one
megabytes long.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import orjson
from gunicorn.glogging import Logger as GunicornLogger

if TYPE_CHECKING:
    from webhooks.core.result import HalfRun
    from webhooks.server.replies import Reply

LogFormat = Literal["text", "json"]
#: How much of a path outside the closed set of endpoints a text review line shows.
SHOWN_PATH = 200
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")

#: A client's string in a JSON line (uid, kind, namespace, name, path): the longest valid
#: Kubernetes name is 253 characters, so 256 cuts only what no real object sends.
FIELD_CAP = 256
#: A message in a JSON line (a denial, a refusal's reason, a log record, a traceback).
MESSAGE_CAP = 2048
#: List items a JSON review line shows (advisories): the rest are counted, not shown.
LIST_CAP = 16
#: The gunicorn logger class ``serve --log-format json`` installs.
JSON_LOGGER = "webhooks.server.logformat.JsonGunicornLogger"

#: The milliseconds of a timestamp, ``.000Z`` to ``.999Z`` (see :class:`Stamp`).
_MILLIS = tuple(f".{ms:03d}Z" for ms in range(1000))
_LEVELS = {
    logging.DEBUG: "debug",
    logging.INFO: "info",
    logging.WARNING: "warning",
    logging.ERROR: "error",
    logging.CRITICAL: "critical",
}


class Stamp:
    """RFC 3339 UTC time with milliseconds; the part up to the second is rendered once a second.

    Why: formatting a datetime per review was the review log's largest cost, and then the
    millisecond's format spec; the milliseconds are looked up in a table of their 1,000
    spellings. The cache is one tuple, swapped atomically, so threads never see a
    half-updated pair.
    """

    __slots__ = ("_second",)

    def __init__(self) -> None:
        self._second: tuple[int, str] = (0, "")

    def __call__(self, now: float | None = None) -> str:
        """The time ``now`` (seconds since the epoch; the current time when ``None``)."""
        now = time.time() if now is None else now
        whole = int(now)
        second = self._second
        if whole != second[0]:
            second = self._second = (
                whole,
                datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S"),
            )
        return second[1] + _MILLIS[int((now - whole) * 1000)]


def bounded(text: str, cap: int = FIELD_CAP) -> str:
    """``text`` cut to ``cap`` characters, saying how long it was when cut.

    Why: a field of a JSON line is whatever the client sent (a name up to the body
    limit); cut, a line stays a line a collector accepts, and the length still shows.
    """
    if len(text) <= cap:
        return text
    return f"{text[:cap]}...[{len(text)} characters]"


def shown_path(path: str) -> str:
    """A client's path as a text review line shows it: printable ASCII, at most ``SHOWN_PATH`` long.

    Why: the path is whatever the client sent, up to the 64 KiB head; escaped, a NUL, a
    line separator or a terminal escape sequence cannot forge or hide log lines.
    """
    cut = path[:SHOWN_PATH]
    shown = cut.encode("unicode_escape").decode("ascii")
    return shown + "..." if len(path) > SHOWN_PATH else shown


#: Line breaks JSON leaves unescaped, which some readers still split lines at.
_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def encode(fields: dict[str, Any]) -> str:
    """One line: ``fields`` as a JSON object and a newline.

    orjson escapes every control character below U+0020; the three other characters a
    reader may take for a line break (NEL, LINE and PARAGRAPH SEPARATOR) are escaped here,
    so no string inside can end or split the line.
    """
    data = orjson.dumps(fields, option=orjson.OPT_APPEND_NEWLINE).decode()
    if "\x85" in data or "\u2028" in data or "\u2029" in data:
        data = data.translate(_BREAKS)
    return data


def _name(reply: Reply) -> str:
    req = reply.request
    assert req is not None
    return req.name or str((req.object or {}).get("metadata", {}).get("generateName", ""))


def text_review(
    stamp: str,
    endpoint: str,
    reply: Reply,
    seconds: float,
    decision: str,
    path: str | None,
    suppressed: int | None,
    traceparent: str | None = None,
) -> dict[str, Any]:
    """The review line of ``--log-format text``, as it has always been (docs/operations.md)."""
    line: dict[str, Any] = {
        "time": stamp,
        "level": "info",
        "msg": "review",
        "endpoint": endpoint,
        "decision": decision,
        "status": reply.status,
        # Whole microseconds in milliseconds, as round(ms, 3) gives, for less.
        "latencyMs": int(seconds * 1_000_000 + 0.5) / 1000,
    }
    if path is not None:
        line["path"] = shown_path(path)
    if suppressed:
        line["suppressed"] = suppressed
    req, outcome = reply.request, reply.outcome
    if req is not None:  # item by item: update(**keywords) builds a dict first
        line["uid"] = req.uid
        line["operation"] = req.operation
        line["kind"] = req.kind
        line["namespace"] = req.namespace
        line["name"] = _name(reply)
        line["dryRun"] = req.dry_run
    if outcome is not None:
        line["changedBy"] = list(outcome.changed_by)
        line["deniedBy"] = list(outcome.denied_by) if outcome.violations else []
        if outcome.advisories:
            line["advisories"] = [
                {"plugin": v.plugin, "action": action, "message": v.message}
                for v, action in outcome.advisories
            ]
        if outcome.monitored:
            line["monitored"] = [
                {"plugin": plugin, "change": summary} for plugin, summary in outcome.monitored
            ]
        if outcome.excepted:
            line["exceptions"] = [{"exception": e, "plugin": p} for e, p in outcome.excepted]
        if outcome.expired:
            line["expiredExceptions"] = [{"exception": e, "plugin": p} for e, p in outcome.expired]
            line["level"] = "warning"
        if not outcome.allowed:
            line.update(code=outcome.code, reason=outcome.reason)
    else:
        line["error"] = reply.body.decode(errors="replace").strip()
    return line


def plugin_results(halves: Sequence[HalfRun]) -> list[dict[str, Any]]:
    """The ``plugins`` field: each half called, what it came to, how many patch operations."""
    return [
        {"name": h.plugin, "phase": h.phase, "outcome": h.outcome, "patchOps": h.ops}
        for h in halves
    ]


def json_review(
    stamp: str,
    endpoint: str,
    reply: Reply,
    seconds: float,
    decision: str,
    path: str | None,
    suppressed: int | None,
    traceparent: str | None = None,
) -> dict[str, Any]:
    """The review line of ``--log-format json`` (fields in docs/operations.md, "Logs and
    traces"); every client string bounded."""
    line: dict[str, Any] = {"time": stamp, "level": "info", "message": "review"}
    req, outcome = reply.request, reply.outcome
    if req is not None:
        line["uid"] = bounded(req.uid)
        line["operation"] = req.operation
        line["kind"] = {
            "group": bounded(req.kind_group),
            "version": bounded(req.version),
            "kind": bounded(req.kind),
        }
        line["namespace"] = bounded(req.namespace)
        line["name"] = bounded(_name(reply))
        line["dryRun"] = req.dry_run
    line["endpoint"] = endpoint
    if outcome is not None:
        line["plugins"] = plugin_results(outcome.halves)
    line["decision"] = decision
    line["allowed"] = outcome is not None and outcome.allowed
    line["code"] = outcome.code if outcome is not None else reply.status
    line["status"] = reply.status
    line["durationMs"] = int(seconds * 1_000_000 + 0.5) / 1000
    if outcome is not None:
        if not outcome.allowed:
            line["reason"] = bounded(outcome.reason)
            line["denial"] = bounded(outcome.message, MESSAGE_CAP)
        if outcome.advisories:
            line["advisories"] = [
                {"plugin": v.plugin, "action": action, "message": bounded(v.message, FIELD_CAP)}
                for v, action in outcome.advisories[:LIST_CAP]
            ]
            if len(outcome.advisories) > LIST_CAP:
                line["advisoriesLeftOut"] = len(outcome.advisories) - LIST_CAP
        if outcome.excepted:
            line["exceptions"] = [{"exception": e, "plugin": p} for e, p in outcome.excepted]
        if outcome.expired:
            line["expiredExceptions"] = [{"exception": e, "plugin": p} for e, p in outcome.expired]
            line["level"] = "warning"
    else:
        line["error"] = bounded(reply.body.decode(errors="replace").strip(), MESSAGE_CAP)
    if traceparent:
        # As received: the API server's trace and span of this call, so a line is found
        # from a trace (and a trace from a line) even when this server exports no spans.
        line["traceparent"] = bounded(traceparent)
    if path is not None:
        line["path"] = bounded(path)
    if suppressed:
        line["suppressed"] = suppressed
    return line


REVIEW_LINES = {"text": text_review, "json": json_review}


class JsonFormatter(logging.Formatter):
    """A log record as one JSON object: time, level, message, logger, pid (and a traceback).

    Why its own time: gunicorn's ``[2026-11-29 01:02:03 +0000]`` is not RFC 3339, and
    every line of a format must read the same way.
    """

    def __init__(self) -> None:
        super().__init__()
        self._stamp = Stamp()

    def format(self, record: logging.LogRecord) -> str:
        """The record's line, without its newline (the handler adds it)."""
        fields: dict[str, Any] = {
            "time": self._stamp(record.created),
            "level": _LEVELS.get(record.levelno, record.levelname.lower()),
            "message": bounded(record.getMessage(), MESSAGE_CAP),
            "logger": record.name,
            "pid": record.process,
        }
        if record.exc_info:
            fields["exception"] = bounded(self.formatException(record.exc_info), MESSAGE_CAP)
        return encode(fields)[:-1]


class JsonGunicornLogger(GunicornLogger):  # type: ignore[misc]
    """gunicorn's logger, writing JSON objects (installed by ``serve --log-format json``).

    Why a subclass: gunicorn builds its handlers in ``setup``, again on every reload, so
    the formatter is swapped there each time.
    """

    def setup(self, cfg: Any) -> None:
        """Set up as gunicorn does, then format every handler it made as JSON."""
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(JsonFormatter())


def configure(log_format: LogFormat) -> None:
    """Route the process's other loggers and Python warnings to JSON lines on stderr.

    Why the root logger: a library's logger (the certificate watch, the trace exporter)
    would otherwise fall to Python's last-resort handler, which writes bare text. Its
    level stays where it was (warnings and worse), as in text mode. ``text`` changes
    nothing.
    """
    if log_format != "json":
        return
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_placement_webhooks", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler._placement_webhooks = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    logging.captureWarnings(True)


def line(level: str, message: str) -> str:
    """One log line outside any logger (the CLI's start-up notes), without its newline."""
    fields = {
        "time": Stamp()(),
        "level": level,
        "message": bounded(message, MESSAGE_CAP),
        "logger": "placement-webhooks",
        "pid": os.getpid(),
    }
    return encode(fields)[:-1]
