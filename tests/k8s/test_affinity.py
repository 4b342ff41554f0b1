"""Node-affinity algebra and matching follow the scheduler (nodeaffinity + labels.Requirement)."""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.k8s.affinity import (
    EMPTY_TERM,
    affinity_failures,
    and_requirement,
    describe_expression,
    expression_matches,
    is_empty_term,
    parse_int64,
    required_terms,
    selector_failures,
    term_conflict,
    term_failures,
    term_has,
    term_matches,
    with_requirement,
)


def node_matches(
    node_labels: dict[str, str], pod_spec: dict[str, Any], node_name: str = ""
) -> bool:
    """The scheduler's NodeAffinity verdict, reached as ``explain`` reaches it.

    Why through the failure lists: they are the production path (``explain.fit``); the
    nodeSelector must match, and any required term with no failure lets the pod on.
    """
    terms = affinity_failures(node_labels, pod_spec, node_name)
    return not selector_failures(node_labels, pod_spec) and (
        terms is None or any(not failures for failures in terms)
    )


def ex(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def term(
    *expressions: dict[str, Any], fields: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"matchExpressions": list(expressions)}
    if fields is not None:
        out["matchFields"] = fields
    return out


def spec_with(*terms: Any, node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    }
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    return spec


INT64: list[tuple[str, str, int | None]] = [
    ("a plain number parses", "42", 42),
    ("a leading plus sign is accepted as Go does", "+7", 7),
    ("a negative number parses", "-3", -3),
    ("int64 max parses", str(2**63 - 1), 2**63 - 1),
    ("one past int64 max does not", str(2**63), None),
    ("int64 min parses", str(-(2**63)), -(2**63)),
    ("spaces are not accepted", " 1", None),
    ("underscores are not accepted", "1_000", None),
    ("an empty string is not a number", "", None),
    ("a decimal is not an integer", "1.5", None),
]


@pytest.mark.parametrize(("text", "want"), [c[1:] for c in INT64], ids=[c[0] for c in INT64])
def test_parse_int64_follows_go(text: str, want: int | None) -> None:
    assert parse_int64(text) == want


MATCHES: list[tuple[str, dict[str, Any], dict[str, str], bool]] = [
    ("In matches a listed value", ex("zone", "In", "a", "b"), {"zone": "b"}, True),
    ("In does not match another value", ex("zone", "In", "a"), {"zone": "c"}, False),
    ("In does not match a missing label", ex("zone", "In", "a"), {}, False),
    ("NotIn matches a missing label", ex("zone", "NotIn", "a"), {}, True),
    ("NotIn rejects a listed value", ex("zone", "NotIn", "a"), {"zone": "a"}, False),
    ("NotIn matches another value", ex("zone", "NotIn", "a"), {"zone": "b"}, True),
    ("Exists needs the label", ex("gpu", "Exists"), {"gpu": ""}, True),
    ("Exists fails without the label", ex("gpu", "Exists"), {}, False),
    ("DoesNotExist needs the label absent", ex("gpu", "DoesNotExist"), {}, True),
    ("DoesNotExist fails with the label", ex("gpu", "DoesNotExist"), {"gpu": "x"}, False),
    ("Gt compares integers", ex("cores", "Gt", "8"), {"cores": "16"}, True),
    ("Gt is strict", ex("cores", "Gt", "8"), {"cores": "8"}, False),
    ("Lt compares integers", ex("cores", "Lt", "8"), {"cores": "4"}, True),
    ("Gt fails on a label that is not an integer", ex("cores", "Gt", "8"), {"cores": "x"}, False),
    ("Gt fails on a missing label", ex("cores", "Gt", "8"), {}, False),
    ("Gt with a non-integer bound is invalid", ex("cores", "Gt", "x"), {"cores": "9"}, False),
    ("Gt with two values is invalid", ex("cores", "Gt", "1", "2"), {"cores": "9"}, False),
    ("a negative bound is an invalid label value", ex("c", "Gt", "-5"), {"c": "1"}, False),
    ("In with no values is invalid", ex("zone", "In"), {"zone": ""}, False),
    ("Exists with values is invalid", ex("gpu", "Exists", "x"), {"gpu": "x"}, False),
    ("an unknown operator matches nothing", ex("zone", "Equals", "a"), {"zone": "a"}, False),
    ("an invalid key matches nothing", ex("bad key", "Exists"), {"bad key": "a"}, False),
    ("an invalid value matches nothing", ex("zone", "In", "a b"), {"zone": "a b"}, False),
]


@pytest.mark.parametrize(
    ("expr", "labels", "want"), [c[1:] for c in MATCHES], ids=[c[0] for c in MATCHES]
)
def test_expression_matches_like_labels_requirement(
    expr: dict[str, Any], labels: dict[str, str], want: bool
) -> None:
    assert expression_matches(expr, labels) is want


TERMS: list[tuple[str, Any, dict[str, str], str, bool]] = [
    (
        "expressions in a term are ANDed",
        term(ex("a", "Exists"), ex("b", "Exists")),
        {"a": "1"},
        "",
        False,
    ),
    (
        "a term whose expressions all hold matches",
        term(ex("a", "Exists"), ex("b", "Exists")),
        {"a": "1", "b": "2"},
        "",
        True,
    ),
    ("an empty term matches nothing", {}, {"a": "1"}, "n1", False),
    (
        "a term with empty lists matches nothing",
        {"matchExpressions": [], "matchFields": []},
        {},
        "n1",
        False,
    ),
    ("a null term matches nothing", None, {}, "n1", False),
    (
        "matchFields on metadata.name selects the node by name",
        term(fields=[ex("metadata.name", "In", "n1")]),
        {},
        "n1",
        True,
    ),
    (
        "matchFields on metadata.name rejects another node",
        term(fields=[ex("metadata.name", "In", "n1")]),
        {},
        "n2",
        False,
    ),
    (
        "matchFields NotIn excludes the named node",
        term(fields=[ex("metadata.name", "NotIn", "n1")]),
        {},
        "n1",
        False,
    ),
    (
        "matchFields on an unknown field never equals a value",
        term(fields=[ex("spec.unschedulable", "In", "true")]),
        {},
        "n1",
        False,
    ),
    (
        "matchFields with two values is a parse error",
        term(fields=[ex("metadata.name", "In", "n1", "n2")]),
        {},
        "n1",
        False,
    ),
    (
        "matchFields with Exists is a parse error",
        term(fields=[ex("metadata.name", "Exists")]),
        {},
        "n1",
        False,
    ),
    (
        "without a node name, fields are not applied",
        term(ex("a", "Exists"), fields=[ex("metadata.name", "In", "n1")]),
        {"a": "1"},
        "",
        True,
    ),
    (
        "one malformed expression voids the whole term",
        term(ex("a", "Exists"), ex("b", "In")),
        {"a": "1", "b": "x"},
        "",
        False,
    ),
]


@pytest.mark.parametrize(
    ("t", "labels", "name", "want"), [c[1:] for c in TERMS], ids=[c[0] for c in TERMS]
)
def test_term_matches(t: Any, labels: dict[str, str], name: str, want: bool) -> None:
    assert term_matches(t, labels, name) is want


NODES: list[tuple[str, dict[str, Any], dict[str, str], bool]] = [
    ("a pod without constraints fits any node", {}, {}, True),
    ("nodeSelector requires every pair", {"nodeSelector": {"a": "1", "b": "2"}}, {"a": "1"}, False),
    (
        "nodeSelector with all pairs present fits",
        {"nodeSelector": {"a": "1"}},
        {"a": "1", "z": "9"},
        True,
    ),
    (
        "nodeSelector with an empty value needs the label present",
        {"nodeSelector": {"a": ""}},
        {},
        False,
    ),
    (
        "terms are ORed: the second term can match",
        spec_with(term(ex("a", "In", "x")), term(ex("b", "Exists"))),
        {"b": "1"},
        True,
    ),
    (
        "terms are ORed: none matching fails",
        spec_with(term(ex("a", "In", "x")), term(ex("b", "Exists"))),
        {"c": "1"},
        False,
    ),
    (
        "nodeSelector AND affinity must both hold",
        spec_with(term(ex("b", "Exists")), node_selector={"a": "1"}),
        {"b": "1"},
        False,
    ),
    ("a required affinity with no terms matches nothing", spec_with(), {"a": "1"}, False),
    (
        "a required affinity whose only term is empty matches nothing",
        spec_with({}),
        {"a": "1"},
        False,
    ),
    (
        "an empty term next to a matching term is skipped",
        spec_with({}, term(ex("a", "Exists"))),
        {"a": "1"},
        True,
    ),
    (
        "a malformed term does not stop a later one from matching",
        spec_with(term(ex("a", "In")), term(ex("a", "Exists"))),
        {"a": "1"},
        True,
    ),
    (
        "a null required affinity is no constraint",
        {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": None}}},
        {},
        True,
    ),
]


@pytest.mark.parametrize(
    ("spec", "labels", "want"), [c[1:] for c in NODES], ids=[c[0] for c in NODES]
)
def test_node_matches_the_scheduler_filter(
    spec: dict[str, Any], labels: dict[str, str], want: bool
) -> None:
    assert node_matches(labels, spec) is want


def test_node_matches_applies_match_fields_with_a_node_name() -> None:
    spec = spec_with(term(fields=[ex("metadata.name", "In", "gpu-1")]))
    assert node_matches({}, spec, "gpu-1")
    assert not node_matches({}, spec, "gpu-2")


def test_required_terms_distinguishes_no_affinity_from_no_terms() -> None:
    assert required_terms({}) is None
    assert required_terms({"affinity": {"nodeAffinity": {}}}) is None
    assert required_terms(spec_with()) == []
    assert (
        required_terms(
            {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}}
        )
        == []
    )


CONFLICTS: list[tuple[str, Any, int | None]] = [
    ("In without the group excludes it", term(ex("dedicated", "In", "other")), 0),
    ("In with the group admits it", term(ex("dedicated", "In", "other", "g")), None),
    (
        "NotIn with the group excludes it",
        term(ex("zone", "Exists"), ex("dedicated", "NotIn", "g")),
        1,
    ),
    ("NotIn without the group admits it", term(ex("dedicated", "NotIn", "other")), None),
    ("Exists admits it", term(ex("dedicated", "Exists")), None),
    ("DoesNotExist excludes it", term(ex("dedicated", "DoesNotExist")), 0),
    ("Gt excludes a group that is not an integer", term(ex("dedicated", "Gt", "1")), 0),
    ("expressions on other keys are irrelevant", term(ex("zone", "In", "a")), None),
    ("an unknown operator is left to API validation", term(ex("dedicated", "Equals", "x")), None),
    (
        "the first excluding expression is reported",
        term(ex("dedicated", "In", "x"), ex("dedicated", "DoesNotExist")),
        0,
    ),
    ("an empty term has no conflicting expression", {}, None),
]


@pytest.mark.parametrize(("t", "index"), [c[1:] for c in CONFLICTS], ids=[c[0] for c in CONFLICTS])
def test_term_conflict_finds_what_excludes_the_group(t: Any, index: int | None) -> None:
    found = term_conflict(t, "dedicated", "g")
    assert (found[0] if found else None) == index


@pytest.mark.parametrize(
    ("op", "bound", "group", "excluded"),
    [
        ("Gt", "5", "7", False),
        ("Gt", "5", "3", True),
        ("Lt", "5", "3", False),
        ("Lt", "5", "5", True),
    ],
    ids=[
        "Gt 5 admits group 7",
        "Gt 5 excludes group 3",
        "Lt 5 admits group 3",
        "Lt 5 excludes group 5",
    ],
)
def test_gt_and_lt_compare_an_integer_group(
    op: str, bound: str, group: str, excluded: bool
) -> None:
    assert (
        term_conflict(term(ex("dedicated", op, bound)), "dedicated", group) is not None
    ) is excluded


REQ = {"key": "dedicated", "operator": "In", "values": ["g"]}

WITH: list[tuple[str, Any, Any]] = [
    (
        "the requirement is appended after the term's own expressions",
        term(ex("zone", "In", "a")),
        term(ex("zone", "In", "a"), REQ),
    ),
    ("a term that already has it is left alone", term(REQ, ex("zone", "Exists")), None),
    ("In [g, g] already says the same", term(ex("dedicated", "In", "g", "g")), None),
    (
        "a wider In [g, h] is narrowed",
        term(ex("dedicated", "In", "g", "h")),
        term(ex("dedicated", "In", "g", "h"), REQ),
    ),
    ("an empty term is not widened", {}, None),
    ("a term with empty lists is not widened", {"matchExpressions": [], "matchFields": []}, None),
    (
        "a term with only matchFields gets matchExpressions",
        term(fields=[ex("metadata.name", "In", "n1")]) | {"matchExpressions": None},
        {"matchExpressions": [REQ], "matchFields": [ex("metadata.name", "In", "n1")]},
    ),
    ("a term that is not an object is left alone", "junk", None),
    ("unreadable matchExpressions are left alone", {"matchExpressions": "junk"}, None),
]


@pytest.mark.parametrize(("t", "want"), [c[1:] for c in WITH], ids=[c[0] for c in WITH])
def test_with_requirement(t: Any, want: Any) -> None:
    assert with_requirement(t, "dedicated", "g") == want


def test_and_requirement_creates_one_term_when_there_is_no_affinity() -> None:
    assert and_requirement(None, "dedicated", "g") == {
        "nodeSelectorTerms": [{"matchExpressions": [REQ]}]
    }


def test_and_requirement_ands_into_every_term_and_never_adds_a_term() -> None:
    selector = {
        "nodeSelectorTerms": [
            term(ex("zone", "In", "a")),
            {},
            term(REQ),
            term(ex("arch", "In", "arm64"), ex("zone", "In", "b")),
        ]
    }
    result = and_requirement(selector, "dedicated", "g")
    assert result["nodeSelectorTerms"] == [
        term(ex("zone", "In", "a"), REQ),
        {},
        term(REQ),
        term(ex("arch", "In", "arm64"), ex("zone", "In", "b"), REQ),
    ]
    assert and_requirement(result, "dedicated", "g") == result


@pytest.mark.parametrize(
    "labels",
    [
        {"dedicated": "g", "zone": "a"},
        {"dedicated": "g", "zone": "b"},
        {"dedicated": "h", "zone": "a"},
        {"zone": "a"},
        {"dedicated": "g"},
    ],
    ids=["g in zone a", "g in zone b", "h in zone a", "unlabelled in zone a", "g without a zone"],
)
def test_anding_only_ever_narrows_placement_to_the_group(labels: dict[str, str]) -> None:
    terms = [term(ex("zone", "In", "a")), term(ex("zone", "In", "b"))]
    before = spec_with(*terms)
    after = spec_with(
        *and_requirement({"nodeSelectorTerms": terms}, "dedicated", "g")["nodeSelectorTerms"]
    )
    assert node_matches(labels, after) == (
        node_matches(labels, before) and labels.get("dedicated") == "g"
    )


def test_is_empty_term_and_term_has() -> None:
    assert is_empty_term({}) and is_empty_term(None) and not is_empty_term(term(REQ))
    assert term_has(term(REQ), "dedicated", "g") and not term_has(term(REQ), "dedicated", "h")


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (ex("dedicated", "In", "a", "b"), "dedicated In [a, b]"),
        (ex("gpu", "DoesNotExist"), "gpu DoesNotExist"),
        (ex("cores", "Gt", "8"), "cores Gt 8"),
    ],
    ids=["In lists its values", "DoesNotExist has none", "Gt shows its bound"],
)
def test_describe_expression(expr: dict[str, Any], text: str) -> None:
    assert describe_expression(expr) == text


MALFORMED: list[tuple[str, Any]] = [
    ("values that are not a list", term({"key": "a", "operator": "In", "values": "x"})),
    ("a field expression that is not an object", {"matchFields": ["junk"]}),
    ("matchExpressions that are not a list", {"matchExpressions": "junk"}),
]


@pytest.mark.parametrize("t", [c[1] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_a_malformed_term_matches_nothing(t: Any) -> None:
    assert not term_matches(t, {"a": "x"}, "n1")


def test_malformed_required_affinity_shapes() -> None:
    junk_required = {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "x"}}
    }
    assert required_terms(junk_required) == []
    assert not node_matches({}, junk_required)
    assert and_requirement({"nodeSelectorTerms": "x"}, "k", "v") == {"nodeSelectorTerms": "x"}


FAILURES: list[tuple[str, Any, dict[str, str], str, list[str]]] = [
    ("a matching term has no failure", term(ex("a", "In", "1")), {"a": "1"}, "", []),
    (
        "every failing expression of a term is named",
        term(ex("a", "In", "1"), ex("b", "Exists"), ex("c", "DoesNotExist")),
        {"a": "2", "c": "x"},
        "",
        [
            "a In [1]: the node has a=2",
            "b Exists: the node has no label b",
            "c DoesNotExist: the node has c=x",
        ],
    ),
    (
        "Gt says when the node's label is no integer",
        term(ex("cores", "Gt", "4")),
        {"cores": "lots"},
        "",
        ["cores Gt 4: the node's cores=lots is not an integer"],
    ),
    ("an empty term says it matches nothing", {}, {}, "", [EMPTY_TERM]),
    (
        "a malformed expression voids the term, and only that is said",
        term(ex("a", "Exists"), ex("b", "In")),
        {},
        "",
        ["b In is not a valid requirement, so the whole term matches no node"],
    ),
    (
        "matchFields names the node",
        term(fields=[ex("metadata.name", "In", "n1")]),
        {},
        "n2",
        ["matchFields metadata.name In [n1]: the node is named n2"],
    ),
    (
        "matchFields on another field says it is no node field",
        term(fields=[ex("spec.unschedulable", "In", "true")]),
        {},
        "n2",
        ["matchFields spec.unschedulable In [true]: spec.unschedulable is not a node field"],
    ),
    (
        "a malformed matchFields entry is named",
        term(fields=[ex("metadata.name", "Exists")]),
        {},
        "n1",
        ["matchFields metadata.name Exists is not valid (In or NotIn with one value)"],
    ),
]


@pytest.mark.parametrize(
    ("t", "labels", "name", "want"), [c[1:] for c in FAILURES], ids=[c[0] for c in FAILURES]
)
def test_term_failures_name_each_unmet_requirement(
    t: Any, labels: dict[str, str], name: str, want: list[str]
) -> None:
    assert term_failures(t, labels, name) == want


def test_selector_failures_name_every_missing_pair() -> None:
    spec = {"nodeSelector": {"disk": "ssd", "arch": "arm64", "os": "linux"}}
    assert selector_failures({"disk": "hdd", "os": "linux"}, spec) == [
        "nodeSelector disk=ssd: the node has disk=hdd",
        "nodeSelector arch=arm64: the node has no label arch",
    ]


def test_affinity_failures_are_per_term_and_none_without_required_affinity() -> None:
    assert affinity_failures({}, {}) is None
    spec = spec_with(term(ex("a", "Exists")), term(ex("b", "Exists")))
    assert affinity_failures({"b": "1"}, spec) == [["a Exists: the node has no label a"], []]
