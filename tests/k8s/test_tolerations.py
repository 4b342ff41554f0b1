"""The superset test and MergeTolerations (spec §1c), against upstream's tables."""

from __future__ import annotations

import copy
import functools
import itertools
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.counting import TARGET, growth
from tests.reviews import taint, tol
from webhooks.k8s import tolerations as tolerations_module
from webhooks.k8s.tolerations import (
    _COVERED_LIMIT,
    TolerationList,
    add_or_update_all,
    describe,
    facts,
    identity,
    is_superset,
    merge,
    merge_read,
    subsumed,
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


# --- merges and whitelists are linear, and answer as the pairwise rule does -----------------

#: Every field a §1c test reads, with the values where the rules branch: an empty key and
#: operator, an operator the rules do not know, NoExecute with and without seconds.
_ANY = st.builds(
    lambda key, operator, value, effect, seconds: {
        name: field
        for name, field in (
            ("key", key),
            ("operator", operator),
            ("value", value),
            ("effect", effect),
            ("tolerationSeconds", seconds),
        )
        if field is not None
    },
    st.sampled_from(["", "a", "b", None]),
    st.sampled_from(["", "Equal", "Exists", "Lt", None]),
    st.sampled_from(["", "x", "y", None]),
    st.sampled_from(["", "NoExecute", "NoSchedule", None]),
    st.sampled_from([None, 0, 5, 10, -1]),
)


def pairwise_merge(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[Any]:
    """MergeTolerations (§1c) as upstream writes it: every element against every other."""
    combined = [*first, *second]
    kept: list[dict[str, Any]] = []
    for i, item in enumerate(combined):
        if any(is_superset(k, item) for k in kept):
            continue
        later = combined[i + 1 :]
        if any(facts(o) != facts(item) and is_superset(o, item) for o in later):
            continue
        kept.append(item)
    return kept


@settings(max_examples=500, derandomize=True, deadline=None, database=None)
@given(st.lists(_ANY, max_size=8), st.lists(_ANY, max_size=6))
def test_a_merge_keeps_exactly_what_comparing_every_pair_keeps(
    first: list[dict[str, Any]], second: list[dict[str, Any]]
) -> None:
    assert merge(first, second) == pairwise_merge(first, second)
    assert merge(first, TolerationList.of(second)) == pairwise_merge(first, second)


@settings(max_examples=500, derandomize=True, deadline=None, database=None)
@given(st.lists(_ANY, max_size=8), _ANY)
def test_a_whitelist_covers_exactly_what_one_of_its_entries_is_a_superset_of(
    allowed: list[dict[str, Any]], asked: dict[str, Any]
) -> None:
    expected = any(is_superset(a, asked) for a in allowed)
    assert TolerationList.of(allowed).covers(facts(asked)) is expected


def _one_key(n: int, offset: int = 0) -> list[dict[str, Any]]:
    """``n`` tolerations of one key, each with its own value: the shape that made a merge
    compare every pair (they all share the key's candidates)."""
    return [tol("sandbox", "Equal", f"v{offset + i}", "NoSchedule") for i in range(n)]


GROWING: list[tuple[str, Callable[[int], Callable[[], object]]]] = [
    (
        "merging n tolerations of one key with a namespace's list",
        lambda n: functools.partial(merge, _one_key(n), TolerationList.of(_one_key(3, n))),
    ),
    (
        "merging a pod's n tolerations of one key with another list of n",
        lambda n: functools.partial(merge, _one_key(n), _one_key(n, n)),
    ),
    (
        "checking n tolerations against a whitelist of n entries of their key",
        lambda n: functools.partial(
            lambda wl, asked: [wl.covers(facts(t)) for t in asked],
            TolerationList.of(_one_key(n, 10 * n)),
            _one_key(n),
        ),
    ),
]


@pytest.mark.parametrize("work", [w for _, w in GROWING], ids=[i for i, _ in GROWING])
def test_merges_and_whitelist_checks_do_work_linear_in_the_tolerations(
    work: Callable[[int], Callable[[], object]],
) -> None:
    assert growth(work, 300) <= TARGET


# --- AddOrUpdateTolerationInPodSpec of many tolerations (spec §1b) ----------------------------


def one_at_a_time(
    tolerations: list[dict[str, Any]], wanted: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Upstream's loop, as ExtendedResourceToleration and the DaemonSet controller call it:
    AddOrUpdateTolerationInPodSpec once per wanted toleration, on the list so far."""
    result = list(tolerations)
    for new in wanted:
        matched = False
        for i, existing in enumerate(result):
            if isinstance(existing, dict) and identity(existing) == identity(new):
                result[i] = dict(new)
                matched = True
        if not matched:
            result.append(dict(new))
    return result


GPU = tol("nvidia.com/gpu", "Exists", effect="NoSchedule")
FPGA = tol("example.com/fpga", "Exists", effect="NoSchedule")
NOT_READY = tol("node.kubernetes.io/not-ready", "Exists", effect="NoExecute")
ADDED_IN_TURN: list[tuple[str, list[Any], list[dict[str, Any]]]] = [
    ("nothing to add leaves the list as it is", [GPU, "junk"], []),
    ("a missing toleration is appended", [tol("a", "Equal", "b")], [GPU]),
    ("several missing ones are appended in the order asked", [], [GPU, FPGA, NOT_READY]),
    ("an identical entry stays where it is", [FPGA, GPU, tol("z")], [GPU]),
    (
        "an entry equal but for its seconds is rewritten in place",
        [{**NOT_READY, "tolerationSeconds": 300}, GPU],
        [NOT_READY],
    ),
    ("every duplicate entry is rewritten, none removed", [GPU, FPGA, GPU], [GPU]),
    (
        "a wanted toleration asked twice is added once, as asked last",
        [],
        [{**NOT_READY, "tolerationSeconds": 5}, FPGA, NOT_READY],
    ),
    (
        "an entry rewritten by one wanted toleration is rewritten by a later equal one",
        [{**NOT_READY, "tolerationSeconds": 1}],
        [{**NOT_READY, "tolerationSeconds": 2}, {**NOT_READY, "tolerationSeconds": 3}],
    ),
    (
        "another operator, value or effect is another toleration",
        [tol("nvidia.com/gpu", "Equal", effect="NoSchedule"), tol("nvidia.com/gpu", "Exists")],
        [GPU],
    ),
    ("a wildcard suppresses nothing", [tol(operator="Exists")], [GPU]),
    ("entries that are not objects are kept as they are", [None, 3, [GPU]], [GPU]),
    (
        "fields of the wrong type read as absent, as identity reads them",
        [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule", "value": 7}],
        [GPU],
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "wanted"),
    [(t, w) for _, t, w in ADDED_IN_TURN],
    ids=[i for i, *_ in ADDED_IN_TURN],
)
def test_adding_many_tolerations_at_once_gives_what_adding_them_in_turn_gives(
    tolerations: list[Any], wanted: list[dict[str, Any]]
) -> None:
    before = copy.deepcopy(tolerations)
    assert add_or_update_all(tolerations, wanted) == one_at_a_time(tolerations, wanted)
    assert tolerations == before  # on a copy
    for new in wanted:  # the copies are the merge's own
        assert all(kept is not new for kept in add_or_update_all(tolerations, wanted))


@settings(max_examples=500, derandomize=True, deadline=None, database=None)
@given(st.lists(_ANY, max_size=8), st.lists(_ANY, max_size=6))
def test_adding_many_tolerations_at_once_is_the_fold_of_adding_each(
    tolerations: list[dict[str, Any]], wanted: list[dict[str, Any]]
) -> None:
    assert add_or_update_all(tolerations, wanted) == one_at_a_time(tolerations, wanted)


def test_adding_n_tolerations_reads_each_identity_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Adding them one at a time read every entry's identity again per addition: n² reads,
    # 8,000 extended resources took seconds.
    reads = 0
    real = tolerations_module.identity

    def counted(toleration: Any) -> tuple[str, str, str, str]:
        nonlocal reads
        reads += 1
        return real(toleration)

    monkeypatch.setattr(tolerations_module, "identity", counted)
    n = 500
    present = [tol(f"example.com/r{i}", "Exists", effect="NoSchedule") for i in range(0, n, 2)]
    wanted = [tol(f"example.com/r{i}", "Exists", effect="NoSchedule") for i in range(n)]
    result = add_or_update_all(present, wanted)
    assert len(result) == n
    assert reads == len(present) + len(wanted)


DESCRIBED: list[tuple[str, dict[str, Any], str]] = [
    (
        "the longest valid key is shown whole",
        tol("a" * 253 + "/" + "b" * 63, "Exists", effect="NoSchedule"),
        "a" * 253 + "/" + "b" * 63 + ":NoSchedule (Exists)",
    ),
    (
        "a value longer than any valid one is cut",
        tol("dedicated", "Equal", "v" * 100_000),
        "dedicated=" + "v" * 317 + "…:* (Equal)",
    ),
    (
        "a key longer than any valid one is cut",
        tol("k" * 5000, "Exists"),
        "k" * 317 + "…:* (Exists)",
    ),
]


@pytest.mark.parametrize(
    ("toleration", "text"), [(t, x) for _, t, x in DESCRIBED], ids=[i for i, *_ in DESCRIBED]
)
def test_a_toleration_is_described_in_a_bounded_line(toleration: dict[str, Any], text: str) -> None:
    assert describe(toleration) == text


SUBSUMED_ALPHABET = [
    {
        k: v
        for k, v in zip(("key", "operator", "value", "effect", "tolerationSeconds"), f, strict=True)
        if v is not None
    }
    for f in itertools.product(
        (None, "", "a", "b", 5),
        (None, "Exists", "Equal"),
        (None, "x"),
        (None, "NoExecute", "NoSchedule"),
        (None, 0, 30),
    )
]
WANTED = [
    {"key": "a", "operator": "Exists", "effect": "NoExecute"},
    {"key": "b", "operator": "Exists", "effect": "NoSchedule"},
]


@pytest.mark.parametrize("seed", range(20))
def test_subsumed_is_the_brute_force_answer(seed: int) -> None:
    """What an index over the entries with a wanted key (or none) finds is what comparing
    every entry with every wanted toleration finds, malformed keys included."""
    rng = random.Random(seed)
    tolerations = [rng.choice(SUBSUMED_ALPHABET) for _ in range(rng.randint(0, 6))]
    present = {identity(t) for t in tolerations}
    expected = [
        w
        for w in WANTED
        if identity(w) not in present and any(is_superset(t, w) for t in tolerations)
    ]
    assert subsumed(tolerations, WANTED) == expected


@pytest.mark.parametrize(
    ("tolerations", "found"),
    [
        pytest.param([{"operator": "Exists"}], WANTED, id="a wildcard subsumes every one"),
        pytest.param([{"key": "a", "operator": "Exists"}], WANTED[:1], id="a key with no effect"),
        pytest.param([dict(WANTED[0])], [], id="the same toleration is present, not subsumed"),
        pytest.param(
            [{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
            [],
            id="a NoExecute wildcard with seconds does not cover forever",
        ),
        pytest.param([{"key": "a", "operator": "Equal"}], [], id="an Equal entry covers no Exists"),
    ],
)
def test_subsumed(tolerations: list[dict[str, Any]], found: list[dict[str, Any]]) -> None:
    assert subsumed(tolerations, WANTED) == found
