"""A pod against a node or a node template: one fit, whatever it is fitted to.

Why one fit: a template is a node that does not exist yet, and a pod must tolerate its
taints and match its labels by the same rules as on a node that does; two copies of those
rules drift apart. The parts differ only where the autoscalers differ from the scheduler
(a NodePool's labels are requirements, not values; a template's resources are what its
limits leave), and every answer has one shape, :class:`Fit`.

On an existing node, as the scheduler's filters decide (spec §1d):

* **Taints** — NoSchedule and NoExecute taints the pod does not tolerate refuse it; an
  untolerated PreferNoSchedule taint makes the node a poor choice, not an impossible one;
  a taint with any other effect is neither, as the scheduler filters on NoSchedule and
  NoExecute only (TaintToleration: ``FindMatchingUntoleratedTaint`` with
  ``DoNotScheduleTaintsFilterFunc``) and scores on PreferNoSchedule only. With
  ``spec.nodeName`` the scheduler is bypassed: the pod runs only on that node, where
  NoSchedule taints do not stop it (the kubelet checks NoExecute only).
* **Labels** — the nodeSelector and required node affinity (terms ORed, expressions ANDed).
* **Resources** — requests against the node's allocatable, and the pod's own place against its
  allocatable ``pods``.
* **NoExecute** (the taint eviction controller) — for every NoExecute taint on the node the
  *first* toleration in the pod's list that tolerates it is the one used; a taint none
  tolerates means eviction at once; otherwise the smallest ``tolerationSeconds`` of the
  used tolerations counts (zero or negative: at once); used tolerations without seconds
  never evict.

On a template, as the autoscaler decides it (:mod:`.templates` says what each reads):

* **Taints** — the same rules on the template's ``taints``; its startup taints are ignored
  (the autoscalers expect them to go away) and only listed. A pod with ``spec.nodeName``
  gets no new node: the autoscalers act on pods the scheduler found no room for.
* **Labels** — a node group's labels as a node's; a NodePool's requirements and labels must
  be *compatible* with the pod's nodeSelector and one of its required nodeSelectorTerms
  (:mod:`.requirements`, as ``kubernetes-sigs/karpenter`` ``pkg/scheduling`` does).
* **Resources** — what the pod requests, with the requests of the DaemonSets that would run
  there: within a node group's allocatable; within what a NodePool's ``limits`` leave
  (limits minus ``status.resources``; ``limits.nodes`` not reached). A NodePool offers an
  extended resource (``nvidia.com/gpu``) only when its ``limits`` or a taint names it:
  which instance types carry one is the cloud provider's answer, which cannot be seen
  offline, and CPU and memory are not checked against instance sizes for that reason.
* A static NodePool (``spec.replicas``) and one marked not Ready in its status add no node.
  Where several pools can host a pod, Karpenter tries the one with the highest ``weight``
  first.

Simplified (the command's help says the same): capacity ignores the pods already running on
a node, and a node whose inventory has no ``status.allocatable`` is assumed to have room.
Inter-pod affinity and anti-affinity, topology spread, volumes, host ports and scheduling
gates are not modelled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Literal

from webhooks.explain.allocation import (
    NO_DEVICES,
    Chosen,
    DeviceEvictionNote,
    DeviceFit,
    device_fit,
)
from webhooks.explain.nodes import Node, Taint
from webhooks.explain.pods import PodView, pod_requests, show_quantity, toleration_seconds
from webhooks.explain.queues import Assignment, Queues
from webhooks.explain.reasons import Unmet
from webhooks.explain.requirements import conflicts, constraints, contradicts, pod_alternatives
from webhooks.explain.templates import Template
from webhooks.k8s.affinity import affinity_failures, required_terms, selector_failures
from webhooks.k8s.names import is_extended_resource_name
from webhooks.k8s.tolerations import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    describe,
    identity,
    tolerates,
)

Outcome = Literal["none", "at-once", "after", "never"]
#: What a pod is fitted to: a node that exists, or a template for nodes that do not yet.
Target = Node | Template


@dataclass(frozen=True, slots=True)
class Tolerated:
    """A NoSchedule or NoExecute taint the pod tolerates, and the toleration that does it:
    added by admission, or (``kueue``) one a ResourceFlavor gives the pods Kueue admits."""

    taint: str
    toleration: str
    added: bool
    kueue: bool = False


@dataclass(frozen=True, slots=True)
class NoExecuteVerdict:
    """What the node's NoExecute taints mean for a pod running there.

    ``none``: the node has no NoExecute taint; ``at-once``; ``after`` ``seconds``; ``never``.
    """

    outcome: Outcome
    seconds: int | None = None
    reason: str = ""


def no_execute(
    tolerations: Sequence[Mapping[str, Any]], taints: Iterable[Taint], comparisons: bool = False
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
        match = next(
            (t for t in tolerations if tolerates(t, taint.as_dict(), comparisons=comparisons)),
            None,
        )
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
    """Whether a pod can run on one node, or get a node from one template, and every reason
    it cannot.

    ``ignored`` lists the NoSchedule taints ``spec.nodeName`` bypasses (on the node the pod
    is bound to); ``startup_ignored`` a template's startup taints the pod does not tolerate;
    ``overhead`` what the DaemonSets on a template's nodes request; ``no_execute`` what the
    node's NoExecute taints mean for the pod running there (``none`` on a template: nothing
    runs on a node that does not exist yet); ``devices`` the DRA devices the pod's claims
    get on the node, and ``device_evictions`` what NoExecute device taints do to it
    there; ``admitted_nodes`` (a ResourceFlavor) the nodes the pod fits once Kueue has
    admitted it there. Why one shape for nodes and templates: the
    renderers and coverage read both, and must read them the same way.
    """

    target: Target
    unmet: tuple[Unmet, ...]
    tolerated: tuple[Tolerated, ...] = ()
    prefer_no_schedule: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    startup_ignored: tuple[str, ...] = ()
    no_execute: NoExecuteVerdict = NoExecuteVerdict("none")
    overhead: Mapping[str, Decimal] = field(default_factory=dict)
    devices: tuple[Chosen, ...] = ()
    device_evictions: tuple[DeviceEvictionNote, ...] = ()
    admitted_nodes: tuple[str, ...] | None = None

    @property
    def fits(self) -> bool:
        """No requirement is unmet; why a property: the unmet list is the single truth."""
        return not self.unmet

    @property
    def name(self) -> str:
        """The node's name or the template's title (``NodePool gpu``); why: reports name
        nodes bare, and templates by kind, since a pool and a node may share a name."""
        return self.target.title if isinstance(self.target, Template) else self.target.name


def _source(taint: Taint) -> str:
    return f" (added: {taint.source})" if taint.source else ""


@dataclass(frozen=True, slots=True)
class TaintFit:
    """What a pod's tolerations make of a set of taints; the fields are :class:`Fit`'s."""

    unmet: tuple[Unmet, ...] = ()
    tolerated: tuple[Tolerated, ...] = ()
    prefer_no_schedule: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()


def taint_fit(
    pod: PodView,
    taints: Iterable[Taint],
    bound: bool = False,
    extra: Sequence[Mapping[str, Any]] = (),
) -> TaintFit:
    """Judge ``taints`` against the pod's tolerations as the scheduler's TaintToleration
    plugin does; ``bound``: the pod's ``spec.nodeName`` names the node that has them.

    Only NoSchedule and NoExecute taints can refuse a pod, PreferNoSchedule only scores,
    and a taint with any other effect is skipped: upstream's filter looks for an
    untolerated taint among NoSchedule and NoExecute ones alone. ``extra`` tolerations
    count after the pod's own (a ResourceFlavor's, which Kueue adds). Why one function:
    nodes, node groups, NodePools and DaemonSet coverage must all read a taint the same way.
    """
    unmet: list[Unmet] = []
    tolerated: list[Tolerated] = []
    prefer: list[str] = []
    ignored: list[str] = []
    for taint in taints:
        if taint.effect not in (NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE):
            continue  # neither filtered nor scored by the scheduler
        match = pod.tolerating(taint.as_dict(), extra)
        if match is not None:
            if taint.effect != PREFER_NO_SCHEDULE:
                own = any(match is t for t in pod.tolerations)
                shown = Tolerated(str(taint), describe(match), pod.was_added(match), not own)
                tolerated.append(shown)
        elif taint.effect == PREFER_NO_SCHEDULE:
            prefer.append(f"{taint}{_source(taint)}")
        elif taint.effect == NO_SCHEDULE and bound:
            ignored.append(f"{taint}{_source(taint)}")
        else:
            unmet.append(Unmet("taint", f"taint {taint} is not tolerated{_source(taint)}"))
    return TaintFit(tuple(unmet), tuple(tolerated), tuple(prefer), tuple(ignored))


def startup_untolerated(pod: PodView, template: Template) -> list[str]:
    """The template's startup taints ``pod`` does not tolerate, as text.

    Why they are listed though ignored: a DaemonSet that does not tolerate one waits for
    whatever removes it, which the coverage report says.
    """
    return [str(t) for t in template.startup_taints if pod.tolerating(t.as_dict()) is None]


def requirement_unmet(pod: PodView, template: Template) -> list[Unmet]:
    """Why none of the pod's requirement sets is compatible with a NodePool (empty: one is).

    Why the closest set only: terms are ORed, so the term with the fewest conflicts is the
    one worth fixing, as the closest node is reported.
    """
    pool = template.pool
    broken = [
        Unmet("requirement", f"{template.title}'s {c.text()}: these contradict each other")
        for c in pool.values()
        if contradicts(c)
    ]
    alternatives, problems = pod_alternatives(pod.spec)
    per_term = [conflicts(pool, constraints(reqs), template.title) for reqs in alternatives]
    if any(not found for found in per_term):
        return broken
    if not per_term:
        return [*broken, *(Unmet("nodeAffinity", p) for p in problems)]
    best = min(range(len(per_term)), key=lambda i: len(per_term[i]))
    terms = len(per_term) + len(problems)
    prefix = "" if terms == 1 else f"closest of {terms} nodeSelectorTerms: "
    return [*broken, *(Unmet(u.rule, prefix + u.message) for u in per_term[best])]


def selector_unmet(pod: PodView, target: Target) -> list[Unmet]:
    """Why the pod's nodeSelector and required node affinity exclude ``target`` (empty: they
    do not).

    A node's or node group's labels are values the selectors match; a NodePool's are
    requirements they must be compatible with (:func:`requirement_unmet`). Why the closest
    term only when none matches: terms are ORed, so that is the one worth fixing.
    """
    if isinstance(target, Template) and target.kind == "NodePool":
        return requirement_unmet(pod, target)
    if isinstance(target, Template) and target.kind == "ResourceFlavor":
        return flavor_unmet(pod, target)
    labels = target.labels
    unmet = [Unmet("nodeSelector", m) for m in selector_failures(labels, pod.spec)]
    terms = affinity_failures(labels, pod.spec, target.name)
    if terms is not None and not any(not failures for failures in terms):
        if not terms:
            unmet.append(Unmet("nodeAffinity", "required node affinity has no terms: no node"))
        else:
            best = min(range(len(terms)), key=lambda i: len(terms[i]))
            prefix = "" if len(terms) == 1 else f"term {best} of {len(terms)} (closest): "
            unmet.extend(Unmet("nodeAffinity", prefix + m) for m in terms[best])
    return unmet


def flavor_spec(spec: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """The pod's nodeSelector and required node affinity reduced to label ``keys``, as
    Kueue reduces them before matching a flavor's labels (``flavorSelector``): other keys
    are dropped, and a term left empty makes the affinity match anything."""
    wanted = set(keys)
    out: dict[str, Any] = {}
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping):
        out["nodeSelector"] = {k: v for k, v in selector.items() if k in wanted}
    terms = required_terms(spec)
    kept: list[dict[str, Any]] = []
    for term in terms or []:
        raw = term.get("matchExpressions") if isinstance(term, Mapping) else None
        expressions = [e for e in raw or [] if isinstance(e, Mapping) and e.get("key") in wanted]
        if not expressions:
            kept = []
            break
        kept.append({"matchExpressions": expressions})
    if kept:
        required = {"nodeSelectorTerms": kept}
        out["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
        }
    return out


def flavor_unmet(pod: PodView, flavor: Template) -> list[Unmet]:
    """Why Kueue would not give the pod's pod set this ResourceFlavor for its labels."""
    spec = flavor_spec(pod.spec, flavor.labels)
    unmet = [Unmet("nodeSelector", m) for m in selector_failures(flavor.labels, spec)]
    terms = affinity_failures(flavor.labels, spec, "")
    if terms and not any(not failures for failures in terms):
        best = min(range(len(terms)), key=lambda i: len(terms[i]))
        unmet.extend(Unmet("nodeAffinity", m) for m in terms[best])
    return [Unmet(u.rule, f"{flavor.title}'s nodeLabels: {u.message}") for u in unmet]


def admitted(pod: PodView, flavor: Template) -> PodView:
    """The pod as Kueue starts it on ``flavor``: the flavor's labels in its nodeSelector
    (keys it does not set) and the flavor's tolerations after its own."""
    spec = dict(pod.spec)
    selector = spec.get("nodeSelector")
    spec["nodeSelector"] = {**flavor.labels, **(selector if isinstance(selector, Mapping) else {})}
    spec["tolerations"] = [*pod.tolerations, *flavor.tolerations]
    return replace(pod, spec=spec)


def _with_overhead(name: str, amount: Decimal, overhead: Mapping[str, Decimal]) -> str:
    extra = overhead.get(name, Decimal(0))
    text = f"requests {name} {show_quantity(name, amount)}"
    if extra > 0:
        text += f" (+{show_quantity(name, extra)} for DaemonSets)"
    return text


def _allocatable_unmet(
    requests: Mapping[str, Decimal],
    allocatable: Mapping[str, Decimal] | None,
    overhead: Mapping[str, Decimal],
    holder: str,
) -> list[Unmet]:
    if allocatable is None:
        return []
    unmet = []
    for name, amount in sorted(requests.items()):
        have = allocatable.get(name, Decimal(0))
        if amount + overhead.get(name, Decimal(0)) > have:
            unmet.append(
                Unmet(
                    "resources",
                    f"{_with_overhead(name, amount, overhead)}, {holder} "
                    f"{show_quantity(name, have)} allocatable",
                )
            )
    return unmet


def _pool_unmet(
    requests: Mapping[str, Decimal], template: Template, overhead: Mapping[str, Decimal]
) -> list[Unmet]:
    unmet: list[Unmet] = []
    offered = template.offers
    for name, amount in sorted(requests.items()):
        if is_extended_resource_name(name) and name not in offered:
            unmet.append(
                Unmet(
                    "resources",
                    f"requests {name} {show_quantity(name, amount)}: {template.title} does not "
                    f"say it offers {name} (neither its spec.limits nor a taint names it)",
                )
            )
    remaining = template.remaining
    for name, left in sorted(remaining.items()):
        if name == "nodes":
            continue
        need = requests.get(name, Decimal(0)) + overhead.get(name, Decimal(0))
        if need > 0 and need > left:
            used = template.used.get(name, Decimal(0))
            unmet.append(
                Unmet(
                    "limits",
                    f"{_with_overhead(name, requests.get(name, Decimal(0)), overhead)}, above "
                    f"what spec.limits leave: {show_quantity(name, left)} "
                    f"(limit {show_quantity(name, template.limits[name])}, "
                    f"{show_quantity(name, used)} in use)",
                )
            )
    most = template.limits.get("nodes")
    if most is not None and template.node_count is not None and template.node_count >= most:
        unmet.append(
            Unmet(
                "limits",
                f"the pool has {template.node_count} nodes, its limits.nodes is "
                f"{show_quantity('nodes', most)}",
            )
        )
    return unmet


def resource_unmet(
    pod: PodView, target: Target, overhead: Mapping[str, Decimal] | None = None
) -> list[Unmet]:
    """What the pod (with ``overhead``, the DaemonSets' requests) asks for beyond what
    ``target`` has: a node's or node group's allocatable, or a NodePool's limits and offers.

    Why an unknown allocatable is no refusal: an inventory without it says nothing about
    room, and refusing would turn every such node into a false "does not fit".
    """
    extra = overhead or {}
    if isinstance(target, Template) and target.kind == "ResourceFlavor":
        return []  # the ClusterQueue's quota decides, which is Kueue's to say
    requests = {n: a for n, a in pod_requests(pod.spec).items() if a > 0}
    if isinstance(target, Node):
        for name in delegated(pod, target):
            requests.pop(name, None)  # the node's devices serve it (KEP-5004)
        requests.update(pod_slot(target.allocatable))
        return _allocatable_unmet(requests, target.allocatable, extra, "the node has")
    if target.kind == "NodeGroup":
        requests.update(pod_slot(target.allocatable))
        return _allocatable_unmet(requests, target.allocatable, extra, "the group's nodes have")
    return _pool_unmet(requests, target, extra)


def pod_slot(allocatable: Mapping[str, Decimal] | None) -> dict[str, Decimal]:
    """The one ``pods`` the pod itself takes on a node whose allocatable lists ``pods``.

    Why: the scheduler refuses a node whose pods would exceed its allocatable ``pods``
    ("Too many pods"), the new pod counted, so a node that allows none fits nothing even
    when every other node in the inventory is empty. An allocatable without ``pods`` (a
    hand-written inventory) leaves the count unchecked, as it leaves every unlisted
    extended resource to the other rules: a kubelet always reports it.
    """
    if allocatable is None or "pods" not in allocatable:
        return {}
    return {"pods": Decimal(1)}


def delegated(pod: PodView, node: Node) -> dict[str, tuple[str, int]]:
    """The pod's extended resources a DeviceClass serves and the node's allocatable does
    not list: the scheduler asks the node's DRA devices for them (resource → class, count).

    Why the allocatable decides: a node whose device plugin advertises the resource
    serves it the old way, and one that does not may still have the devices in a slice.
    """
    out = {}
    for need in pod.extended:
        have = node.allocatable.get(need.resource) if node.allocatable is not None else None
        if not have:
            out[need.resource] = (need.device_class, need.count)
    return out


def _device_fit(pod: PodView, node: Node) -> DeviceFit:
    """What the node's DRA devices make of the pod; nothing at all for a pod without DRA."""
    if not pod.claims and not pod.extended:
        return NO_DEVICES
    extended = [(r, c, n) for r, (c, n) in delegated(pod, node).items()]
    if not pod.claims and not extended:
        return NO_DEVICES
    return device_fit(
        pod.claims,
        extended,
        node.devices,
        pod.classes,
        node.name,
        node.labels,
        node.device_problems,
    )


def _template_unmet(pod: PodView, template: Template) -> list[Unmet]:
    unmet = []
    if pod.node_name:
        unmet.append(
            Unmet("nodeName", f"spec.nodeName is {pod.node_name}, so no new node is made for it")
        )
    if template.replicas is not None:
        unmet.append(
            Unmet(
                "static",
                f"a static NodePool (spec.replicas {template.replicas}) keeps its node count "
                "whatever is pending and adds no node for this pod; its nodes belong in --nodes",
            )
        )
    if template.not_ready:
        unmet.append(Unmet("notReady", f"Karpenter ignores the pool: {template.not_ready}"))
    return unmet


def fit(pod: PodView, target: Target, overhead: Mapping[str, Decimal] | None = None) -> Fit:
    """Check ``pod`` against a node the way the scheduler's filters do, or against a
    template the way its autoscaler does; ``overhead`` is what the DaemonSets that run on a
    template's nodes request.

    Why every reason rather than the first: the operator fixing a manifest needs the whole
    list (a pool refused for its taint *and* its zone needs both fixed), and counting them
    is how the closest node is chosen when none fits. The one exception is a pod bound by
    ``spec.nodeName`` to another node: it never runs here, so nothing else about this node
    matters to it.
    """
    if isinstance(target, Node):
        verdict = no_execute(pod.tolerations, target.taints, pod.comparisons)
        pinned = pod.node_name
        if pinned and pinned != target.name:
            other = Unmet("nodeName", f"spec.nodeName is {pinned}, so the pod runs only there")
            return Fit(target, (other,), no_execute=verdict)
        unmet: list[Unmet] = []
        taints = taint_fit(pod, target.taints, bound=bool(pinned))
        startup: list[str] = []
        extra: Mapping[str, Decimal] = {}
    elif target.kind == "ResourceFlavor":
        verdict = NoExecuteVerdict("none")
        unmet = []
        blocking = [t for t in target.taints if t.effect != PREFER_NO_SCHEDULE]
        taints = taint_fit(pod, blocking, extra=target.tolerations)
        startup, extra = [], {}
    else:
        verdict = NoExecuteVerdict("none")
        unmet = _template_unmet(pod, target)
        taints = taint_fit(pod, target.taints)
        startup = startup_untolerated(pod, target)
        extra = overhead or {}
    unmet.extend(taints.unmet)
    unmet.extend(selector_unmet(pod, target))
    unmet.extend(resource_unmet(pod, target, extra))
    devices = _device_fit(pod, target) if isinstance(target, Node) else NO_DEVICES
    unmet.extend(Unmet("devices", m) for m in devices.unmet)
    return Fit(
        target,
        tuple(unmet),
        taints.tolerated,
        taints.prefer_no_schedule,
        taints.ignored,
        tuple(startup),
        verdict,
        extra,
        devices.chosen,
        devices.evictions,
    )


@dataclass(frozen=True, slots=True)
class Placement:
    """A pod against every node: the fits in inventory order, and the closest when none fit."""

    pod: PodView
    fits: tuple[Fit, ...]

    @property
    def nodes(self) -> list[str]:
        """Names of the nodes the pod fits, in inventory order; why: the report leads with it."""
        return [f.name for f in self.fits if f.fits]

    @property
    def closest(self) -> Fit | None:
        """The node with the fewest unmet requirements, when no node fits.

        On a tie, the node with fewer resource and device shortfalls wins, then the first
        listed. Why: a missing toleration or label is fixed in the manifest, while a node
        without the GPUs or memory asked for cannot be made to fit by editing the pod.
        """
        if not self.fits or self.nodes:
            return None
        return min(
            self.fits,
            key=lambda f: (len(f.unmet), sum(u.rule in ("resources", "devices") for u in f.unmet)),
        )


def place(pod: PodView, nodes: Sequence[Node]) -> Placement:
    """Check ``pod`` against every node, in inventory order.

    Why inventory order: ties for the closest node go to the first listed, predictably.
    """
    return Placement(pod, tuple(fit(pod, node) for node in nodes))


@dataclass(frozen=True, slots=True)
class ScaleUp:
    """A pod that fits no existing node, against every template, in input order.

    ``kueue`` is what Kueue may give the pod (its queue's flavors, or why none), when
    ResourceFlavors are among the templates.
    """

    pod: PodView
    fits: tuple[Fit, ...]
    kueue: Assignment | None = None

    @property
    def hosts(self) -> list[Fit]:
        """Templates that can give the pod a node: NodePools by weight (Karpenter's order),
        then node groups; why ordered: the first is the one that scales up."""
        found = [f for f in self.fits if f.fits and isinstance(f.target, Template)]
        return sorted(found, key=_scale_up_order)


def _scale_up_order(found: Fit) -> tuple[bool, int]:
    template = found.target
    if not isinstance(template, Template):
        return True, 0
    return template.kind != "NodePool", -template.weight


def scale_up(
    pod: PodView,
    templates: Sequence[Template],
    overheads: Mapping[str, Mapping[str, Decimal]],
    nodes: Sequence[Node] = (),
    queues: Queues | None = None,
) -> ScaleUp:
    """Check ``pod`` against every template; ``overheads`` maps a template title to the
    DaemonSet requests on its nodes. Why input order: ties and reports stay predictable.

    A ResourceFlavor is offered only when Kueue may give it to the pod: a flavor of the
    ClusterQueue behind the pod's LocalQueue (``queues``, :mod:`.queues`); any other is
    refused with the reason alone, as nothing else about it matters to this pod. One
    Kueue would give is also tried on ``nodes``, with what Kueue adds: when there are
    nodes and the admitted pod fits none of them, it cannot host it.
    """
    assignment = None
    if any(t.kind == "ResourceFlavor" for t in templates):
        assignment = (queues or Queues()).assign(pod.kind, pod.queue, pod.namespace)
    found = []
    for template in templates:
        flavor = template.kind == "ResourceFlavor"
        refusal = assignment.refusal(template.name) if flavor and assignment else ""
        if refusal:
            found.append(Fit(template, (Unmet("kueue", refusal),)))
            continue
        result = fit(pod, template, overheads.get(template.title))
        if flavor and result.fits and nodes:
            placed = place(admitted(pod, template), nodes).nodes
            result = replace(result, admitted_nodes=tuple(placed))
            if not placed:
                why = Unmet(
                    "kueue",
                    f"with {template.title}'s nodeSelector and tolerations the pod fits no node "
                    "in --nodes",
                )
                result = replace(result, unmet=(why,))
        found.append(result)
    return ScaleUp(pod, tuple(found), assignment)
