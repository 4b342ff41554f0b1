"""Copy-on-write editing and the JSON Patch it records."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.reviews import apply
from webhooks.core.patch import Editor, list_ops, pointer

POINTERS = [
    ("a plain path", ("spec", "tolerations"), "/spec/tolerations"),
    (
        "a slash in a key",
        ("spec", "nodeSelector", "kubernetes.io/arch"),
        "/spec/nodeSelector/kubernetes.io~1arch",
    ),
    ("a tilde in a key", ("metadata", "annotations", "a~b"), "/metadata/annotations/a~0b"),
    ("a tilde and a slash", ("x", "~/"), "/x/~0~1"),
    ("an index", ("spec", "containers", 0), "/spec/containers/0"),
]


@pytest.mark.parametrize(
    ("path", "expected"), [(p, e) for _, p, e in POINTERS], ids=[i for i, _, _ in POINTERS]
)
def test_json_pointers_escape_tilde_then_slash(path: tuple[Any, ...], expected: str) -> None:
    assert pointer(path) == expected


LISTS = [
    ("an append", [1, 2], [1, 2, 3]),
    ("a rewrite in place", [1, 2, 3], [1, 9, 3]),
    ("a removal in the middle", [1, 2, 3, 4], [1, 3, 4]),
    ("removals and an append", [1, 2, 3, 4], [1, 4, 5]),
    ("everything removed", [1, 2], []),
    ("a full change", [1, 2], [3, 4, 5]),
    ("duplicates collapsed", [1, 1, 2, 1], [1, 2]),
]


@pytest.mark.parametrize(
    ("old", "new"), [(o, n) for _, o, n in LISTS], ids=[i for i, _, _ in LISTS]
)
def test_list_edits_apply_to_give_the_new_list_without_replacing_the_array(
    old: list[int], new: list[int]
) -> None:
    ops = list_ops(("l",), old, new)
    assert apply({"l": old}, ops) == {"l": new}
    assert all(op["path"] != "/l" for op in ops)


def test_setting_a_missing_array_adds_it_whole() -> None:
    obj = {"spec": {"containers": []}}
    editor = Editor(obj)
    editor.set(("spec", "tolerations"), [{"key": "a"}])
    assert editor.patch == [{"op": "add", "path": "/spec/tolerations", "value": [{"key": "a"}]}]


def test_a_null_array_is_treated_as_missing() -> None:
    editor = Editor({"spec": {"tolerations": None}})
    editor.set(("spec", "tolerations"), [{"key": "a"}])
    assert editor.patch[0]["op"] == "add"


def test_missing_parents_are_created_by_one_add_of_the_highest_missing_object() -> None:
    obj: dict[str, Any] = {"spec": {}}
    editor = Editor(obj)
    editor.set(("spec", "affinity", "nodeAffinity", "x"), 1)
    assert editor.patch == [
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {"x": 1}}}
    ]
    assert apply(obj, editor.patch) == editor.obj


def test_the_input_is_never_modified_and_untouched_branches_are_shared() -> None:
    obj = {
        "metadata": {"labels": {"a": "b"}},
        "spec": {"tolerations": [{"key": "x"}], "containers": [{}]},
    }
    before = copy.deepcopy(obj)
    editor = Editor(obj)
    editor.set(("spec", "tolerations"), [{"key": "x"}, {"key": "y"}])
    editor.set(("spec", "nodeSelector"), {"a": "b"})
    assert obj == before
    assert editor.obj["metadata"] is obj["metadata"]
    assert editor.obj["spec"]["containers"] is obj["spec"]["containers"]
    assert apply(obj, editor.patch) == editor.obj


EQUAL_SETS: list[tuple[str, dict[str, Any], tuple[Any, ...], Any]] = [
    (
        "an equal list",
        {"spec": {"tolerations": [{"key": "x"}]}},
        ("spec", "tolerations"),
        [{"key": "x"}],
    ),
    (
        "null over a null map value",
        {"spec": {"nodeSelector": {"a": None}}},
        ("spec", "nodeSelector", "a"),
        None,
    ),
    ("null over a null list entry", {"spec": {"items": [None]}}, ("spec", "items", 0), None),
    ("null over a null field", {"spec": None}, ("spec",), None),
]


@pytest.mark.parametrize(
    ("obj", "path", "value"), [c[1:] for c in EQUAL_SETS], ids=[c[0] for c in EQUAL_SETS]
)
def test_setting_an_equal_value_records_nothing(
    obj: dict[str, Any], path: tuple[Any, ...], value: Any
) -> None:
    editor = Editor(obj)
    editor.set(path, value)
    assert not editor.changed
    assert editor.obj is obj


def test_setting_null_where_nothing_is_adds_it() -> None:
    editor = Editor({"spec": {}})
    editor.set(("spec", "a"), None)
    assert editor.patch == [{"op": "add", "path": "/spec/a", "value": None}]


def test_a_scalar_is_replaced_and_a_key_removed() -> None:
    obj = {"spec": {"a": 1, "b": 2}}
    editor = Editor(obj)
    editor.set(("spec", "a"), 3)
    editor.remove(("spec", "b"))
    editor.remove(("spec", "missing"))
    assert editor.obj == {"spec": {"a": 3}}
    assert apply(obj, editor.patch) == editor.obj
    assert obj == {"spec": {"a": 1, "b": 2}}


def test_reading_follows_dicts_and_lists_and_defaults_on_anything_else() -> None:
    editor = Editor({"a": [{"b": 1}], "n": None})
    assert editor.get(("a", 0, "b")) == 1
    assert editor.get(("a", 5, "b"), "d") == "d"
    assert editor.get(("n", "x"), "d") == "d"
    assert editor.get(("a", "x"), "d") == "d"
