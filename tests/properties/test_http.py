"""Property tests over HTTP: the Flask app through its test client, bytes in and out.

The routes add only transport concerns (body size, content type) to the core, so every
answer is either a well-formed AdmissionReview whose patch gives what the core decided, or
an HTTP 400/413 with a one-line plain-text reason.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient
from hypothesis import example, given

from tests.properties.hostile import hostile_bodies, raw_bytes
from tests.properties.invariants import (
    ALL_ENABLED,
    apply_patch,
    check_reason,
    check_review,
    deep_compare,
    sent_review,
)
from tests.properties.strategies import SAMPLE_CLUSTER, reviews
from webhooks.core.admission import Admission
from webhooks.core.plugin import Phase
from webhooks.plugins import REGISTRY
from webhooks.server.app import MAX_BODY, ServerState, create_app

ADMISSION = Admission(REGISTRY, ALL_ENABLED, SAMPLE_CLUSTER)

#: Every admission route: the two chains and each plugin's halves.
ROUTES: list[tuple[str, Phase, str | None]] = [
    ("/mutate", "mutate", None),
    ("/validate", "validate", None),
    *(
        (f"/{phase}/{plugin.name}", phase, plugin.name)
        for plugin in REGISTRY
        for phase in ("mutate", "validate")
        if plugin.half(phase) is not None  # type: ignore[arg-type]
    ),
]


@pytest.fixture(scope="module")
def client() -> FlaskClient:
    app = create_app(ServerState(ADMISSION))
    app.testing = True  # an unhandled exception propagates instead of becoming a 500
    return app.test_client()


def _check_routes(client: FlaskClient, body: bytes) -> None:
    for path, phase, plugin in ROUTES:
        resp = client.post(path, data=body, content_type="application/json")
        if resp.status_code != 200:
            check_reason(resp.status_code, resp.content_type, resp.data)
            continue
        assert resp.content_type == "application/json", resp.content_type
        sent = sent_review(body)
        assert sent is not None, f"{path}: a body that is not a JSON object got 200"
        decided = ADMISSION.handle(body, (phase,), plugin).outcome
        assert decided is not None
        with deep_compare():
            patch = check_review(sent, orjson.loads(resp.data))
            if patch is not None:
                result = apply_patch(sent["request"].get("object"), patch)
                assert result == decided.obj, f"{path}: patch result != chain result"


@given(reviews())
def test_realistic_reviews_get_well_formed_answers_whose_patch_applies(
    client: FlaskClient, review: dict[str, Any]
) -> None:
    _check_routes(client, orjson.dumps(review))


@given(hostile_bodies | raw_bytes)
@example(b" " * (MAX_BODY + 1))  # one byte over the cap: 413
@example(b" " * (MAX_BODY - 2) + b"{}")  # exactly the cap: read, and refused as no review
def test_hostile_bodies_get_a_well_formed_review_or_a_one_line_400_or_413(
    client: FlaskClient, body: bytes
) -> None:
    _check_routes(client, body)
