"""The baselines: a bare Flask app and a bare WSGI function that allow with the uid echoed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson
from flask import Flask, Response, request


def _answer(body: bytes) -> bytes:
    uid = orjson.loads(body)["request"]["uid"]
    return orjson.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": uid, "allowed": True},
        }
    )


def bare_flask() -> Flask:
    """The least a Flask webhook can do: parse, echo the uid, allow."""
    app = Flask("bare")

    @app.post("/mutate")
    def mutate() -> Response:
        return Response(_answer(request.get_data()), content_type="application/json")

    @app.get("/healthz")
    def healthz() -> str:
        return "ok"

    return app


def bare_wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The least any WSGI webhook can do, with no framework at all."""
    if environ["PATH_INFO"] == "/healthz":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]
    length = int(environ.get("CONTENT_LENGTH") or 0)
    out = _answer(environ["wsgi.input"].read(length))
    start_response(
        "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))]
    )
    return [out]
