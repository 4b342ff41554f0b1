"""Property tests over HTTP: the Flask app through its test client, bytes in and out.

The routes add only transport concerns (body size, content type) to the core, so every
answer is either a well-formed AdmissionReview whose patch gives what the core decided, or
an HTTP 400/413 with a one-line plain-text reason. Below them, the worker's request reader
turns any bytes, cut anywhere, into events (never an exception), and a request cut
anywhere into the request sent whole.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient
from hypothesis import example, given
from hypothesis import strategies as st

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
from webhooks.server.reader import (
    CONTINUE,
    NEED_DATA,
    PAUSED,
    Event,
    HeadReceived,
    Refusal,
    Request,
    RequestReader,
)

SIGNALS = (CONTINUE, PAUSED)

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


# --------------------------------------------------------------------------- the request reader

#: Pieces a head is made of: real header lines, and the bytes that break parsers.
HEAD_PIECES = [
    b"GET /healthz HTTP/1.1",
    b"POST /mutate HTTP/1.1",
    b"Host: localhost",
    b"Content-Length: 3",
    b"Content-Length: 4",
    b"Transfer-Encoding: chunked",
    b"Expect: 100-continue",
    b"Connection: close",
    b"X: a" + b" " * 300 + b"b",
    b"X:" + b" \t" * 100,
    b"  folded",
    b"NoColon",
    b"X: \x01",
    b"",
    b"\r",
    b"\n",
]

raw_streams = st.one_of(
    st.binary(max_size=600),
    st.lists(st.sampled_from(HEAD_PIECES), max_size=8).map(
        lambda lines: b"\r\n".join(lines) + b"\r\n\r\nabcd"
    ),
)


def _pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def _events(pieces: list[bytes]) -> list[Event]:
    reader = RequestReader()
    events: list[Event] = []
    for piece in pieces:
        reader.receive_data(piece)
        while (event := reader.next_event()) is not NEED_DATA:
            events.append(event)
            if event is PAUSED:
                if not isinstance(events[-2], Request) or not events[-2].intact:
                    return events
                reader.start_next_cycle()
    return events


@given(raw_streams, st.lists(st.integers(0, 700), max_size=6))
def test_any_bytes_in_any_pieces_give_events_and_never_an_exception(
    data: bytes, cuts: list[int]
) -> None:
    events = _events(_pieces(data, cuts))
    for before, after in itertools.pairwise(events):
        if isinstance(before, Refusal):
            assert after is PAUSED, "nothing follows a refusal"
    assert all(isinstance(e, HeadReceived | Request | Refusal) or e in SIGNALS for e in events)


@given(
    st.sampled_from(["/mutate", "/validate/runtime-class", "/healthz"]),
    st.binary(max_size=300),
    st.lists(st.integers(0, 700), max_size=6),
)
def test_a_request_cut_anywhere_is_the_request_sent_whole(
    path: str, body: bytes, cuts: list[int]
) -> None:
    data = (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    ) * 2
    whole = [e for e in _events([data]) if isinstance(e, Request)]
    pieces = [e for e in _events(_pieces(data, cuts)) if isinstance(e, Request)]
    assert [(r.head.path, r.body) for r in pieces] == [(path, body), (path, body)]
    assert [(r.head, r.body, r.intact) for r in pieces] == [
        (r.head, r.body, r.intact) for r in whole
    ]
