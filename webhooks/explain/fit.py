"""A pod against a node: the scheduler's filters, and what NoExecute taints mean for it.

Why apart from the inventory and the failure simulation: this is the question "where can
this pod run?", asked of each node; the simulation asks it again of failed nodes before
their failure. Following upstream:

* **Placement** — the scheduler's filters for taints (NoSchedule and NoExecute taints the
  pod does not tolerate; scheduler matching, spec §1d), ``spec.nodeName``, the nodeSelector
  and required node affinity (terms ORed, expressions ANDed), and resource requests against
  the node's allocatable. PreferNoSchedule taints the pod does not tolerate are reported
  apart: the node is a poor choice, not an impossible one.
* **NoExecute** (the taint eviction controller) — for every NoExecute taint on the node the
  *first* toleration in the pod's list that tolerates it is the one used; a taint none
  tolerates means eviction at once; otherwise the smallest ``tolerationSeconds`` of the
  used tolerations counts (zero or negative: at once); used tolerations without seconds
  never evict.

Simplified (the command's help says the same): capacity ignores the pods already running on
a node, and a node whose inventory has no ``status.allocatable`` is assumed to have room.
Inter-pod affinity and anti-affinity, topology spread, volumes, host ports and scheduling
gates are not modelled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from webhooks.explain.nodes import Node, Taint
from webhooks.explain.pods import PodView, pod_requests, show_quantity, toleration_seconds
from webhooks.explain.reasons import Unmet
from webhooks.k8s.affinity import affinity_failures, selector_failures
from webhooks.k8s.tolerations import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    describe,
    identity,
    tolerates,
)

Outcome = Literal["none", "at-once", "after", "never"]


@dataclass(frozen=True, slots=True)
class Tolerated:
    """A NoSchedule or NoExecute taint the pod tolerates, and the toleration that does it."""

    taint: str
    toleration: str
    added: bool


@dataclass(frozen=True, slots=True)
class NoExecuteVerdict:
    """What the node's NoExecute taints mean for a pod running there.

    ``none``: the node has no NoExecute taint; ``at-once``; ``after`` ``seconds``; ``never``.
    """

    outcome: Outcome
    seconds: int | None = None
    reason: str = ""


def no_execute(
    tolerations: Sequence[Mapping[str, Any]], taints: Iterable[Taint]
) -> NoExecuteVerdict:
    """When the taint eviction controller evicts a pod from a node with ``taints``.

    Why the first matching toleration per taint, and seconds only from those: that is how
    upstream picks the tolerations it uses, so a later toleration with seconds does not
    shorten an earlier one without.
    """
    used: list[tuple[Taint, Mapping[str, Any]]] = []
    for taint in taints:
        if taint.effect != NO_EXECUTE:
            continue
        match = next((t for t in tolerations if tolerates(t, taint.as_dict())), None)
        if match is None:
            return NoExecuteVerdict("at-once", 0, f"{taint} is not tolerated")
        used.append((taint, match))
    if not used:
        return NoExecuteVerdict("none")
    timed = [(s, taint, t) for taint, t in used if (s := toleration_seconds(t)) is not None]
    if not timed:
        shown = ", ".join(_used(t, taint) for taint, t in used)
        return NoExecuteVerdict("never", None, f"{shown}: no tolerationSeconds")
    seconds, taint, toleration = min(timed, key=lambda item: item[0])
    return NoExecuteVerdict(
        "at-once" if seconds <= 0 else "after", max(seconds, 0), _used(toleration, taint)
    )


def _used(toleration: Mapping[str, Any], taint: Taint) -> str:
    shown = f"toleration {describe(toleration)}"
    return shown if identity(toleration)[0] == taint.key else f"{shown} for {taint}"


@dataclass(frozen=True, slots=True)
class Fit:
    """Whether a pod can be placed on one node, and every reason it cannot."""

    node: str
    unmet: tuple[Unmet, ...]
    tolerated: tuple[Tolerated, ...] = ()
    prefer_no_schedule: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    no_execute: NoExecuteVerdict = NoExecuteVerdict("none")

    @property
    def fits(self) -> bool:
        """No requirement is unmet; why a property: the unmet list is the single truth."""
        return not self.unmet


def _source(taint: Taint) -> str:
    return f" (added: {taint.source})" if taint.source else ""


def fit(pod: PodView, node: Node) -> Fit:
    """Check ``pod`` against ``node`` the way the scheduler's filters do.

    Why every reason rather than the first: the operator fixing a manifest needs the whole
    list, and counting them is how the closest node is chosen when none fits.
    """
    tolerations = pod.tolerations
    verdict = no_execute(tolerations, node.taints)
    pinned = pod.node_name
    if pinned and pinned != node.name:
        other = Unmet("nodeName", f"spec.nodeName is {pinned}, so the pod runs only there")
        return Fit(node.name, (other,), no_execute=verdict)
    unmet: list[Unmet] = []
    tolerated: list[Tolerated] = []
    prefer: list[str] = []
    ignored: list[str] = []
    for taint in node.taints:
        if taint.effect not in (NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE):
            continue  # the scheduler filters on these effects only
        match = next((t for t in tolerations if tolerates(t, taint.as_dict())), None)
        if match is not None:
            if taint.effect != PREFER_NO_SCHEDULE:
                tolerated.append(Tolerated(str(taint), describe(match), pod.was_added(match)))
        elif taint.effect == PREFER_NO_SCHEDULE:
            prefer.append(f"{taint}{_source(taint)}")
        elif taint.effect == NO_SCHEDULE and pinned:
            ignored.append(f"{taint}{_source(taint)}")
        else:
            unmet.append(Unmet("taint", f"taint {taint} is not tolerated{_source(taint)}"))
    unmet.extend(Unmet("nodeSelector", m) for m in selector_failures(node.labels, pod.spec))
    terms = affinity_failures(node.labels, pod.spec, node.name)
    if terms is not None and not any(not failures for failures in terms):
        if not terms:
            unmet.append(Unmet("nodeAffinity", "required node affinity has no terms: no node"))
        else:
            best = min(range(len(terms)), key=lambda i: len(terms[i]))
            prefix = "" if len(terms) == 1 else f"term {best} of {len(terms)} (closest): "
            unmet.extend(Unmet("nodeAffinity", prefix + m) for m in terms[best])
    if node.allocatable is not None:
        for name, amount in sorted(pod_requests(pod.spec).items()):
            have = node.allocatable.get(name, Decimal(0))
            if amount > 0 and amount > have:
                unmet.append(
                    Unmet(
                        "resources",
                        f"requests {name} {show_quantity(name, amount)}, "
                        f"the node has {show_quantity(name, have)} allocatable",
                    )
                )
    return Fit(node.name, tuple(unmet), tuple(tolerated), tuple(prefer), tuple(ignored), verdict)


@dataclass(frozen=True, slots=True)
class Placement:
    """A pod against every node: the fits in inventory order, and the closest when none fit."""

    pod: PodView
    fits: tuple[Fit, ...]

    @property
    def nodes(self) -> list[str]:
        """Names of the nodes the pod fits, in inventory order; why: the report leads with it."""
        return [f.node for f in self.fits if f.fits]

    @property
    def closest(self) -> Fit | None:
        """The node with the fewest unmet requirements, when no node fits.

        On a tie, the node with fewer resource shortfalls wins, then the first listed. Why:
        a missing toleration or label is fixed in the manifest, while a node without the
        GPUs or memory asked for cannot be made to fit by editing the pod.
        """
        if not self.fits or self.nodes:
            return None
        return min(
            self.fits,
            key=lambda f: (len(f.unmet), sum(u.rule == "resources" for u in f.unmet)),
        )


def place(pod: PodView, nodes: Sequence[Node]) -> Placement:
    """Check ``pod`` against every node, in inventory order.

    Why inventory order: ties for the closest node go to the first listed, predictably.
    """
    return Placement(pod, tuple(fit(pod, node) for node in nodes))
