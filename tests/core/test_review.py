"""Parsing AdmissionReview v1 and building responses."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.reviews import pod, review
from webhooks.core.result import Outcome
from webhooks.core.review import (
    ReviewError,
    decode_patch,
    parse_review,
    response_bytes,
    response_dict,
)


def _with(change: dict[str, Any]) -> dict[str, Any]:
    body = review(pod())
    for dotted, value in change.items():
        node = body
        *parents, last = dotted.split(".")
        for part in parents:
            node = node[part]
        if value is KeyError:
            del node[last]
        else:
            node[last] = value
    return body


BAD = [
    ("not json", b"{nope", "body is not valid JSON"),
    ("a JSON array", b"[]", "body must be a JSON object"),
    (
        "the wrong apiVersion",
        _with({"apiVersion": "admission.k8s.io/v1beta1"}),
        "apiVersion must be",
    ),
    ("the wrong kind", _with({"kind": "Review"}), "kind must be 'AdmissionReview'"),
    ("no request", _with({"request": KeyError}), "request must be an object"),
    ("no uid", _with({"request.uid": KeyError}), "request.uid is required"),
    ("an empty uid", _with({"request.uid": ""}), "request.uid must not be empty"),
    ("a numeric uid", _with({"request.uid": 7}), "request.uid must be a string"),
    ("an unknown operation", _with({"request.operation": "PATCH"}), "request.operation must be"),
    ("no kind in the request", _with({"request.kind": KeyError}), "request.kind must be an object"),
    ("a kind with a numeric group", _with({"request.kind": {"group": 1}}), "request.kind.group"),
    ("a CREATE without an object", _with({"request.object": None}), "request.object is required"),
    ("an object that is a list", _with({"request.object": []}), "request.object must be an object"),
    (
        "an operation that is a list",
        _with({"request.operation": ["CREATE"]}),
        "request.operation must be one of .*, got list$",
    ),
    (
        "an operation that is an object",
        _with({"request.operation": {"CREATE": 1}}),
        "request.operation must be one of .*, got dict$",
    ),
    (
        "an apiVersion of a megabyte",
        _with({"apiVersion": "v" * 1_000_000}),
        r"got 'v{60}'\.\.\. \(1000000 characters\)$",
    ),
    (
        "a kind that is an integer too long to print",
        _with({"kind": 10**5000}),
        "kind must be 'AdmissionReview', got int$",
    ),
    (
        "a kind nested deeper than repr can print",
        b'{"apiVersion":"admission.k8s.io/v1","kind":' + b"[" * 1000 + b"]" * 1000 + b"}",
        "kind must be 'AdmissionReview', got list$",
    ),
]


@pytest.mark.parametrize(
    ("body", "reason"), [(b, r) for _, b, r in BAD], ids=[i for i, _, _ in BAD]
)
def test_a_malformed_review_is_refused_with_a_one_line_reason(body: Any, reason: str) -> None:
    try:
        raw = body if isinstance(body, bytes) else orjson.dumps(body)
    except TypeError:
        raw = body  # JSON cannot hold it, a parsed (YAML) document can: pass the dict
    with pytest.raises(ReviewError, match=reason) as info:
        parse_review(raw)
    assert "\n" not in str(info.value)
    assert len(str(info.value)) <= 200


def test_a_pod_review_is_parsed_into_the_request_model() -> None:
    body = review(pod(name="p", namespace="ns"), operation="UPDATE", old=pod(name="p"))
    req = parse_review(orjson.dumps(body))
    assert req.uid == body["request"]["uid"]
    assert (req.operation, req.kind, req.group_resource) == ("UPDATE", "Pod", ("", "pods"))
    assert (req.namespace, req.name, req.sub_resource) == ("ns", "p", "")
    assert req.object == body["request"]["object"]
    assert req.old_object is not None


def test_a_delete_without_an_object_is_accepted() -> None:
    req = parse_review(review(None, operation="DELETE", old=pod(), kind="Pod"))
    assert req.object is None


def test_the_response_echoes_uid_and_carries_a_patch_only_when_something_changed() -> None:
    ops = [{"op": "add", "path": "/spec/tolerations", "value": []}]
    changed = response_dict("abc", Outcome(patch=ops))
    assert changed["apiVersion"] == "admission.k8s.io/v1"
    assert changed["kind"] == "AdmissionReview"
    assert changed["response"]["uid"] == "abc"
    assert changed["response"]["patchType"] == "JSONPatch"
    assert decode_patch(changed) == ops
    unchanged = response_dict("abc", Outcome())
    assert unchanged["response"] == {"uid": "abc", "allowed": True}


def test_a_denial_carries_code_reason_and_message_and_no_patch() -> None:
    outcome = Outcome(allowed=False, code=403, reason="Forbidden", message="nope", patch=[{}])
    body = response_dict("u", outcome)["response"]
    assert body["allowed"] is False
    assert body["status"] == {"code": 403, "reason": "Forbidden", "message": "nope"}
    assert "patch" not in body


def test_warnings_and_audit_annotations_are_passed_through() -> None:
    outcome = Outcome(warnings=("w1",), audit_annotations={"k": "v"})
    body = response_dict("u", outcome)["response"]
    assert body["warnings"] == ["w1"]
    assert body["auditAnnotations"] == {"k": "v"}


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


UNENCODABLE: list[tuple[str, Any, str]] = [
    ("a value nested deeper than the encoder goes", _nested(300), "Recursion limit reached"),
    ("an integer beyond 64 bits", 2**70, "Integer exceeds 64-bit range"),
    ("a set, which YAML can produce", {"a"}, "Type is not JSON serializable: set"),
]


@pytest.mark.parametrize(
    ("value", "error"), [(v, e) for _, v, e in UNENCODABLE], ids=[i for i, _, _ in UNENCODABLE]
)
def test_a_patch_that_cannot_be_encoded_becomes_an_internal_error_denial(
    value: Any, error: str
) -> None:
    ops = [{"op": "add", "path": "/spec/tolerations", "value": [{"key": "k", "x": value}]}]
    body, sent = response_bytes("u", Outcome(patch=ops, changed_by=("p",)))
    answer = orjson.loads(body)["response"]
    assert answer["uid"] == "u" and answer["allowed"] is False and "patch" not in answer
    assert answer["status"]["code"] == 500 and answer["status"]["reason"] == "InternalError"
    assert error in answer["status"]["message"]
    assert (sent.allowed, sent.code, sent.patch, sent.changed_by) == (False, 500, [], ())


def test_an_encodable_outcome_is_sent_as_it_is() -> None:
    outcome = Outcome(patch=[{"op": "add", "path": "/a", "value": 1}])
    body, sent = response_bytes("u", outcome, indent=True)
    assert sent is outcome
    assert body.startswith(b"{\n  ")
