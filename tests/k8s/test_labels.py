"""``k=v,k2=v2`` label sets parse like apimachinery's ConvertSelectorToLabelsMap."""

from __future__ import annotations

import pytest

from webhooks.k8s.labels import first_conflict, format_label_set, is_subset, parse_label_set

PARSED: list[tuple[str, str, dict[str, str]]] = [
    ("an empty string is the empty set", "", {}),
    ("one pair", "zone=a", {"zone": "a"}),
    ("several pairs", "zone=a,arch=arm64", {"zone": "a", "arch": "arm64"}),
    (
        "spaces around keys and values are trimmed",
        " zone = a , arch=arm64 ",
        {"zone": "a", "arch": "arm64"},
    ),
    ("an empty value is allowed", "gpu=", {"gpu": ""}),
    ("a later duplicate key wins", "zone=a,zone=b", {"zone": "b"}),
    ("a prefixed key is allowed", "kubernetes.io/arch=amd64", {"kubernetes.io/arch": "amd64"}),
]


@pytest.mark.parametrize(("text", "want"), [c[1:] for c in PARSED], ids=[c[0] for c in PARSED])
def test_parse_label_set(text: str, want: dict[str, str]) -> None:
    assert parse_label_set(text) == want


ERRORS: list[tuple[str, str, str]] = [
    ("a pair without = is rejected with upstream's text", "zone", "invalid selector: [zone]"),
    ("two = signs are rejected", "a=b=c", "invalid selector: [a b c]"),
    ("a trailing comma leaves an empty item", "a=b,", "invalid selector: []"),
    ("set-based syntax is not a label set", "zone in (a)", "invalid selector: [zone in (a)]"),
    ("an invalid key names the key", "bad key=a", 'invalid label key "bad key": name part must'),
    (
        "an invalid value names value and key",
        "zone=a b",
        'invalid label value: "a b": at key: "zone": a valid label',
    ),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_parse_label_set_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_label_set(text)
    assert str(caught.value).startswith(message)


def test_first_conflict_names_the_first_differing_key_in_sorted_order() -> None:
    assert first_conflict({"b": "1", "a": "1", "c": "3"}, {"b": "2", "a": "2", "c": "3"}) == "a"
    assert first_conflict({"a": "1"}, {"b": "2"}) is None
    assert first_conflict({"a": "1"}, {"a": "1"}) is None


@pytest.mark.parametrize(
    ("labels", "allowed", "want"),
    [
        ({"a": "1"}, {}, True),
        ({"a": "1"}, {"a": "1", "b": "2"}, True),
        ({"a": "1"}, {"a": "2"}, False),
        ({"c": "1"}, {"a": "1"}, False),
        ({}, {"a": "1"}, True),
    ],
    ids=[
        "an empty whitelist allows everything",
        "pairs within the whitelist are allowed",
        "a different value is not allowed",
        "a key outside the whitelist is not allowed",
        "no labels are always allowed",
    ],
)
def test_is_subset(labels: dict[str, str], allowed: dict[str, str], want: bool) -> None:
    assert is_subset(labels, allowed) is want


def test_format_label_set_sorts_keys() -> None:
    assert format_label_set({"b": "2", "a": "1"}) == "a=1,b=2"
