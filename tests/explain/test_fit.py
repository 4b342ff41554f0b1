"""One fit for nodes and templates: a taint and a selector read the same wherever they are."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from webhooks.explain.fit import fit
from webhooks.explain.nodes import Node, Taint, parse_node
from webhooks.explain.pods import PodView
from webhooks.explain.templates import Template, parse_template

Target = Node | Template

TARGETS: list[tuple[str, Callable[[tuple[Taint, ...], dict[str, str]], Target]]] = [
    ("a node", lambda taints, labels: Node("n", labels, taints)),
    (
        "a node group",
        lambda taints, labels: Template("NodeGroup", "ng", labels=labels, taints=taints),
    ),
    (
        "a NodePool",
        lambda taints, labels: Template("NodePool", "pool", labels=labels, taints=taints),
    ),
]


def pod(tolerations: list[dict[str, str]] | None = None, **spec: Any) -> PodView:
    body: dict[str, Any] = {"containers": [{"name": "c"}], **spec}
    if tolerations is not None:
        body["tolerations"] = tolerations
    return PodView(subject="Pod default/p", spec=body)


#: (id, taint, tolerations, unmet rules, tolerated taints, poor-choice taints)
TAINTS: list[tuple[str, Taint, list[dict[str, str]], list[str], list[str], list[str]]] = [
    (
        "an untolerated NoSchedule taint refuses",
        Taint("a", "", "NoSchedule"),
        [],
        ["taint"],
        [],
        [],
    ),
    ("an untolerated NoExecute taint refuses", Taint("a", "", "NoExecute"), [], ["taint"], [], []),
    (
        "an untolerated PreferNoSchedule taint is a poor choice, not a refusal",
        Taint("a", "", "PreferNoSchedule"),
        [],
        [],
        [],
        ["a:PreferNoSchedule"],
    ),
    (
        "a tolerated NoSchedule taint is listed with its toleration",
        Taint("a", "1", "NoSchedule"),
        [{"key": "a", "operator": "Exists"}],
        [],
        ["a=1:NoSchedule"],
        [],
    ),
    # Upstream's TaintToleration filter looks for an untolerated taint among NoSchedule and
    # NoExecute ones only (FindMatchingUntoleratedTaint with DoNotScheduleTaintsFilterFunc),
    # and scores PreferNoSchedule only: any other effect neither refuses nor scores.
    (
        "a taint with an effect the scheduler does not filter on is skipped",
        Taint("a", "", "NoEvict"),
        [],
        [],
        [],
        [],
    ),
    ("a taint with an empty effect is skipped", Taint("a", "", ""), [], [], [], []),
    (
        "a skipped taint is not listed as tolerated either",
        Taint("a", "", "NoEvict"),
        [{"operator": "Exists"}],
        [],
        [],
        [],
    ),
]


@pytest.mark.parametrize(
    ("target", "taint", "tolerations", "unmet", "tolerated", "poor"),
    [(t[1], *c[1:]) for t in TARGETS for c in TAINTS],
    ids=[f"{t[0]}: {c[0]}" for t in TARGETS for c in TAINTS],
)
def test_a_taint_is_judged_the_same_on_nodes_and_templates(
    target: Callable[[tuple[Taint, ...], dict[str, str]], Target],
    taint: Taint,
    tolerations: list[dict[str, str]],
    unmet: list[str],
    tolerated: list[str],
    poor: list[str],
) -> None:
    found = fit(pod(tolerations), target((taint,), {}))
    assert [u.rule for u in found.unmet] == unmet
    assert [t.taint for t in found.tolerated] == tolerated
    assert list(found.prefer_no_schedule) == poor


@pytest.mark.parametrize(
    ("target", "selector", "rules"),
    [
        (t[1], *c)
        for t in TARGETS
        for c in (({"team": "ml"}, []), ({"team": "web"}, ["nodeSelector"]))
    ],
    ids=[
        f"{t[0]}: {c}"
        for t in TARGETS
        for c in ("a matching nodeSelector fits", "another value does not")
    ],
)
def test_a_node_selector_is_judged_the_same_on_nodes_and_templates(
    target: Callable[[tuple[Taint, ...], dict[str, str]], Target],
    selector: dict[str, str],
    rules: list[str],
) -> None:
    found = fit(pod(nodeSelector=selector), target((), {"team": "ml"}))
    assert [u.rule for u in found.unmet] == rules


def _node_object(effect: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "spec": {"taints": [{"key": "a", "effect": effect}]},
    }


def test_a_node_and_a_node_group_read_from_documents_skip_an_unknown_effect_alike() -> None:
    # The API server refuses such a taint on a Node, but an inventory file may hold one;
    # the scheduler would not filter on it, so neither do we.
    as_node = fit(pod(), parse_node(_node_object("NoEvict")))
    as_group = fit(pod(), parse_template(_node_object("NoEvict")))
    assert as_node.fits and as_group.fits
    assert not fit(pod(), parse_node(_node_object("NoSchedule"))).fits
    assert not fit(pod(), parse_template(_node_object("NoSchedule"))).fits


@pytest.mark.parametrize(
    "template",
    [
        Template("NodeGroup", "ng", taints=(Taint("a", "", "NoSchedule"),)),
        Template("NodePool", "ng", taints=(Taint("a", "", "NoSchedule"),)),
    ],
    ids=["a node group", "a NodePool"],
)
def test_a_pod_bound_by_node_name_gets_no_new_node_even_from_a_template_of_that_name(
    template: Template,
) -> None:
    # spec.nodeName bypasses the scheduler, and the autoscalers act only on pods the
    # scheduler found no room for; a new node is never the bound node.
    found = fit(pod(nodeName="ng"), template)
    assert [u.rule for u in found.unmet] == ["nodeName", "taint"]
    assert found.unmet[0].message == "spec.nodeName is ng, so no new node is made for it"
    assert not found.ignored


def test_a_fit_names_a_node_bare_and_a_template_by_its_title() -> None:
    assert fit(pod(), Node("gpu", {}, ())).name == "gpu"
    assert fit(pod(), Template("NodePool", "gpu")).name == "NodePool gpu"
    assert fit(pod(), Template("NodeGroup", "gpu")).name == "node group gpu"
