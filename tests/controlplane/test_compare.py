"""The comparison's own rules, on the scheduler's real wording: a FailedScheduling message
read back into counts, and NodeAffinity's pre-filter of named nodes."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from controlplane.harness.compare import (
    AFFINITY,
    PREFILTERED,
    TERMS_CONFLICT,
    TOO_MANY_PODS,
    UNTOLERATED,
    WERE_UNSCHEDULABLE,
    name_prefilter,
    node_reasons,
    predicted_reasons,
)
from controlplane.harness.scheduling import reasons

PREEMPTION = " preemption: 0/14 nodes are available: 14 Preemption is not helpful for scheduling."


@pytest.mark.parametrize(
    ("message", "counted"),
    [
        (
            "0/14 nodes are available: 1 Too many pods, 4 node(s) had untolerated taint(s), "
            "9 Insufficient cpu." + PREEMPTION,
            {TOO_MANY_PODS: 1, UNTOLERATED: 4, "Insufficient cpu": 9},
        ),
        (
            "0/14 nodes are available: 1 Insufficient cpu, 13 node(s) didn't satisfy "
            "plugin(s) [NodeAffinity]." + PREEMPTION,
            {"Insufficient cpu": 1, PREFILTERED: 13},
        ),
        ("0/14 nodes are available: pod affinity terms conflict.", {TERMS_CONFLICT: 14}),
    ],
    ids=[
        "counts per reason, the preemption summary left out",
        "nodes the pre-filter dropped count as one reason",
        "a pre-filter's refusal of the whole pod stands for every node",
    ],
)
def test_a_failed_scheduling_message_is_read_as_nodes_per_reason(
    message: str, counted: dict[str, int]
) -> None:
    assert reasons(message) == Counter(counted)


def test_a_message_of_another_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="not a per-node"):
        reasons("binding rejected: node gone")


def _terms(*terms: dict[str, Any]) -> dict[str, Any]:
    required = {"nodeSelectorTerms": list(terms)}
    return {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    }


def _name(operator: str, name: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": operator, "values": [name]}


@pytest.mark.parametrize(
    ("spec", "kept"),
    [
        ({}, None),
        (_terms({"matchExpressions": [{"key": "a", "operator": "Exists"}]}), None),
        (
            _terms({"matchFields": [_name("In", "x")]}, {"matchFields": [_name("In", "y")]}),
            {"x", "y"},
        ),
        (_terms({"matchFields": [_name("In", "x")]}, {"matchExpressions": []}), None),
        (_terms({"matchFields": [_name("In", "x"), _name("In", "y")]}), set()),
        (_terms({"matchFields": [_name("NotIn", "x")]}), None),
    ],
    ids=[
        "no affinity keeps every node",
        "terms without names keep every node",
        "named nodes of every term are kept together",
        "one term without names keeps every node",
        "two names in one term keep none",
        "NotIn names no node to keep",
    ],
)
def test_the_name_prefilter(spec: dict[str, Any], kept: set[str] | None) -> None:
    assert name_prefilter(spec) == kept


def _fit(node: str, *unmet: tuple[str, str]) -> dict[str, Any]:
    return {"node": node, "fits": not unmet, "unmet": [{"rule": r, "message": m} for r, m in unmet]}


@pytest.mark.parametrize(
    ("fit", "cordoned", "said"),
    [
        (
            _fit(
                "c",
                ("taint", "taint node.kubernetes.io/unschedulable:NoSchedule is not tolerated"),
                ("nodeSelector", "x"),
            ),
            True,
            [WERE_UNSCHEDULABLE],
        ),
        (
            _fit("t", ("nodeAffinity", "x"), ("taint", "taint a=b:NoSchedule is not tolerated")),
            False,
            [UNTOLERATED],
        ),
        (
            _fit(
                "r",
                ("resources", "requests cpu 3, the node has 2 allocatable"),
                ("nodeSelector", "x"),
            ),
            False,
            [AFFINITY],
        ),
        (
            _fit(
                "r",
                ("resources", "requests cpu 3, the node has 2 allocatable"),
                ("resources", "requests pods 1, the node has 0 allocatable"),
            ),
            False,
            ["Insufficient cpu", TOO_MANY_PODS],
        ),
    ],
    ids=[
        "a cordon is judged before any taint",
        "a taint is judged before the labels",
        "the labels are judged before the resources",
        "every resource short is a reason of its own",
    ],
)
def test_a_node_is_refused_for_its_first_filter_in_the_schedulers_order(
    fit: dict[str, Any], cordoned: bool, said: list[str]
) -> None:
    assert node_reasons(fit, cordoned) == said


def test_nodes_outside_the_prefilter_are_counted_apart() -> None:
    answer = {
        "nodes": [
            _fit("x", ("resources", "requests cpu 3, the node has 2 allocatable")),
            _fit("y", ("nodeSelector", "x")),
            _fit("z", ("taint", "taint a:NoSchedule is not tolerated")),
        ]
    }
    spec = _terms({"matchFields": [_name("In", "x")]})
    assert predicted_reasons(answer, spec, ()) == Counter({"Insufficient cpu": 1, PREFILTERED: 2})
