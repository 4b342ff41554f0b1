"""The CEL builders whose correctness rests on an argument rather than on the API server alone.

MergeTolerations (spec §1c) keeps an element unless one *already kept* is a superset of it,
which is recursive and has no CEL form; :func:`webhooks.export.cel.merge_variables` uses a
non-recursive equivalent that holds because the superset relation is transitive. Both facts
are checked here on every toleration over a small alphabet that covers each branch of the
superset test (empty key, each operator, values, effects, seconds absent, zero or positive).
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from webhooks.export import cel
from webhooks.k8s.tolerations import facts, is_superset, merge

FIELDS = {
    "key": ("", "a"),
    "operator": ("", "Equal", "Exists", "Lt"),
    "value": ("", "x"),
    "effect": ("", "NoExecute", "NoSchedule"),
    "tolerationSeconds": (None, 0, 5),
}


def _alphabet() -> list[dict[str, Any]]:
    out = []
    for values in itertools.product(*FIELDS.values()):
        out.append({k: v for k, v in zip(FIELDS, values, strict=True) if v not in ("", None)})
    return out


ALPHABET = _alphabet()


def non_recursive_merge(combined: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the CEL computes: drop ``i`` when a later non-identical element dominates it, or
    when an earlier element that nothing later dominates is a superset of it."""
    n = len(combined)
    dominated = [
        any(
            k > i
            and facts(combined[k]) != facts(combined[i])
            and is_superset(combined[k], combined[i])
            for k in range(n)
        )
        for i in range(n)
    ]
    return [
        combined[i]
        for i in range(n)
        if not dominated[i]
        and not any(not dominated[j] and is_superset(combined[j], combined[i]) for j in range(i))
    ]


def test_the_superset_relation_is_transitive_on_every_triple() -> None:
    supersets = {
        (i, j) for i, a in enumerate(ALPHABET) for j, b in enumerate(ALPHABET) if is_superset(a, b)
    }
    for i, j in supersets:
        for k in range(len(ALPHABET)):
            if (j, k) in supersets:
                assert (i, k) in supersets, (ALPHABET[i], ALPHABET[j], ALPHABET[k])


@pytest.mark.parametrize("seed", range(4))
def test_the_non_recursive_merge_is_upstream_s_merge(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(5000):
        combined = [rng.choice(ALPHABET) for _ in range(rng.randint(0, 7))]
        assert non_recursive_merge(combined) == merge(combined, [])


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        pytest.param("plain", "'plain'", id="plain text is quoted"),
        pytest.param("it's", "'it\\'s'", id="a quote is escaped"),
        pytest.param("a\\b", "'a\\\\b'", id="a backslash is escaped"),
        pytest.param("line\nbreak", "'line\\nbreak'", id="a newline is escaped"),
        pytest.param("\x01", "'\\u0001'", id="a control character is escaped"),
    ],
)
def test_config_text_becomes_a_cel_literal_that_cannot_end_early(text: str, literal: str) -> None:
    assert cel.quote(text) == literal


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param({}, "true", id="the empty selector matches everything"),
        pytest.param(
            {"matchLabels": {"env": "prod"}},
            "(('env' in L && L['env'] == 'prod'))",
            id="matchLabels",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]},
            "((!('tier' in L) || !(L['tier'] in ['a'])))",
            id="NotIn holds for a missing label",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
            "(!('tier' in L))",
            id="DoesNotExist",
        ),
    ],
)
def test_label_selectors_become_cel_over_a_label_map(
    selector: dict[str, Any], expected: str
) -> None:
    assert cel.selector_matches(selector, "L") == expected
