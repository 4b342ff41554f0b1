"""Deep trees copied, measured and shown without recursion."""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.manifests.errors import show
from webhooks.manifests.tree import copy_tree, depth


def _deep(levels: int) -> Any:
    obj: Any = "leaf"
    for _ in range(levels):
        obj = [{"a": obj}]
    return obj


def test_a_copy_shares_no_container_with_the_original() -> None:
    original = {"a": [{"b": 1}, [2]], "c": "s"}
    copied = copy_tree(original)
    assert copied == original
    copied["a"][0]["b"] = 9
    copied["a"][1].append(3)
    assert original == {"a": [{"b": 1}, [2]], "c": "s"}


def test_twenty_thousand_levels_copy_and_measure_without_recursion() -> None:
    obj = _deep(10_000)
    assert depth(copy_tree(obj)) == 20_000
    assert copy_tree("x") == "x"
    assert depth(1) == 0


SHOWN = [
    ("true, not True", True, "true"),
    ("null, not None", None, "null"),
    ("a string is quoted as JSON", 'a"b', '"a\\"b"'),
    ("a map in key order", {"a": [1, {"b": None}], "c": 1.5}, '{"a":[1,{"b":null}],"c":1.5}'),
    ("empty containers", [[], {}], "[[],{}]"),
    ("a long string is cut", "x" * 100, '"' + "x" * 59 + "…"),
    (
        "a wide map is cut",
        {f"k{i}": i for i in range(10_000)},
        "{" + ",".join(f'"k{i}":{i}' for i in range(8)) + ',"k8…',
    ),
    ("a deep list is cut", _deep(20_000), '[{"a":' * 10 + "…"),
    ("a number too long for str is still shown", 10**30, "1000000000000000000000000000000"),
]


@pytest.mark.parametrize(("value", "text"), [s[1:] for s in SHOWN], ids=[s[0] for s in SHOWN])
def test_show(value: Any, text: str) -> None:
    assert show(value) == text
