"""metav1.LabelSelector matching, as apimachinery does it, read once or per call alike."""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.k8s.selectors import compile_selector, matches

CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    ("the empty selector matches everything", {}, {"a": "b"}, True),
    ("matchLabels needs every pair", {"matchLabels": {"a": "b", "c": "d"}}, {"a": "b"}, False),
    ("matchLabels with every pair present matches", {"matchLabels": {"a": "b"}}, {"a": "b"}, True),
    (
        "In matches a listed value",
        {"matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]}]},
        {"env": "b"},
        True,
    ),
    (
        "In does not match a missing label",
        {"matchExpressions": [{"key": "env", "operator": "In", "values": ["a"]}]},
        {},
        False,
    ),
    (
        "NotIn matches a missing label (apimachinery's rule)",
        {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["a"]}]},
        {},
        True,
    ),
    (
        "NotIn refuses a listed value",
        {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["a"]}]},
        {"env": "a"},
        False,
    ),
    (
        "Exists needs the label",
        {"matchExpressions": [{"key": "env", "operator": "Exists"}]},
        {"other": "x"},
        False,
    ),
    (
        "DoesNotExist refuses the label",
        {"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]},
        {"env": "x"},
        False,
    ),
    (
        "a label that is not a string counts as absent",
        {"matchExpressions": [{"key": "env", "operator": "Exists"}]},
        {"env": 1},
        False,
    ),
    (
        "matchLabels and expressions are ANDed",
        {
            "matchLabels": {"team": "a"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}],
        },
        {"team": "a", "env": "dev"},
        False,
    ),
]


@pytest.mark.parametrize(
    ("selector", "labels", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_matching(selector: dict[str, Any], labels: dict[str, Any], expected: bool) -> None:
    assert matches(selector, labels) is expected
    assert compile_selector(selector).matches(labels) is expected
