"""``explain``'s answer for a pod, said in the scheduler's words, to compare with the real one.

The scheduler runs its filters in a fixed order (the default profile: NodeName,
NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, ...,
DynamicResources) and, per node, reports the first that fails; its FailedScheduling
message then counts nodes per reason. ``explain`` lists every unmet rule per node. So the
prediction for a node is the reason of its first unmet rule in the scheduler's order, and
for a pod the count of those over all nodes, which must equal
:func:`controlplane.harness.scheduling.reasons` of the real message.

Before the filters, NodeAffinity's pre-filter narrows the nodes to those named by
``matchFields`` ``metadata.name In`` in every required term; the rest are reported
together as not satisfying NodeAffinity (:func:`name_prefilter`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from controlplane.harness.cli import placement_webhooks
from controlplane.harness.components import ApiServer
from controlplane.harness.nodes import UNSCHEDULABLE
from controlplane.harness.scheduling import Outcome, reasons

WERE_UNSCHEDULABLE = "node(s) were unschedulable"
UNTOLERATED = "node(s) had untolerated taint(s)"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
PREFILTERED = "node(s) didn't satisfy plugin(s) [NodeAffinity]"
TERMS_CONFLICT = "pod affinity terms conflict"
TOO_MANY_PODS = "Too many pods"
CLAIMS = "cannot allocate all claims"

_REQUESTS = re.compile(r"^requests (\S+) ")


def name_prefilter(spec: Mapping[str, Any]) -> set[str] | None:
    """The node names NodeAffinity's pre-filter keeps for a pod spec, ``None`` for all.

    Every required term must name nodes (``matchFields`` ``metadata.name In``, intersected
    within a term); the union over terms is kept. One term without such a field keeps
    every node, as upstream's pre-filter does.
    """
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return None
    kept: set[str] = set()
    for term in terms:
        named: set[str] | None = None
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In":
                values = set(field.get("values") or [])
                named = values if named is None else named & values
        if named is None:
            return None
        kept |= named
    return kept


def node_reasons(fit: Mapping[str, Any], cordoned: bool) -> list[str]:
    """The scheduler's reasons for one node ``explain`` says the pod does not fit.

    ``fit`` is one entry of ``explain -o json``'s ``nodes``; ``cordoned``: the node has
    ``spec.unschedulable``, which NodeUnschedulable judges before any taint.
    """
    unmet = fit["unmet"]
    rules = {u["rule"] for u in unmet}
    taints = [u["message"] for u in unmet if u["rule"] == "taint"]
    if cordoned and any(f"taint {UNSCHEDULABLE}:" in m for m in taints):
        return [WERE_UNSCHEDULABLE]
    if taints:
        return [UNTOLERATED]
    if rules & {"nodeSelector", "nodeAffinity"}:
        return [AFFINITY]
    resources = [u["message"] for u in unmet if u["rule"] == "resources"]
    if resources:
        return [_insufficient(m) for m in resources]
    if "devices" in rules:
        return [CLAIMS]
    if unmet:
        raise ValueError(f"no scheduler reason known for {unmet}")
    return []


def _insufficient(message: str) -> str:
    found = _REQUESTS.match(message)
    if found is None:
        raise ValueError(f"not a resource message: {message!r}")
    name = found.group(1)
    return TOO_MANY_PODS if name == "pods" else f"Insufficient {name}"


def predicted_reasons(
    answer: Mapping[str, Any], spec: Mapping[str, Any], cordoned: Iterable[str]
) -> Counter[str]:
    """Nodes per reason the scheduler should report for a pod ``explain`` fits nowhere.

    ``answer`` is the pod's entry in ``explain -o json``, ``spec`` the stored pod's spec.
    """
    down = set(cordoned)
    kept = name_prefilter(spec)
    total = len(answer["nodes"])
    if kept is not None and not kept:
        return Counter({TERMS_CONFLICT: total})
    counted: Counter[str] = Counter()
    for fit in answer["nodes"]:
        if kept is not None and fit["node"] not in kept:
            counted[PREFILTERED] += 1
            continue
        for reason in node_reasons(fit, fit["node"] in down):
            counted[reason] += 1
    return counted


def explained(server: ApiServer, namespace: str, *args: str) -> dict[str, dict[str, Any]]:
    """``explain --kubeconfig -n NS -o json ARGS...`` on the namespace's pods, by pod name."""
    run = placement_webhooks(server, "explain", "-n", namespace, "-o", "json", *args)
    assert run.code in (0, 1), run.stderr
    return {answer["pod"].rsplit("/", 1)[1]: answer for answer in run.json()["pods"]}


def disagreements(
    answers: Mapping[str, Mapping[str, Any]],
    outcomes: Mapping[str, Outcome],
    stored: Mapping[str, Mapping[str, Any]],
    cordoned: Iterable[str] = (),
) -> list[str]:
    """Every pod on which ``explain`` and the scheduler differ, one line each.

    They agree on a pod when the scheduler bound it to a node explain fits it on, or found
    it unschedulable where explain fits it nowhere, with the reasons :func:`predicted_reasons`
    gives. Pods say what they are in their ``corpus/what`` annotation, quoted in the line.
    """
    down = set(cordoned)
    found = []
    for name, outcome in sorted(outcomes.items()):
        answer = answers[name]
        fits = answer["fits"]
        what = (stored[name]["metadata"].get("annotations") or {}).get("corpus/what", "")
        if outcome.bound:
            if outcome.node not in fits:
                found.append(f"{name} ({what}): bound to {outcome.node}, explain fits {fits}")
            continue
        if fits:
            found.append(f"{name} ({what}): unschedulable ({outcome.message}), explain fits {fits}")
            continue
        expected = predicted_reasons(answer, stored[name]["spec"], down)
        if reasons(outcome.message) != expected:
            found.append(
                f"{name} ({what}): the scheduler says {outcome.message!r}, "
                f"explain predicts {dict(expected)}"
            )
    return found
