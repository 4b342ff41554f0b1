"""The corpus and the comparison on their own (no API server): reproducible, reaching every
pool, and comparing exactly what docs/conformance.md says it compares."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.controlplane.differential.corpus import (
    ANTI_AFFINITY_KEYS,
    RUNTIME_CLASS_NAMES,
    TOLERATIONS,
    Observed,
    cases,
    compare,
    denial_text,
    observe,
    updated,
)


def _dump(seed: int) -> list[str]:
    return [
        json.dumps([c.id, c.namespace, c.request.pod, c.request.update]) for c in cases(seed, 200)
    ]


def test_the_same_seed_gives_the_same_corpus_and_another_seed_another() -> None:
    assert _dump(20) == _dump(20)
    assert _dump(20) != _dump(21)


def test_the_corpus_reaches_every_pool() -> None:
    text = "\n".join(_dump(20) + _dump(25))
    for toleration in TOLERATIONS:
        assert json.dumps(toleration) in text, toleration
    for name in RUNTIME_CLASS_NAMES:
        assert f'"runtimeClassName": "{name}"' in text, name
    for key in ANTI_AFFINITY_KEYS:
        assert f'"topologyKey": "{key}"' in text, key
    corpus = list(cases(20, 330))
    assert sum(c.request.operation == "UPDATE" for c in corpus) > 50
    assert sum("generateName" in c.request.pod["metadata"] for c in corpus) > 10


def test_an_update_is_built_from_what_was_stored() -> None:
    stored = {"metadata": {"name": "p"}, "spec": {"containers": [{"image": "a"}]}}
    edit = {"addTolerations": [{"key": "x", "operator": "Exists"}], "labels": {"t": "1"}}
    pod = updated(stored, edit)
    assert pod["spec"]["tolerations"] == [{"key": "x", "operator": "Exists"}]
    assert pod["metadata"]["labels"] == {"t": "1"}
    assert "tolerations" not in stored["spec"]  # the stored object is left alone


def _pod(**spec: Any) -> dict[str, Any]:
    return {"kind": "Pod", "spec": spec}


ADMITTED = observe("create", 201, _pod(tolerations=[{"key": "a"}, {"key": "b"}]))
REFUSED = observe("create", 403, {"kind": "Status", "message": 'pods "p" is forbidden: no'})

COMPARISONS = [
    pytest.param(ADMITTED, ADMITTED, [], id="the same answer differs in nothing"),
    pytest.param(
        ADMITTED,
        observe("create", 201, _pod(tolerations=[{"key": "b"}, {"key": "a"}])),
        ["tolerations"],
        id="the same tolerations in another order differ",
    ),
    pytest.param(
        ADMITTED,
        observe("create", 201, _pod(tolerations=[{"key": "a"}, {"key": "b"}], overhead={})),
        ["overhead"],
        id="a stored field present on one side differs",
    ),
    pytest.param(
        REFUSED,
        observe(
            "create",
            403,
            {
                "kind": "Status",
                "message": 'admission webhook "m.x" denied the request: pods "p" is forbidden: no',
            },
        ),
        [],
        id="a webhook's frame around the same refusal is not a difference",
    ),
    pytest.param(
        REFUSED,
        observe("create", 500, {"kind": "Status", "message": 'pods "p" is forbidden: no'}),
        ["code"],
        id="the same words with another status code differ",
    ),
    pytest.param(ADMITTED, REFUSED, ["allowed", "code", "message"], id="admitted and refused"),
    pytest.param(
        ADMITTED,
        Observed("update", True, 200, "", ADMITTED.stored),
        ["stage"],
        id="an answer at another stage differs",
    ),
]


@pytest.mark.parametrize(("reference", "other", "fields"), COMPARISONS)
def test_compare_names_what_differs(
    reference: Observed, other: Observed, fields: list[str]
) -> None:
    assert compare(reference, other) == fields


def test_a_generated_name_is_compared_as_generated() -> None:
    message = 'pods "g3-x7k2q" is forbidden: no'
    assert denial_text(message, "g3-") == 'pods "<generated>" is forbidden: no'
