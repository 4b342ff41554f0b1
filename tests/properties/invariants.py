"""The invariants every answer keeps, whatever the body: checks shared by core and HTTP tests.

1. Never an unhandled exception (the callers simply call the code under test).
2. A well-formed AdmissionReview response, or HTTP 400/413 with a one-line plain-text reason.
3. A returned patch applies with ``jsonpatch`` and gives the chain's final object.
4. The chain on its own output yields no patch (a second, reinvoked, run changes nothing).
5. The input objects, and the cluster objects consulted, are never changed.
6. Mutated objects still pass strict schema validation when the input did.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import functools
import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import jsonpatch
import jsonschema
import orjson
from hypothesis import event
from kubernetes_validate import utils as kv
from referencing import Registry, Resource

from webhooks.cluster.files import StaticCluster
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.core.plugin import Phase
from webhooks.core.result import Outcome
from webhooks.core.review import API_VERSION, KIND, parse_review
from webhooks.plugins import REGISTRY
from webhooks.server.replies import Reply, review_reply

#: The Kubernetes version whose strict OpenAPI schemas mutated objects must still satisfy.
KUBERNETES_VERSION = "1.35"
#: A one-line reason longer than this is no longer something an operator can read in a log.
MAX_REASON = 1024
JSON_PATCH_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})

#: Every plugin the registry has, enabled (some are off by default).
ALL_ENABLED = load_config(
    {"plugins": {name: {"enabled": True} for name in REGISTRY.names}}, REGISTRY
)

#: Every way the core is called: one phase or both (as ``review`` does), the whole chain or
#: one plugin (as ``/mutate/<plugin>`` and ``--plugin`` do).
TARGETS: tuple[tuple[tuple[Phase, ...], str | None], ...] = tuple(
    (phases, only)
    for phases in (("mutate",), ("validate",), ("mutate", "validate"))
    for only in (None, *REGISTRY.names)
    if only is None or any(REGISTRY.get(only).half(p) is not None for p in phases)
)


@contextlib.contextmanager
def deep_compare() -> Iterator[None]:
    """Room to compare values nested up to orjson's decode limit (1024 levels).

    Only the checks run inside; the code under test keeps the normal limit, so a recursion
    problem of its own is still found.
    """
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def sent_review(body: bytes) -> dict[str, Any] | None:
    """The body as a dict, a fresh copy each call; ``None`` when it is not a JSON object."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def check_reason(status: int, content_type: str, body: bytes) -> None:
    """An error answer: HTTP 400 or 413, plain text, one short non-empty line."""
    assert status in (400, 413), (status, body[:200])
    assert content_type.startswith("text/plain"), content_type
    text = body.decode("utf-8")
    assert text.endswith("\n"), text
    line = text[:-1]
    assert line.strip(), "empty reason"
    assert not any(c in line for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), line
    assert len(line) <= MAX_REASON, f"{len(line)} characters: {line[:200]}..."


def decode_patch(response: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The JSON Patch a response carries (``None`` when none), checked for shape."""
    has_patch, has_type = "patch" in response, "patchType" in response
    assert has_patch == has_type, f"patch without patchType or the reverse: {response}"
    if not has_patch:
        return None
    assert response["patchType"] == "JSONPatch"
    assert response["allowed"] is True, "a denial carries a patch"
    try:
        ops = orjson.loads(base64.b64decode(response["patch"], validate=True))
    except (binascii.Error, orjson.JSONDecodeError) as exc:  # pragma: no cover - a failure
        raise AssertionError(f"patch is not base64 JSON: {exc}") from None
    assert isinstance(ops, list) and ops, f"patch must be a non-empty list: {ops!r}"
    for op in ops:
        assert isinstance(op, dict) and op.get("op") in JSON_PATCH_OPS, op
        assert isinstance(op.get("path"), str), op
    return ops


def check_review(sent: dict[str, Any], answer: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A well-formed response AdmissionReview for ``sent``; returns its patch, if any."""
    assert set(answer) == {"apiVersion", "kind", "response"}, sorted(answer)
    assert answer["apiVersion"] == API_VERSION and answer["kind"] == KIND
    response = answer["response"]
    assert isinstance(response, dict)
    assert response["uid"] == sent["request"]["uid"]
    assert type(response["allowed"]) is bool
    if not response["allowed"]:
        status = response.get("status")
        assert isinstance(status, dict), response
        assert type(status.get("code")) is int and status["code"] >= 400, status
        assert isinstance(status.get("message"), str) and status["message"], status
        assert isinstance(status.get("reason"), str), status
    warnings = response.get("warnings", [])
    assert isinstance(warnings, list) and all(isinstance(w, str) for w in warnings)
    audit = response.get("auditAnnotations", {})
    assert isinstance(audit, dict)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in audit.items())
    return decode_patch(response)


def apply_patch(obj: Any, patch: list[dict[str, Any]]) -> Any:
    """``patch`` applied with the reference implementation to ``obj`` (which it consumes)."""
    return jsonpatch.apply_patch(obj, patch, in_place=True)


def check_reply(body: bytes, reply: Reply) -> list[dict[str, Any]] | None:
    """Invariants 2 and 3 for a core reply to ``body``; returns the patch, if any."""
    if reply.status != 200:
        check_reason(reply.status, reply.content_type, reply.body)
        return None
    assert reply.content_type == "application/json"
    sent = sent_review(body)
    assert sent is not None, "a body that is not a JSON object was answered with 200"
    assert reply.outcome is not None
    with deep_compare():
        patch = check_review(sent, orjson.loads(reply.body))
        obj = sent["request"].get("object")
        if patch is not None:
            assert apply_patch(obj, patch) == reply.outcome.obj, "patch result != chain result"
        elif reply.outcome.allowed and reply.outcome.obj is not None:
            assert reply.outcome.obj == obj, "object changed without a patch"
    return patch


def reinvoke(body: bytes, obj: Any) -> bytes:
    """``body`` with the request's object replaced by ``obj``: the reinvoked review."""
    sent = sent_review(body)
    assert sent is not None
    sent["request"]["object"] = obj
    with deep_compare():  # the stdlib encoder nests as deep as the decoder allowed
        return json.dumps(sent).encode()


def check_everywhere(
    admission: Admission, body: bytes, *, valid_shape: bool, schema: bool = False
) -> None:
    """Run ``body`` through every target of :data:`TARGETS` and check every invariant.

    ``valid_shape`` says the body came from the realistic strategies, where an internal
    error is a plugin bug; ``schema`` adds the strict schema check of mutated objects.
    """
    schema_ok = schema and _input_passes_schema(body)
    cluster_before = _cluster_objects(admission)
    for phases, only in TARGETS:
        where = f"{'+'.join(phases)} {only or 'chain'}"
        reply = review_reply(admission, body, phases, only)
        patch = check_reply(body, reply)
        check_unchanged(admission, body, phases, only)
        if reply.outcome is None:
            event(f"HTTP {reply.status}")
            continue
        outcome = reply.outcome
        event(_label(outcome))
        if valid_shape:
            assert outcome.code != 500, f"{where}: {outcome.message}"
        if patch is None:
            continue
        again = review_reply(admission, reinvoke(body, outcome.obj), phases, only)
        assert again.outcome is not None, f"{where}: reinvocation got {again.body!r}"
        assert again.outcome.allowed, f"{where}: reinvocation denied: {again.outcome.message}"
        assert not again.outcome.patch, f"{where}: not idempotent: {again.outcome.patch}"
        if schema_ok:
            errors = schema_errors(outcome.obj)
            assert not errors, f"{where}: mutated object fails the schema: {errors}"
    assert _cluster_objects(admission) == cluster_before, "a cluster object was changed"


def _cluster_objects(admission: Admission) -> Any:
    """A deep copy of the RuntimeClasses and Namespaces the admission consults."""
    cluster = admission.cluster
    if not isinstance(cluster, StaticCluster):
        return None
    return copy.deepcopy((cluster.runtime_classes, cluster.namespaces))


def _label(outcome: Outcome) -> str:
    if outcome.code == 500:
        return f"internal error: {outcome.message[:60]}"
    if not outcome.allowed:
        return f"denied {outcome.code}"
    return "patched" if outcome.patch else "allowed unchanged"


def check_unchanged(
    admission: Admission, body: bytes, phases: Sequence[Phase], only: str | None
) -> None:
    """Invariant 5: running the chain over a parsed request leaves its objects as they were."""
    sent = sent_review(body)
    try:
        request = parse_review(body)
    except ValueError:
        return
    assert sent is not None
    admission.decide(request, phases, only)
    with deep_compare():
        assert request.object == sent["request"].get("object"), "object changed in place"
        assert request.old_object == sent["request"].get("oldObject"), "oldObject changed"


# --- strict schema validation -------------------------------------------------------------------


@functools.cache
def _definitions() -> Registry:
    defs = kv.schema_contents(_schema_file("_definitions.json"), KUBERNETES_VERSION)
    return Resource.from_contents(defs) @ Registry()


def _schema_file(name: str) -> str:
    version = next(v for v in reversed(kv.all_versions()) if v.startswith(KUBERNETES_VERSION))
    return f"kubernetes-json-schema/v{version}-local-strict/{name}"


@functools.cache
def validator(kind: str, api_version: str) -> jsonschema.Draft202012Validator:
    """The strict validator for one kind, built once per session (schemas are 1.4 MB)."""
    group_version = api_version.split(".", 1)[0].replace("/", "-")  # apps/v1 → apps-v1
    schema = kv.schema_contents(
        _schema_file(f"{kind.lower()}-{group_version}.json"), KUBERNETES_VERSION
    )
    registry = Resource.from_contents(schema) @ _definitions()
    return jsonschema.Draft202012Validator(schema, registry=registry)


def schema_errors(obj: dict[str, Any]) -> list[str]:
    """Strict schema errors of ``obj`` for :data:`KUBERNETES_VERSION` (empty when valid)."""
    check = validator(obj["kind"], obj["apiVersion"])
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in check.iter_errors(obj)]


def _input_passes_schema(body: bytes) -> bool:
    sent = sent_review(body)
    obj = sent["request"].get("object") if sent else None
    return isinstance(obj, dict) and not schema_errors(obj)
