"""The superset test and MergeTolerations (spec §1c), against upstream's tables."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.reviews import taint, tol
from webhooks.k8s.tolerations import (
    _COVERED_LIMIT,
    TolerationList,
    describe,
    facts,
    is_superset,
    merge,
    merge_read,
    tolerates,
)

# Upstream's named tolerations (pkg/util/tolerations tests).
NAMED: dict[str, dict[str, Any]] = {
    "all": tol(operator="Exists"),
    "all-nosched": tol(operator="Exists", effect="NoSchedule"),
    "all-noexec": tol(operator="Exists", effect="NoExecute"),
    "foo": tol("foo", "Exists"),
    "foo-bar": tol("foo", "Equal", "bar"),
    "foo-nosched": tol("foo", "Exists", effect="NoSchedule"),
    "foo-bar-nosched": tol("foo", "Equal", "bar", "NoSchedule"),
    "foo-baz-nosched": tol("foo", "Equal", "baz", "NoSchedule"),
    "faz-nosched": tol("faz", "Exists", effect="NoSchedule"),
    "faz-baz-nosched": tol("faz", "Equal", "baz", "NoSchedule"),
    "foo-prefnosched": tol("foo", "Exists", effect="PreferNoSchedule"),
    "foo-noexec": tol("foo", "Exists", effect="NoExecute"),
    "foo-bar-noexec": tol("foo", "Equal", "bar", "NoExecute"),
    "foo-noexec-10": tol("foo", "Exists", effect="NoExecute", seconds=10),
    "foo-noexec-0": tol("foo", "Exists", effect="NoExecute", seconds=0),
    "foo-bar-noexec-10": tol("foo", "Equal", "bar", "NoExecute", seconds=10),
}

# Each name → the other names it is a superset of (it is always a superset of itself).
# Upstream's table spells one row "foo-prenosched", a name not in its map, so that row
# checks nothing there; it is written here as intended. Upstream has no row for
# "foo-baz-nosched"; it is added by analogy with "foo-bar-nosched".
SUPERSETS: dict[str, set[str]] = {
    "all": set(NAMED) - {"all"},
    "all-nosched": {
        "foo-nosched",
        "foo-bar-nosched",
        "foo-baz-nosched",
        "faz-nosched",
        "faz-baz-nosched",
    },
    "all-noexec": {
        "foo-noexec",
        "foo-bar-noexec",
        "foo-noexec-10",
        "foo-noexec-0",
        "foo-bar-noexec-10",
    },
    "foo": {
        "foo-bar",
        "foo-nosched",
        "foo-bar-nosched",
        "foo-baz-nosched",
        "foo-prefnosched",
        "foo-noexec",
        "foo-bar-noexec",
        "foo-noexec-10",
        "foo-noexec-0",
        "foo-bar-noexec-10",
    },
    "foo-bar": {"foo-bar-nosched", "foo-bar-noexec", "foo-bar-noexec-10"},
    "foo-nosched": {"foo-bar-nosched", "foo-baz-nosched"},
    "foo-bar-nosched": set(),
    "foo-baz-nosched": set(),
    "faz-nosched": {"faz-baz-nosched"},
    "faz-baz-nosched": set(),
    "foo-prefnosched": set(),
    "foo-noexec": {"foo-bar-noexec", "foo-noexec-10", "foo-noexec-0", "foo-bar-noexec-10"},
    "foo-bar-noexec": {"foo-bar-noexec-10"},
    "foo-noexec-10": {"foo-noexec-0", "foo-bar-noexec-10"},
    "foo-noexec-0": set(),
    "foo-bar-noexec-10": set(),
}

MATRIX = [(a, b, a == b or b in SUPERSETS[a]) for a in SUPERSETS for b in NAMED]


def test_the_superset_table_covers_every_named_toleration() -> None:
    assert set(SUPERSETS) == set(NAMED)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    MATRIX,
    ids=[f"{a} {'is' if e else 'is not'} a superset of {b}" for a, b, e in MATRIX],
)
def test_is_superset_matrix(a: str, b: str, expected: bool) -> None:
    assert is_superset(NAMED[a], NAMED[b]) is expected


EXTRA: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    (
        "an empty operator covers Equal with the same value",
        tol("foo", value="bar"),
        tol("foo", "Equal", "bar", "NoSchedule"),
        True,
    ),
    (
        "Equal does not cover an empty operator with the same value (asymmetry)",
        tol("foo", "Equal", "bar"),
        tol("foo", value="bar", effect="NoSchedule"),
        False,
    ),
    (
        "an empty operator does not cover another empty operator unless identical",
        tol("foo", value="bar"),
        tol("foo", value="bar", effect="NoSchedule"),
        False,
    ),
    (
        "identical empty-operator tolerations cover each other",
        tol("foo", value="bar"),
        tol("foo", value="bar"),
        True,
    ),
    (
        "Equal does not cover a different value",
        tol("foo", "Equal", "bar"),
        tol("foo", "Equal", "baz", "NoSchedule"),
        False,
    ),
    (
        "an empty key is a wildcard only with Exists",
        tol(operator="Equal", value=""),
        tol("foo", "Equal", ""),
        False,
    ),
    (
        "an unknown operator covers nothing",
        tol("foo", "Lt", "5"),
        tol("foo", "Equal", "5", "NoSchedule"),
        False,
    ),
    (
        "an unknown operator still covers its identical twin",
        tol("foo", "Lt", "5"),
        tol("foo", "Lt", "5"),
        True,
    ),
    (
        "no seconds beats any seconds",
        tol("foo", "Exists", effect="NoExecute"),
        tol("foo", "Exists", effect="NoExecute", seconds=3600),
        True,
    ),
    (
        "seconds never cover no seconds",
        tol("foo", "Exists", effect="NoExecute", seconds=3600),
        tol("foo", "Exists", effect="NoExecute"),
        False,
    ),
    (
        "more seconds cover fewer",
        tol("foo", "Exists", effect="NoExecute", seconds=60),
        tol("foo", "Exists", effect="NoExecute", seconds=59),
        True,
    ),
    (
        "fewer seconds do not cover more",
        tol("foo", "Exists", effect="NoExecute", seconds=59),
        tol("foo", "Exists", effect="NoExecute", seconds=60),
        False,
    ),
    (
        "negative seconds are compared as numbers",
        tol("foo", "Exists", effect="NoExecute", seconds=0),
        tol("foo", "Exists", effect="NoExecute", seconds=-5),
        True,
    ),
    (
        "seconds on an effect wildcard are not compared",
        tol("foo", "Exists", seconds=10),
        tol("foo", "Exists", effect="NoExecute"),
        True,
    ),
    (
        "a different effect is not covered",
        tol("foo", "Exists", effect="NoSchedule"),
        tol("foo", "Exists", effect="PreferNoSchedule"),
        False,
    ),
]


@pytest.mark.parametrize(
    ("a", "b", "expected"), [(a, b, e) for _, a, b, e in EXTRA], ids=[i for i, *_ in EXTRA]
)
def test_is_superset_edge_cases(a: dict[str, Any], b: dict[str, Any], expected: bool) -> None:
    assert is_superset(a, b) is expected


MERGES: list[tuple[str, list[str], list[str], list[str]]] = [
    (
        "disjoint lists are concatenated",
        ["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
        ["foo-prefnosched", "foo-baz-nosched"],
        [
            "foo-bar-nosched",
            "faz-baz-nosched",
            "foo-noexec-10",
            "foo-prefnosched",
            "foo-baz-nosched",
        ],
    ),
    (
        "duplicates are kept once, first list first",
        ["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
        ["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
        ["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
    ),
    (
        "redundant entries merge into the broader one",
        ["foo-bar-nosched", "foo-baz-nosched"],
        ["foo-nosched", "faz-baz-nosched"],
        ["foo-nosched", "faz-baz-nosched"],
    ),
    (
        "everything merges into a later tolerate-all",
        ["foo-bar-nosched", "foo-baz-nosched", "foo-noexec-10"],
        ["all"],
        ["all"],
    ),
    (
        "a tolerate-all absorbs everything after it",
        ["all"],
        ["foo-bar-nosched", "foo-baz-nosched", "foo-noexec-10"],
        ["all"],
    ),
    (
        "the first list's own duplicates collapse even when the second is empty",
        ["foo-bar-nosched", "foo-bar-nosched"],
        [],
        ["foo-bar-nosched"],
    ),
    (
        "a later broader entry in the first list absorbs an earlier one",
        ["foo-bar-nosched", "foo-nosched"],
        [],
        ["foo-nosched"],
    ),
    (
        "no seconds absorb a bounded toleration from the other list",
        ["foo-noexec-10"],
        ["foo-noexec"],
        ["foo-noexec"],
    ),
    ("two empty lists merge to an empty list", [], [], []),
]


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [(a, b, e) for _, a, b, e in MERGES],
    ids=[i for i, *_ in MERGES],
)
def test_merge_tolerations(first: list[str], second: list[str], expected: list[str]) -> None:
    result = merge([NAMED[n] for n in first], [NAMED[n] for n in second])
    assert result == [NAMED[n] for n in expected]


_GENERATED = st.builds(
    lambda key, exists, value, effect, seconds: tol(
        key,
        "Exists" if exists else "Equal",
        None if exists else value,
        effect or None,
        seconds if effect == "NoExecute" else None,
    ),
    st.sampled_from(["a", "aa", "aaa"]),
    st.booleans(),
    st.sampled_from(["b", "bb"]),
    st.sampled_from(["", "NoExecute", "NoSchedule", "PreferNoSchedule"]),
    st.none() | st.integers(0, 9),
)


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(st.lists(_GENERATED, max_size=8), st.lists(_GENERATED, max_size=8))
def test_every_input_toleration_is_covered_by_the_merge(
    first: list[dict[str, Any]], second: list[dict[str, Any]]
) -> None:
    result = merge(first, second)
    for toleration in (*first, *second):
        assert any(is_superset(kept, toleration) for kept in result)


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(st.lists(_GENERATED, max_size=8), st.lists(_GENERATED, max_size=8))
def test_a_merge_reads_out_the_facts_of_what_it_keeps(
    first: list[dict[str, Any]], second: list[dict[str, Any]]
) -> None:
    kept, read = merge_read(first, second)
    assert kept == merge(first, second)
    assert read == [facts(t) for t in kept]
    shared = TolerationList.of(second)
    for _ in range(2):  # the second merge is answered from what the list remembers
        again, facts_again = merge_read(first, shared)
        assert (again, facts_again) == (kept, read)


@settings(max_examples=200, derandomize=True, deadline=None, database=None)
@given(st.lists(_GENERATED, max_size=6), st.lists(_GENERATED, min_size=1, max_size=12))
def test_a_whitelist_answers_as_the_superset_test_does_every_time_it_is_asked(
    allowed: list[dict[str, Any]], asked: list[dict[str, Any]]
) -> None:
    whitelist = TolerationList.of(allowed)
    for _ in range(2):  # the second round is answered from what the list remembers
        for toleration in asked:
            expected = any(is_superset(a, toleration) for a in allowed)
            assert whitelist.covers(facts(toleration)) == expected
    assert describe(asked[0]) == describe(dict(asked[0]))


def test_what_a_whitelist_remembers_stays_bounded_whatever_pods_send() -> None:
    whitelist = TolerationList.of([tol(operator="Exists")])
    for i in range(_COVERED_LIMIT * 5):
        assert whitelist.covers(facts(tol(f"key-{i}", "Equal", "v", "NoSchedule")))
    assert len(whitelist._covered) <= _COVERED_LIMIT


COMPARISONS: list[tuple[str, dict[str, Any], dict[str, Any], bool, bool]] = [
    # (toleration, taint, with the gate, without it)
    (
        "Gt tolerates a greater value",
        tol("tier", "Gt", "5", "NoSchedule"),
        taint("tier", value="7"),
        True,
        False,
    ),
    (
        "Gt does not tolerate an equal value",
        tol("tier", "Gt", "5", "NoSchedule"),
        taint("tier", value="5"),
        False,
        False,
    ),
    (
        "Lt tolerates a smaller value",
        tol("tier", "Lt", "5", "NoSchedule"),
        taint("tier", value="-2"),
        True,
        False,
    ),
    (
        "a taint value that is not an integer never matches",
        tol("tier", "Gt", "5", "NoSchedule"),
        taint("tier", value="high"),
        False,
        False,
    ),
    (
        "a value with a leading zero is not canonical",
        tol("tier", "Lt", "10", "NoSchedule"),
        taint("tier", value="07"),
        False,
        False,
    ),
    (
        "a value past int64 never matches",
        tol("tier", "Lt", "10", "NoSchedule"),
        taint("tier", value="-9223372036854775809"),
        False,
        False,
    ),
    (
        "an empty key compares every key",
        tol("", "Gt", "0", "NoSchedule"),
        taint("any", value="1"),
        True,
        False,
    ),
]


@pytest.mark.parametrize(
    ("toleration", "node_taint", "gated", "plain"),
    [c[1:] for c in COMPARISONS],
    ids=[c[0] for c in COMPARISONS],
)
def test_gt_and_lt_compare_integers_only_with_the_gate(
    toleration: dict[str, Any], node_taint: dict[str, Any], gated: bool, plain: bool
) -> None:
    assert tolerates(toleration, node_taint, comparisons=True) is gated
    assert tolerates(toleration, node_taint) is plain
