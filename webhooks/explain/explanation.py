"""Everything ``explain`` answers, put together: placement on existing nodes, failover time,
scale-up through node templates, DaemonSet coverage, and the node failure simulation.

Why one module on top of the simulator (fit, failure) and the templates: the text and JSON
renderings, and the exit code, must describe one set of answers computed once, and the
pieces depend on each other (DaemonSets decide a template's overhead; only pods that fit
no node are tried on templates).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from webhooks.explain.coverage import Coverage, coverage, coverage_warnings, daemon_overhead
from webhooks.explain.failure import Failover, Rates, Simulation, failover, simulate
from webhooks.explain.fit import Placement, ScaleUp, place, scale_up
from webhooks.explain.nodes import Node
from webhooks.explain.pods import PodView
from webhooks.explain.templates import Template


@dataclass(frozen=True, slots=True)
class PodAnswer:
    """One pod: where it fits, how long it survives a node failure, and how it scales up.

    ``scale_up`` is ``None`` unless the pod fits no existing node and templates were given
    (DaemonSet pods and denied pods are never tried: neither makes a node scale up).
    """

    placement: Placement
    failover: tuple[Failover, ...]
    scale_up: ScaleUp | None = None

    @property
    def pod(self) -> PodView:
        """The pod; why a shortcut: every renderer starts from it."""
        return self.placement.pod

    @property
    def placeable(self) -> bool:
        """Admitted, and fits an existing node or a template can add one for it.

        Why a template counts: with an autoscaler, a node made for the pod is as good as one
        that is already there, which is what "will this run?" asks.
        """
        if self.pod.denied:
            return False
        return bool(self.placement.nodes) or bool(self.scale_up and self.scale_up.hosts)


@dataclass(frozen=True, slots=True)
class Explanation:
    """The whole answer: the inventory, each pod's answer, coverage and the simulation."""

    nodes: tuple[Node, ...]
    pods: tuple[PodAnswer, ...]
    simulation: Simulation | None
    rates: Rates = field(default_factory=Rates)
    templates: tuple[Template, ...] = ()
    coverage: tuple[Coverage, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def placements(self) -> tuple[Placement, ...]:
        """Each pod's placement on existing nodes, in input order; why: the simulation and
        older callers read placements alone."""
        return tuple(answer.placement for answer in self.pods)

    @property
    def exit_code(self) -> int:
        """1 when some pod is denied or fits neither a node nor a template, else 0.

        Why: a CI job that asks "will this run?" must fail when the answer is no, and must
        not fail for a pod an autoscaler will make room for.
        """
        return 0 if all(answer.placeable for answer in self.pods) else 1


def explain(
    nodes: Sequence[Node],
    pods: Sequence[PodView],
    rates: Rates,
    templates: Sequence[Template] = (),
) -> Explanation:
    """Place every pod, try templates for those that fit nowhere, check DaemonSet coverage,
    and simulate the failed nodes.

    Why DaemonSets first: what they request on a template's nodes is room the pod cannot
    have, as both autoscalers count it.
    """
    daemons = [p for p in pods if p.daemon and not p.denied]
    overheads = {
        t.title: daemon_overhead(daemons, t) for t in templates if t.kind != "ResourceFlavor"
    }
    answers = []
    for pod in pods:
        placement = place(pod, nodes)
        up = None
        if templates and not placement.nodes and not pod.daemon and not pod.denied:
            up = scale_up(pod, templates, overheads, nodes)
        answers.append(PodAnswer(placement, failover(pod, rates.node_monitor_grace_period), up))
    found = coverage(daemons, nodes, templates)
    return Explanation(
        nodes=tuple(nodes),
        pods=tuple(answers),
        simulation=simulate(nodes, pods, rates),
        rates=rates,
        templates=tuple(templates),
        coverage=found,
        warnings=coverage_warnings(found),
    )
