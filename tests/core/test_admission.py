"""The core's entry point has two error channels and names no HTTP status; the server maps them."""

from __future__ import annotations

import json

import orjson
import pytest

from tests.reviews import pod, review
from webhooks.core.admission import Admission, Answer, UnknownPlugin
from webhooks.core.config import load_config
from webhooks.core.review import ReviewError
from webhooks.plugins import REGISTRY
from webhooks.server.replies import review_reply

ADMISSION = Admission(REGISTRY, load_config(None, REGISTRY))
BODY = json.dumps(review(pod())).encode()


def test_a_usable_review_is_answered_with_the_response_and_the_decision_it_carries() -> None:
    answer = ADMISSION.handle(BODY, ("mutate",))
    assert isinstance(answer, Answer)
    assert orjson.loads(answer.body)["response"]["uid"] == answer.request.uid
    assert answer.outcome.allowed


def test_an_unusable_review_is_an_exception_not_a_status() -> None:
    with pytest.raises(ReviewError, match="body is not valid JSON"):
        ADMISSION.handle(b"{", ("mutate",))


def test_an_unknown_plugin_is_an_exception_raised_before_the_body_is_read() -> None:
    with pytest.raises(UnknownPlugin, match="unknown plugin 'nope'"):
        ADMISSION.handle(b"{", ("mutate",), "nope")


@pytest.mark.parametrize(
    ("body", "only", "status", "text"),
    [
        (BODY, None, 200, None),
        (b"{", None, 400, "body is not valid JSON"),
        (BODY, "nope", 404, "unknown plugin 'nope'"),
    ],
    ids=["an answer is 200", "an unusable review is 400", "an unknown plugin is 404"],
)
def test_the_server_alone_maps_the_channels_to_http(
    body: bytes, only: str | None, status: int, text: str | None
) -> None:
    reply = review_reply(ADMISSION, body, ("mutate",), only)
    assert reply.status == status
    if text is not None:
        assert reply.content_type.startswith("text/plain")
        assert reply.body.decode().startswith(text) and reply.body.endswith(b"\n")
