"""Hostile strategies: bodies no well-behaved API server sends, which must still never hurt.

Random JSON, raw bytes, and realistic reviews with some node anywhere replaced by a value
of the wrong type (null, a number, a string, a list, a deeply nested object, a huge array),
deleted, or joined by an unknown field; wrong kinds and apiVersions at both levels.

JSON nests deeper than orjson will *encode* (254 levels) long before it nests deeper than
it will *decode* (1024), so nesting past the first bound is spliced into the encoded bytes
at a marker string instead of being built as Python values.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from hypothesis import strategies as st

from tests.properties.strategies import KINDS, ShownCluster, cluster_objects, clusters, reviews
from webhooks.cluster.files import StaticCluster

#: orjson refuses to encode at this depth; deeper values are spliced into the bytes.
ENCODE_DEPTH = 254
#: orjson refuses to decode past this depth: such bodies must get a 400.
DECODE_DEPTH = 1024

#: Deeper values are spliced, since their place in the review adds its own depth.
_BUILT_DEPTH = 64
#: The largest entry the "repeat" change multiplies.
_REPEATED_BYTES = 512
_MARK = re.compile(rb'"\\u0000deep:(\d+):(list|dict)\\u0000"')

#: Field names the plugins and the review parser read, so random objects reach their code.
FIELD_NAMES = (
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "generateName",
    "namespace",
    "ownerReferences",
    "controller",
    "spec",
    "template",
    "jobTemplate",
    "containers",
    "initContainers",
    "resources",
    "requests",
    "limits",
    "tolerations",
    "key",
    "operator",
    "value",
    "effect",
    "tolerationSeconds",
    "taints",
    "nodeSelector",
    "affinity",
    "podAntiAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
    "topologyKey",
    "runtimeClassName",
    "overhead",
    "hostNetwork",
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=16)
    | st.sampled_from(["", "Exists", "NoExecute", "nvidia.com/gpu", "sandbox", "Pod", "\u2028"])
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(FIELD_NAMES) | st.text(max_size=8)
    return st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4)


#: Any JSON value, keyed with the names plugins look for.
json_values = st.recursive(scalars, _containers, max_leaves=24)


def deep(depth: int, shape: str) -> Any:
    """A value nested ``depth`` levels deep: a marker past what orjson can encode."""
    if depth > _BUILT_DEPTH:
        return f"\x00deep:{depth}:{shape}\x00"
    value: Any = "bottom"
    for _ in range(depth):
        value = [value] if shape == "list" else {"spec": value}
    return value


deep_values = st.builds(
    deep,
    st.sampled_from([8, 64, 200, ENCODE_DEPTH, 600, DECODE_DEPTH - 40, DECODE_DEPTH + 1]),
    st.sampled_from(["list", "dict"]),
)

huge_arrays = st.builds(
    lambda n, item: [item] * n,
    st.integers(1_000, 20_000),
    st.sampled_from([0, None, "x", {}, {"key": "a", "operator": "Exists"}, []]),
)

huge_strings = st.builds(lambda n, c: c * n, st.integers(10_000, 300_000), st.sampled_from("x/é\n"))

unicode_text = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=24
)

hostile_values = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    unicode_text,
    st.lists(scalars, max_size=3),
    json_values,
    deep_values,
    huge_arrays,
    huge_strings,
)

#: Values for the fields that say what a review or an object is.
WRONG_API_VERSIONS = ("admission.k8s.io/v1beta1", "admission.k8s.io/v2", "v1", "", "apps/v1")
WRONG_REVIEW_KINDS = ("AdmissionReviewList", "Pod", "admissionreview", "")
TARGETED: tuple[tuple[tuple[str, ...], st.SearchStrategy[Any]], ...] = (
    (("apiVersion",), st.sampled_from(WRONG_API_VERSIONS)),
    (("kind",), st.sampled_from(WRONG_REVIEW_KINDS)),
    (("request", "object", "kind"), st.sampled_from([*KINDS, "ConfigMap", "pod", ""])),
    (("request", "object", "apiVersion"), st.sampled_from(["v1", "apps/v1", "v2", "batch/v1"])),
    (("request", "kind", "kind"), st.sampled_from([*KINDS, "ConfigMap"])),
    (("request", "kind", "group"), st.sampled_from(["", "apps", "batch", "example.com"])),
    (("request", "kind", "version"), st.sampled_from(["v1", "v1beta1", "v2"])),
    (("request", "resource", "resource"), st.sampled_from(["pods", "nodes", "daemonsets", "x"])),
    (("request", "resource", "group"), st.sampled_from(["", "apps", "batch", "core"])),
    (("request", "operation"), st.sampled_from(["CREATE", "create", "PATCH", ""])),
    (("request", "subResource"), st.sampled_from(["", "status", "binding"])),
    (("request", "uid"), st.sampled_from(["", " ", "\u2028", "x" * 300])),
)


def _pick(draw: st.DrawFn, items: list[Any]) -> Any:
    # An index, not sampled_from: a huge list would make the strategy's repr huge too.
    return items[draw(st.integers(0, len(items) - 1))]


def _children(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return list(node)
    if isinstance(node, list):
        return list(range(len(node)))
    return []


@st.composite
def _container_path(draw: st.DrawFn, root: Any) -> list[Any]:
    """A path to some dict or list in ``root``: a walk that may stop at any level.

    Stopping early a quarter of the time keeps envelope fields as likely as deep ones.
    """
    path: list[Any] = []
    node = root
    while True:
        inner = [k for k in _children(node) if isinstance(node[k], dict | list)]
        if not inner or draw(st.integers(0, 3)) == 0:
            return path
        key = _pick(draw, inner)
        path.append(key)
        node = node[key]


def _at(root: Any, path: list[Any]) -> Any:
    for key in path:
        root = root[key]
    return root


@st.composite
def _mutate(draw: st.DrawFn, root: dict[str, Any]) -> None:
    """Apply one hostile change to ``root`` in place."""
    action = draw(st.sampled_from(["replace"] * 4 + ["delete", "extra", "targeted", "repeat"]))
    if action == "targeted":
        path, values = draw(st.sampled_from(TARGETED))
        parent = _at_dict(root, path[:-1])
        if parent is not None:
            parent[path[-1]] = fresh(draw(values | hostile_values))
        return
    # Mostly inside the object: the envelope has few fields and most changes there are a 400.
    start: list[Any] = []
    request = root.get("request")
    if isinstance(request, dict) and draw(st.integers(0, 3)) > 0:
        names = [k for k in ("object", "oldObject") if isinstance(request.get(k), dict)]
        start = ["request", _pick(draw, names)] if names else []
    parent = _at(root, start + draw(_container_path(_at(root, start))))
    keys = _children(parent)
    if action == "extra" and isinstance(parent, dict):
        parent[draw(st.sampled_from(FIELD_NAMES) | unicode_text)] = fresh(draw(hostile_values))
    elif action == "repeat" and isinstance(parent, list) and parent:
        # Repeating a small entry makes a huge array; repeating a huge one, a huge body.
        if len(orjson.dumps(parent[0])) <= _REPEATED_BYTES:
            parent.extend([parent[0]] * draw(st.integers(1, 2_000)))
    elif not keys:
        return
    elif action == "delete":
        del parent[_pick(draw, keys)]
    else:
        # A copy: hostile values may share vocabulary objects that later changes would edit.
        parent[_pick(draw, keys)] = fresh(draw(hostile_values))


def _at_dict(root: Any, path: tuple[str, ...]) -> dict[str, Any] | None:
    for key in path:
        root = root.get(key) if isinstance(root, dict) else None
    return root if isinstance(root, dict) else None


def encode(value: Any) -> bytes:
    """JSON bytes for ``value``, splicing in the nesting that orjson cannot encode."""

    def splice(match: re.Match[bytes]) -> bytes:
        depth = int(match.group(1))
        opened, closed = (b"[", b"]") if match.group(2) == b"list" else (b'{"a":', b"}")
        return opened * depth + b"0" + closed * depth

    return _MARK.sub(splice, orjson.dumps(value))


def fresh(value: Any) -> Any:
    """An independent copy of a JSON value (cheap, and never shares vocabulary objects)."""
    return orjson.loads(orjson.dumps(value))


@st.composite
def mutated_reviews(draw: st.DrawFn) -> bytes:
    """A realistic review with one to three hostile changes, as bytes."""
    root = fresh(draw(reviews()))
    for _ in range(draw(st.integers(1, 3))):
        draw(_mutate(root))
    return encode(root)


@st.composite
def random_envelopes(draw: st.DrawFn) -> bytes:
    """A correct review envelope around random JSON in ``request`` or in ``request.object``."""
    uid = draw(st.text(min_size=1, max_size=8))
    if draw(st.booleans()):
        request: Any = draw(json_values)
    else:
        group, resource, kind = draw(
            st.sampled_from(
                [("", "pods", "Pod"), ("apps", "daemonsets", "DaemonSet"), ("", "nodes", "Node")]
            )
        )
        request = {
            "uid": uid,
            "operation": draw(st.sampled_from(["CREATE", "UPDATE"])),
            "kind": {"group": group, "version": "v1", "kind": kind},
            "resource": {"group": group, "version": "v1", "resource": resource},
            "object": draw(st.dictionaries(st.sampled_from(FIELD_NAMES), json_values)),
            "oldObject": draw(
                st.none() | st.dictionaries(st.sampled_from(FIELD_NAMES), json_values)
            ),
        }
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return encode(body)


def _truncations(body: bytes) -> st.SearchStrategy[bytes]:
    return st.integers(0, max(len(body) - 1, 0)).map(lambda n: body[:n])


raw_bytes = st.one_of(
    st.binary(max_size=256),
    json_values.map(encode),
    st.sampled_from(
        [
            b"",
            b"null",
            b"[]",
            b"{}",
            b"NaN",
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": 1e400}',
            b'\xef\xbb\xbf{"apiVersion":"admission.k8s.io/v1"}',
            '{"kind":"AdmissionReview"}'.encode("utf-16"),
            b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":"\\ud800"}',
            b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"\xff"}}',
            b"[" * (DECODE_DEPTH + 1) + b"]" * (DECODE_DEPTH + 1),
            b"{" * 10,
        ]
    ),
    reviews().map(orjson.dumps).flatmap(_truncations),
    reviews().map(lambda r: orjson.dumps(r) + b" trailing"),
)

#: Hostile bodies that still look like reviews: mutated ones most often, since they get
#: furthest into the plugins (bytes that are no review at all are tested on their own).
hostile_bodies = st.one_of(mutated_reviews(), mutated_reviews(), random_envelopes())


@st.composite
def hostile_clusters(draw: st.DrawFn) -> StaticCluster:
    """Cluster objects (as ``--objects`` files can hold them) with hostile changes."""
    objects = fresh(draw(cluster_objects()))
    for obj in objects:
        for _ in range(draw(st.integers(0, 2))):
            draw(_mutate(obj))
    # A damaged object may have lost its name, which only drops it from the cluster.
    return ShownCluster(objects)


any_clusters = clusters() | hostile_clusters()
