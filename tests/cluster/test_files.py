"""StaticCluster: which offline objects it keeps, and that damaged ones never break it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from webhooks.cluster.files import StaticCluster, read_objects
from webhooks.manifests.errors import ManifestError

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


def test_objects_are_read_from_a_directory_like_nodes_are(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "runtime.yaml").write_text(
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n"
    )
    (tmp_path / "sub" / "namespaces.json").write_text(
        '{"apiVersion": "v1", "kind": "List", "items": ['
        '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}]}'
    )
    cluster = read_objects([tmp_path])
    assert list(cluster.runtime_classes) == ["gvisor"]
    assert list(cluster.namespaces) == ["team-a"]


BOMB = "a: &a [x, x]\n" + "".join(
    f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)
UNUSABLE_OBJECTS = [
    ("YAML that does not parse", {"o.yaml": "kind: [\n"}, "o.yaml:2: invalid YAML: "),
    ("a document that is not a map", {"o.yaml": "kind: Namespace\n---\n- a\n"}, "o.yaml:3: not a "),
    ("an alias bomb", {"o.yaml": BOMB}, "o.yaml:"),
    ("a directory without manifests", {"notes.txt": "x"}, ": no manifests found"),
]


@pytest.mark.parametrize(
    ("files", "start"), [u[1:] for u in UNUSABLE_OBJECTS], ids=[u[0] for u in UNUSABLE_OBJECTS]
)
def test_unusable_objects_raise_the_one_error_naming_file_and_line(
    tmp_path: Path, files: dict[str, str], start: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ManifestError) as caught:
        read_objects([tmp_path])
    message = str(caught.value)
    assert message.startswith(str(tmp_path))
    assert start in message
    assert "\n" not in message


def test_objects_cannot_take_stdin_it_has_not_been_given() -> None:
    with pytest.raises(ManifestError, match="--objects cannot read stdin here"):
        read_objects(["-"])
