"""StaticCluster: which offline objects it keeps, and that damaged ones never break it."""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.cluster.files import StaticCluster

RC = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": "runsc"}

IGNORED: list[tuple[str, dict[str, Any]]] = [
    ("a RuntimeClass without metadata", RC),
    ("a RuntimeClass whose metadata is a string", {**RC, "metadata": "sandbox"}),
    ("a RuntimeClass whose metadata is a list", {**RC, "metadata": [{"name": "sandbox"}]}),
    ("a RuntimeClass whose metadata is null", {**RC, "metadata": None}),
    ("a RuntimeClass whose name is a number", {**RC, "metadata": {"name": 7}}),
    ("an object of another kind", {"kind": "ConfigMap", "metadata": {"name": "sandbox"}}),
    ("an object whose kind is a list", {"kind": ["RuntimeClass"], "metadata": {"name": "x"}}),
]


@pytest.mark.parametrize("obj", [o for _, o in IGNORED], ids=[i for i, _ in IGNORED])
def test_an_object_that_is_not_a_named_runtime_class_or_namespace_is_ignored(
    obj: dict[str, Any],
) -> None:
    cluster = StaticCluster()
    assert cluster.add(obj) is False
    assert (cluster.runtime_classes, cluster.namespaces) == ({}, {})


def test_a_named_runtime_class_and_namespace_are_kept() -> None:
    rc = {**RC, "metadata": {"name": "sandbox"}}
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    cluster = StaticCluster([rc, ns])
    assert cluster.runtime_class("sandbox") is rc
    assert cluster.namespace("team-a") is ns
