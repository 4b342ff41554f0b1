"""DaemonSet coverage: which DaemonSets among the inputs run on a tainted node or a template.

A node that joins without its device plugin, CNI agent or monitoring agent is of little
use, and nothing says so until it happens (karpenter#1749). For each tainted existing
node and each template this lists the DaemonSets that run there and why the others do
not. A DaemonSet is judged by its pod as admission stores it, the DaemonSet controller's
default tolerations included. On a NodePool it runs when it tolerates the template
``taints`` and its nodeSelector and affinity are compatible with the pool, as Karpenter
counts DaemonSet overhead; a startup taint it does not tolerate only delays it. On a node
or a node group the scheduler's filters decide, allocatable included. What the DaemonSets
that run on a template request is room a pending pod cannot have.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Final, Literal

from webhooks.explain.fit import fit, requirement_unmet, startup_untolerated, taint_fit
from webhooks.explain.nodes import Node
from webhooks.explain.pods import PodView, pod_requests
from webhooks.explain.reasons import Unmet
from webhooks.explain.templates import Template
from webhooks.k8s.tolerations import NO_EXECUTE, NO_SCHEDULE


@dataclass(frozen=True, slots=True)
class DaemonRun:
    """Whether one DaemonSet runs on a node or template, why not, and what delays it.

    ``selected`` is False when the DaemonSet's own nodeSelector, node affinity or nodeName
    keeps it off: it targets other nodes, so its absence is a choice, not an accident.
    """

    daemon_set: str
    runs: bool
    reasons: tuple[str, ...] = ()
    waits_for: tuple[str, ...] = ()
    selected: bool = True


TargetKind = Literal["Node", "NodePool", "NodeGroup"]


@dataclass(frozen=True, slots=True)
class Coverage:
    """The DaemonSets among the inputs that run on one tainted node or template."""

    target: str
    kind: TargetKind
    taints: tuple[str, ...]
    daemon_sets: tuple[DaemonRun, ...]

    @property
    def missing(self) -> list[DaemonRun]:
        """DaemonSets that do not run there; why: each one is a warning on a template."""
        return [d for d in self.daemon_sets if not d.runs]


def daemon_name(pod: PodView) -> str:
    """``DaemonSet ns/name`` for a DaemonSet's pod; why: coverage names the object to fix."""
    return pod.subject.removeprefix("pods of ")


#: Unmet rules that are the DaemonSet's own choice of nodes.
_SELECTING: Final = ("nodeSelector", "nodeAffinity", "nodeName")


def _daemon_run(pod: PodView, unmet: Sequence[Unmet], startup: Sequence[str]) -> DaemonRun:
    reasons = tuple(u.message for u in unmet)
    selected = not any(u.rule in _SELECTING for u in unmet)
    waits = () if reasons else tuple(f"startup taint {t}" for t in startup)
    return DaemonRun(daemon_name(pod), not reasons, reasons, waits, selected)


def _daemon_on_pool(pod: PodView, template: Template) -> DaemonRun:
    # Taints and labels only: a DaemonSet's pods ignore a PreferNoSchedule preference, and
    # Karpenter counts their requests as overhead rather than against the pool's limits.
    unmet = [*taint_fit(pod, template.taints).unmet, *requirement_unmet(pod, template)]
    return _daemon_run(pod, unmet, startup_untolerated(pod, template))


def _daemon_on_node(pod: PodView, node: Node, startup: Sequence[str] = ()) -> DaemonRun:
    return _daemon_run(pod, fit(pod, node).unmet, startup)


def daemon_runs(pod: PodView, target: Node | Template) -> DaemonRun:
    """Whether the DaemonSet whose pod is ``pod`` runs on ``target``, and why not.

    Why the admitted pod: the DaemonSet controller adds its default tolerations, and
    admission (extended-resource-toleration, dedicated-nodes) may add more; what the
    manifest says alone would be the wrong answer.
    """
    if isinstance(target, Node):
        return _daemon_on_node(pod, target)
    if target.kind == "NodePool":
        return _daemon_on_pool(pod, target)
    return _daemon_on_node(pod, target.node(), startup_untolerated(pod, target))


def daemon_overhead(daemons: Sequence[PodView], template: Template) -> dict[str, Decimal]:
    """What the DaemonSets that run on ``template`` request, summed per resource.

    Why: a new node must hold them as well as the pod, as both autoscalers count it.
    """
    total: dict[str, Decimal] = {}
    for daemon in daemons:
        if daemon_runs(daemon, template).runs:
            for name, amount in pod_requests(daemon.spec).items():
                total[name] = total.get(name, Decimal(0)) + amount
    return total


def _is_tainted(node: Node) -> bool:
    return any(t.effect in (NO_SCHEDULE, NO_EXECUTE) for t in node.taints)


def coverage(
    daemons: Sequence[PodView], nodes: Sequence[Node], templates: Sequence[Template]
) -> tuple[Coverage, ...]:
    """For each tainted node, then each template, which of ``daemons`` run there.

    Why tainted nodes only: an untainted node takes every DaemonSet its selectors allow,
    and taints are what keep a device plugin or a CNI agent off a node by accident.
    """
    return (*node_coverage(daemons, nodes), *template_coverage(daemons, templates))


def node_coverage(daemons: Sequence[PodView], nodes: Sequence[Node]) -> Iterator[Coverage]:
    """:func:`coverage` of the tainted nodes, one node at a time.

    Why a generator: an entry lists every DaemonSet, so all of them together hold
    DaemonSets × nodes answers; a renderer needs one entry at a time.
    """
    if not daemons:
        return
    for node in (n.healthy() for n in nodes):
        if _is_tainted(node):
            yield Coverage(
                f"node {node.name}",
                "Node",
                tuple(str(t) for t in node.taints),
                tuple(daemon_runs(d, node) for d in daemons),
            )


def template_coverage(
    daemons: Sequence[PodView], templates: Sequence[Template]
) -> tuple[Coverage, ...]:
    """:func:`coverage` of the templates; why apart: only these carry warnings."""
    if not daemons:
        return ()
    out: list[Coverage] = []
    for template in templates:
        if template.kind == "ResourceFlavor":
            continue  # a flavor is no node of its own: its nodes are listed as nodes
        kind: TargetKind = "NodePool" if template.kind == "NodePool" else "NodeGroup"
        out.append(
            Coverage(
                template.title,
                kind,
                tuple(str(t) for t in template.taints)
                + tuple(f"{t} (startup)" for t in template.startup_taints),
                tuple(daemon_runs(d, template) for d in daemons),
            )
        )
    return tuple(out)


def coverage_warnings(found: Sequence[Coverage]) -> tuple[str, ...]:
    """One warning per template and DaemonSet that would run there but for a taint or its
    size, naming both.

    Why templates only: a node that exists shows its DaemonSets running or not; a template
    shows nothing until the node joins without them and is of no use. Why not for a
    DaemonSet whose own nodeSelector or affinity excludes the template: it targets other
    nodes by design (a GPU device plugin on CPU pools), and warning about every such pair
    would drown the accidental ones.
    """
    return tuple(
        f"{c.target} is not covered by {d.daemon_set}: {'; '.join(d.reasons)}"
        for c in found
        if c.kind != "Node"
        for d in c.missing
        if d.selected
    )
