"""The AdmissionReview wire format: the only module that knows its keys.

Parsing turns request bytes into a frozen :class:`AdmissionRequest`; building turns a chain
:class:`~webhooks.core.result.Outcome` into response bytes. Keeping both here means a change
of wire shape touches one file, and everything else works on plain Python values.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, TypedDict

import orjson

from webhooks.core.result import Outcome
from webhooks.k8s.excerpt import SHOWN

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
OPERATIONS: frozenset[str] = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
_OPERATION_NAMES = ("CREATE", "UPDATE", "DELETE", "CONNECT")


class ReviewError(ValueError):
    """The webhook request itself is unusable, as opposed to a refused API operation.

    It names no status: the server answers it with HTTP 400, the ``review`` CLI with exit
    code 2 (:mod:`webhooks.core.admission` on the two error channels).
    """


class StatusWire(TypedDict, total=False):
    """``response.status`` on the wire (a metav1.Status subset)."""

    code: int
    reason: str
    message: str


class AdmissionRequest(NamedTuple):
    """One admission request, reduced to what plugins read; immutable.

    The object stays a plain dict (never a client model): plugins must see unknown fields and
    the request path must not pay for model conversion. A NamedTuple rather than a frozen
    dataclass because it is built for every review and costs a third as much to build.
    """

    uid: str
    operation: Operation
    group: str
    version: str
    kind: str
    resource: str
    sub_resource: str
    namespace: str
    name: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None = None
    dry_run: bool = False
    user: Mapping[str, Any] = MappingProxyType({})
    #: ``request.kind.group``: the group of the object's kind, which the chain compares with
    #: the resource's (a custom resource named like a built-in kind is another thing).
    kind_group: str = ""

    @property
    def group_resource(self) -> tuple[str, str]:
        """The (group, resource) pair plugins filter on; kinds can be aliased, resources not."""
        return (self.group, self.resource)


#: How much of an offending string a ReviewError's reason quotes (as every message quotes
#: input, :data:`~webhooks.k8s.excerpt.SHOWN`); why bounded: the API server logs the reason
#: verbatim, and a megabyte ``apiVersion`` must not become a megabyte log line.
SHOWN_CHARS = SHOWN
_SHOWN_INT_BITS = 128


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _got(value: Any) -> str:
    """An offending value for a one-line reason: a short quoted scalar, or its type name.

    Why not ``repr``: a container can be huge or nested past the recursion limit.
    """
    if isinstance(value, str):
        if len(value) > SHOWN_CHARS:
            return f"{value[:SHOWN_CHARS]!r}... ({len(value)} characters)"
        return repr(value)
    if value is None or isinstance(value, bool | float):
        return repr(value)
    if isinstance(value, int):
        # A parsed dict (not bytes) may hold an integer too long for str() to print at all.
        return repr(value) if value.bit_length() <= _SHOWN_INT_BITS else "int"
    return _type(value)


def _text(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if value is None:
        return ""
    if type(value) is not str:
        raise ReviewError(f"request.{key} must be a string, got {_type(value)}")
    return value


def _triple(request: dict[str, Any], key: str, last: str) -> tuple[str, str, str]:
    value = request.get(key)
    if type(value) is not dict:
        raise ReviewError(f"request.{key} must be an object with group, version and {last}")
    out = []
    for part in ("group", "version", last):
        item = value.get(part)
        if item is None:
            item = ""
        elif type(item) is not str:
            raise ReviewError(f"request.{key}.{part} must be a string, got {_type(item)}")
        out.append(item)
    return out[0], out[1], out[2]


def _request_of(body: bytes | str | dict[str, Any]) -> dict[str, Any]:
    """The ``request`` object of an AdmissionReview body whose envelope is well formed."""
    if isinstance(body, dict):
        review: Any = body
    else:
        try:
            review = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ReviewError(f"body is not valid JSON: {exc}") from None
    if type(review) is not dict:
        raise ReviewError("body must be a JSON object (an AdmissionReview)")
    if review.get("apiVersion") != API_VERSION:
        raise ReviewError(
            f"apiVersion must be {API_VERSION!r}, got {_got(review.get('apiVersion'))}"
        )
    if review.get("kind") != KIND:
        raise ReviewError(f"kind must be {KIND!r}, got {_got(review.get('kind'))}")
    request = review.get("request")
    if type(request) is not dict:
        raise ReviewError("request must be an object")
    return request


def parse_review(body: bytes | str | dict[str, Any]) -> AdmissionRequest:
    """Parse an ``admission.k8s.io/v1`` AdmissionReview into an :class:`AdmissionRequest`.

    Every shape problem raises :class:`ReviewError` with a one-line reason, because the
    server answers those with HTTP 400 and the API server logs that line verbatim.
    """
    request = _request_of(body)
    uid = request.get("uid")
    if uid is None:
        raise ReviewError("request.uid is required")
    if type(uid) is not str:
        raise ReviewError(f"request.uid must be a string, got {_type(uid)}")
    if not uid:
        raise ReviewError("request.uid must not be empty")
    operation = request.get("operation")
    # A tuple, not the frozenset: a list or an object is unhashable and would make `in` raise.
    if operation not in _OPERATION_NAMES:
        raise ReviewError(
            "request.operation must be one of CREATE, UPDATE, DELETE, CONNECT, "
            f"got {_got(operation)}"
        )
    group, version, kind = _triple(request, "kind", "kind")
    rgroup, _, resource = _triple(request, "resource", "resource")
    obj = request.get("object")
    if obj is not None and type(obj) is not dict:
        raise ReviewError(f"request.object must be an object, got {_type(obj)}")
    if obj is None and operation in ("CREATE", "UPDATE"):
        raise ReviewError(f"request.object is required for {operation}")
    old = request.get("oldObject")
    if old is not None and type(old) is not dict:
        raise ReviewError(f"request.oldObject must be an object, got {_type(old)}")
    user = request.get("userInfo")
    return AdmissionRequest(
        uid=uid,
        operation=operation,
        group=rgroup or group,
        version=version,
        kind=kind,
        resource=resource,
        sub_resource=_text(request, "subResource"),
        namespace=_text(request, "namespace"),
        name=_text(request, "name"),
        object=obj,
        old_object=old,
        dry_run=request.get("dryRun") is True,
        user=user if type(user) is dict else {},
        kind_group=group,
    )


def response_dict(uid: str, outcome: Outcome) -> dict[str, Any]:
    """Build the response AdmissionReview as a dict for an outcome of the chain.

    ``patch``/``patchType`` appear only when there are operations, because the API server
    treats an empty patch as a mutation for audit and reinvocation purposes.
    """
    response: dict[str, Any] = {"uid": uid, "allowed": outcome.allowed}
    if outcome.allowed:
        if outcome.patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(orjson.dumps(outcome.patch)).decode("ascii")
    else:
        status: StatusWire = {
            "code": outcome.code,
            "reason": outcome.reason,
            "message": outcome.message,
        }
        response["status"] = status
    if outcome.warnings:
        response["warnings"] = list(outcome.warnings)
    if outcome.audit_annotations:
        response["auditAnnotations"] = dict(outcome.audit_annotations)
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


#: Why an answer can fail to encode at all: orjson decodes JSON nested 1024 levels deep but
#: encodes only 254, so a patch that copies a deep user value cannot be written back (and a
#: cluster object read from YAML may hold an integer beyond 64 bits).
UNENCODABLE = "the admission response cannot be encoded as JSON ({error}); nothing was changed"


def response_bytes(uid: str, outcome: Outcome, *, indent: bool = False) -> tuple[bytes, Outcome]:
    """Serialise :func:`response_dict`, returning the bytes and the outcome they carry.

    Why the outcome too: when ``outcome`` cannot be encoded the answer is an InternalError
    denial saying so, never an exception (which would be an HTTP 500 the API server cannot
    show to the user), and callers must log and count the decision actually sent. orjson
    because this is the hot path of every review.
    """
    option = orjson.OPT_INDENT_2 if indent else 0
    try:
        return orjson.dumps(response_dict(uid, outcome), option=option), outcome
    except orjson.JSONEncodeError as exc:
        failed = Outcome(
            allowed=False,
            obj=outcome.obj,
            code=500,
            reason="InternalError",
            message=UNENCODABLE.format(error=exc),
        )
        return orjson.dumps(response_dict(uid, failed), option=option), failed


def request_dict(request: AdmissionRequest) -> dict[str, Any]:
    """The AdmissionReview the API server sends for ``request``: :func:`parse_review` reversed.

    Why here: a client of the webhooks (the install probe, ``helm test``) must speak the wire
    exactly as the API server does, and the wire keys live in this module only.
    """
    kind_group = request.kind_group or request.group
    kind = {"group": kind_group, "version": request.version, "kind": request.kind}
    resource = {"group": request.group, "version": request.version, "resource": request.resource}
    body: dict[str, Any] = {
        "uid": request.uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": request.name,
        "namespace": request.namespace,
        "operation": request.operation,
        "userInfo": dict(request.user),
        "object": request.object,
        "oldObject": request.old_object,
        "dryRun": request.dry_run,
    }
    if request.sub_resource:
        body["subResource"] = request.sub_resource
    return {"apiVersion": API_VERSION, "kind": KIND, "request": body}


def read_response(body: bytes, uid: str) -> dict[str, Any]:
    """The ``response`` of an answer the API server would accept for request ``uid``.

    The API server refuses an answer whose apiVersion or kind differ from the request's, that
    has no response, whose uid is another request's, or whose patch has no JSONPatch type;
    :class:`ReviewError` says which. Why a function: the probe proves a round trip by
    checking exactly that.
    """
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ReviewError(f"the answer is not JSON: {exc}") from None
    if type(review) is not dict:
        raise ReviewError("the answer is not a JSON object")
    if review.get("apiVersion") != API_VERSION or review.get("kind") != KIND:
        raise ReviewError(
            f"the answer is not an {API_VERSION} {KIND}: "
            f"{_got(review.get('apiVersion'))} {_got(review.get('kind'))}"
        )
    response = review.get("response")
    if type(response) is not dict:
        raise ReviewError("the answer has no response")
    if response.get("uid") != uid:
        raise ReviewError(f"the answer is for uid {_got(response.get('uid'))}, not {uid!r}")
    if type(response.get("allowed")) is not bool:
        raise ReviewError("the answer does not say whether the request is allowed")
    if response.get("patch") and response.get("patchType") != "JSONPatch":
        raise ReviewError("the answer carries a patch without patchType JSONPatch")
    return response


def decode_patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the JSON Patch carried by a response AdmissionReview dict (empty when none).

    Why: the CLI and tests read patches back; keeping the base64 detail here keeps it in one
    place with the code that writes it.
    """
    body = response.get("response", {})
    patch = body.get("patch")
    if not patch:
        return []
    ops: list[dict[str, Any]] = orjson.loads(base64.b64decode(patch))
    return ops
