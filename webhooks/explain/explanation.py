"""Everything ``explain`` answers, put together: placement on existing nodes, failover time,
scale-up through node templates, DaemonSet coverage, and the node failure simulation.

Why one module on top of the simulator (fit, failure) and the templates: the text and JSON
renderings, and the exit code, must describe one set of answers computed once, and the
pieces depend on each other (DaemonSets decide a template's overhead; only pods that fit
no node are tried on templates).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from webhooks.explain.coverage import (
    Coverage,
    coverage_warnings,
    daemon_overhead,
    node_coverage,
    template_coverage,
)
from webhooks.explain.failure import Failover, Rates, Simulation, failover, simulate
from webhooks.explain.fit import Placement, ScaleUp, place, scale_up
from webhooks.explain.nodes import Node
from webhooks.explain.pods import PodView
from webhooks.explain.queues import Queues
from webhooks.explain.templates import Template


@dataclass(frozen=True, slots=True)
class PodAnswer:
    """One pod: where it fits, how long it survives a node failure, and how it scales up.

    ``scale_up`` is ``None`` unless the pod fits no existing node and templates were given
    (DaemonSet pods and denied pods are never tried: neither makes a node scale up).
    ``suspended`` says why Kueue holds the workload for good, when it does.
    """

    placement: Placement
    failover: tuple[Failover, ...]
    scale_up: ScaleUp | None = None
    suspended: str = ""

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
        if self.pod.denied or self.suspended:
            return False
        return bool(self.placement.nodes) or bool(self.scale_up and self.scale_up.hosts)


#: The most pod–node pairs one ``explain`` run places: 5,000,000. Why this number: each pair
#: is one fit (taints, labels, resources, devices) and a line or an object of output, about
#: 25-50 microseconds, so the default is a few minutes of work, and covers every pod of a
#: 1,000-pod workload set against a 5,000-node inventory (Kubernetes' largest supported
#: cluster). Memory does not grow with the pairs (:meth:`Explanation.answers`); time does,
#: and a run that would take hours is refused up front, naming this limit
#: (``explain --max-pairs`` raises it).
MAX_PAIRS = 5_000_000


class TooManyPairs(ValueError):
    """More pod–node pairs than the limit; the message names the counts and the limit."""


def check_pairs(pods: int, nodes: int, limit: int = MAX_PAIRS) -> None:
    """Raise :class:`TooManyPairs` when ``pods`` × ``nodes`` is over ``limit``.

    Why before any work: the answer would take time in proportion to the pairs, and a
    refusal after minutes of it helps nobody.
    """
    pairs = pods * nodes
    if pairs > limit:
        raise TooManyPairs(
            f"{pods:,} pods × {nodes:,} nodes is {pairs:,} pod-node pairs, over the limit of "
            f"{limit:,} (--max-pairs): each pair is placed and reported, so this would take "
            "too long; explain fewer pods or nodes at a time, or raise --max-pairs"
        )


@dataclass(frozen=True, slots=True)
class Explanation:
    """The whole answer: the inventory, each pod's answer, coverage and the simulation.

    Why each pod's answer is computed when asked for (:meth:`answers`) and not kept: it
    holds a fit per node, so keeping them all costs memory in proportion to pods × nodes
    (about 2 KB a pair), while a renderer needs one at a time. ``admitted`` are the pods as
    admission left them, the input of every answer. ``queues`` are Kueue's queues, and
    ``queue_warnings`` what could not be told about them.
    """

    nodes: tuple[Node, ...]
    admitted: tuple[PodView, ...]
    simulation: Simulation | None
    rates: Rates = field(default_factory=Rates)
    templates: tuple[Template, ...] = ()
    template_coverage: tuple[Coverage, ...] = ()
    warnings: tuple[str, ...] = ()
    overheads: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)
    queues: Queues = field(default_factory=Queues)
    queue_warnings: tuple[str, ...] = ()

    def answers(self) -> Iterator[PodAnswer]:
        """Each pod's answer in input order, computed as it is asked for and not kept.

        Why a generator: a renderer writes one pod's answer and drops it before the next is
        computed, so memory follows the nodes (one answer) and the pods (their views), never
        their product.
        """
        for pod in self.admitted:
            yield answer(pod, self.nodes, self.templates, self.overheads, self.rates, self.queues)

    def coverage_entries(self) -> Iterator[Coverage]:
        """DaemonSet coverage: each tainted node's entry, computed as asked for, then each
        template's (kept, as the warnings come from them).

        Why a generator: as :meth:`answers`; each node's entry lists every DaemonSet.
        """
        yield from node_coverage(self.daemons, self.nodes)
        yield from self.template_coverage

    @property
    def daemons(self) -> list[PodView]:
        """The DaemonSets' pods that admission let through; why: coverage is theirs."""
        return [p for p in self.admitted if p.daemon and not p.denied]

    @property
    def coverage(self) -> tuple[Coverage, ...]:
        """Every coverage entry, all kept: for callers with a few nodes (tests, scripts)."""
        return tuple(self.coverage_entries())

    @property
    def pods(self) -> tuple[PodAnswer, ...]:
        """Every pod's answer, all kept: for callers with a few pods (tests, scripts).

        Why not what the renderers use: it holds pods × nodes fits at once.
        """
        return tuple(self.answers())

    @property
    def placements(self) -> tuple[Placement, ...]:
        """Each pod's placement on existing nodes, in input order; why: older callers read
        placements alone (all kept, as :attr:`pods`)."""
        return tuple(answer.placement for answer in self.answers())

    @property
    def exit_code(self) -> int:
        """1 when some pod is denied or fits neither a node nor a template, else 0.

        Why: a CI job that asks "will this run?" must fail when the answer is no, and must
        not fail for a pod an autoscaler will make room for. This computes every answer;
        a renderer counts the code in its own pass (:func:`exit_code_of`).
        """
        return exit_code_of(self.answers())


def exit_code_of(answers: Iterable[PodAnswer]) -> int:
    """1 when one of ``answers`` is not placeable, else 0: :attr:`Explanation.exit_code`.

    Why a function of the answers: a renderer that writes them one by one decides the code
    in the same pass.
    """
    return 0 if all(answer.placeable for answer in answers) else 1


def answer(
    pod: PodView,
    nodes: Sequence[Node],
    templates: Sequence[Template],
    overheads: Mapping[str, Mapping[str, Decimal]],
    rates: Rates,
    queues: Queues | None = None,
) -> PodAnswer:
    """One pod against every node, then (fitting none) every template, ResourceFlavors as
    its Kueue ``queues`` allow; and its failover.

    Why DaemonSet and denied pods get no templates: neither makes a node scale up.
    """
    placement = place(pod, nodes)
    up = None
    if templates and not placement.nodes and not pod.daemon and not pod.denied:
        up = scale_up(pod, templates, overheads, nodes, queues)
    held = ""
    if queues is not None and queues.manage_without_queue_name and not pod.daemon:
        kueue = up.kueue if up is not None and up.kueue is not None else None
        kueue = kueue or queues.assign(pod.kind, pod.queue, pod.namespace)
        held = kueue.reason if kueue.suspended else ""
    return PodAnswer(placement, failover(pod, rates.node_monitor_grace_period), up, held)


def explain(
    nodes: Sequence[Node],
    pods: Sequence[PodView],
    rates: Rates,
    templates: Sequence[Template] = (),
    queues: Queues | None = None,
) -> Explanation:
    """Check DaemonSet coverage of the templates and simulate the failed nodes; each pod's
    placement and templates, and each tainted node's coverage, are computed when a
    renderer asks (:meth:`Explanation.answers`, :meth:`Explanation.coverage_entries`).
    ``queues`` are the Kueue queues that decide which ResourceFlavors a pod is offered.

    Why DaemonSets first: what they request on a template's nodes is room the pod cannot
    have, as both autoscalers count it.
    """
    flavors = frozenset(t.name for t in templates if t.kind == "ResourceFlavor")
    queues = replace(queues or Queues(), flavors=flavors)
    notes = []
    if flavors and not queues.given:
        notes.append(
            "ResourceFlavors are among --node-templates but no LocalQueue or ClusterQueue: "
            "which flavors a pod's queue reaches cannot be known, so no pod is offered one "
            "(add `kubectl get clusterqueues,localqueues -A -o yaml`)"
        )
    daemons = [p for p in pods if p.daemon and not p.denied]
    overheads = {
        t.title: daemon_overhead(daemons, t) for t in templates if t.kind != "ResourceFlavor"
    }
    found = template_coverage(daemons, templates)
    return Explanation(
        nodes=tuple(nodes),
        admitted=tuple(pods),
        simulation=simulate(nodes, pods, rates),
        rates=rates,
        templates=tuple(templates),
        template_coverage=found,
        warnings=coverage_warnings(found),
        queue_warnings=tuple(notes),
        overheads=overheads,
        queues=queues,
    )
