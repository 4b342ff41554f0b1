"""Node failure: what the node lifecycle controller does when nodes fail, and when each
pod that may be running there is evicted.

Why apart from the fit: it is a second question ("what happens when these nodes fail?"),
answered from the zone states and rate limits of kube-controller-manager, which asks the
fit only to know which pods may be running on a failed node. Following upstream:

* **Node failure** (the node lifecycle controller) — failed nodes (``--fail``, or a Ready
  condition that is not True) get the not-ready (Ready False) or unreachable (Ready
  Unknown) NoExecute taint. Zones come from the zone and region labels (one zone when
  unlabelled); nodes labelled ``node.kubernetes.io/exclude-disruption`` are not counted
  (control-plane nodes count like any other). A zone is FullDisruption when none of its
  counted nodes is Ready, PartialDisruption when more than 2 are not Ready and they are at
  least ``unhealthy_zone_threshold`` of it, Normal otherwise. Taints are added per zone at
  ``node_eviction_rate`` nodes per second (Normal and FullDisruption), at
  ``secondary_node_eviction_rate`` in a PartialDisruption zone of more than
  ``large_cluster_size_threshold`` counted nodes, and not at all (rate 0) in a smaller
  one. Upstream compares the threshold with the zone's node count, not the cluster's.
  When every zone is FullDisruption the controller stops all evictions and removes the
  not-ready/unreachable taints it had added.
* **Failover time** — per pod and failure taint, from the node failure to the eviction:
  ``--node-monitor-grace-period`` (50 s since Kubernetes v1.32, 40 s before; the time the
  controller waits before it marks a silent node) plus the ``tolerationSeconds`` of the
  toleration used, or never. Failure timelines count from the failure too: the first node
  of a zone is tainted after the grace period.

What is simplified (the command's help says the same):

* Where a pod actually runs is unknown offline: every failed node a pod fits (before the
  failure) is treated as a node it may be running on; a pod with ``spec.nodeName`` runs
  only there. DaemonSet pods run on every node they fit.
* All failures happen at the same moment (t = 0), are noticed together one grace period
  later, and nothing recovers. A node that fails while its zone is still Normal is tainted
  at the normal rate before later failures change the zone's state, so staggered failures
  may see some evictions even where this model says they stop. Within a zone nodes are
  tainted in inventory order, the first after the grace period and the k-th (from 0) k /
  rate seconds after that (the controller's token bucket has a burst of 1). A kubelet that
  still reports, and reports Ready False (not-ready), is noticed within
  ``--node-monitor-period`` (5 s) rather than the grace period, so for not-ready the figure
  is an upper bound; nodes already tainted in the inventory count from t = 0.
* "Evicted" means the pod is deleted. On an unreachable node it stays Terminating until the
  kubelet returns or the Node object is deleted, and a StatefulSet does not replace it
  before that.
* A zone whose every node is excluded is tainted at the normal rate.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from webhooks.explain.fit import NoExecuteVerdict, fit, no_execute
from webhooks.explain.nodes import EXCLUDE_DISRUPTION, NOT_READY, UNREACHABLE, Node, Taint
from webhooks.explain.pods import PodView, toleration_seconds
from webhooks.k8s.tolerations import NO_EXECUTE, describe

ZoneState = Literal["Normal", "PartialDisruption", "FullDisruption"]

#: kube-controller-manager's ``--node-monitor-grace-period`` default, in seconds: 50 since
#: Kubernetes v1.32 (kubernetes/kubernetes#126287), 40 before.
NODE_MONITOR_GRACE_PERIOD: Final = 50.0


@dataclass(frozen=True, slots=True)
class Rates:
    """kube-controller-manager's node lifecycle settings, with upstream's defaults."""

    node_eviction_rate: float = 0.1
    secondary_node_eviction_rate: float = 0.01
    unhealthy_zone_threshold: float = 0.55
    large_cluster_size_threshold: int = 50
    node_monitor_grace_period: float = NODE_MONITOR_GRACE_PERIOD


_DURATION_RE = re.compile(r"(?:([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(h|m|s|ms))+")
_DURATION_PART_RE = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(h|ms|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(text: str) -> float:
    """Seconds in a kube-controller-manager duration flag: ``50s``, ``1m30s``, ``500ms``, ``40``.

    Why Go's notation: the value is copied from the controller manager's command line, where
    ``--node-monitor-grace-period=50s`` is how it is written; a bare number means seconds.
    Raises :class:`ValueError` naming the value.
    """
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        if not _DURATION_RE.fullmatch(value):
            raise ValueError(
                f"{text!r} is not a duration (such as 50s, 1m30s, or a number of seconds)"
            ) from None
        seconds = sum(
            float(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART_RE.findall(value)
        )
    if not seconds >= 0 or seconds == float("inf"):
        raise ValueError(f"{text!r} is not a duration of zero or more seconds")
    return seconds


FailoverOutcome = Literal["at-once", "after", "never"]


@dataclass(frozen=True, slots=True)
class Failover:
    """How long after its node fails a pod is evicted, for one of the two failure taints.

    ``seconds`` is the node monitor grace period plus the ``tolerationSeconds`` of the
    toleration used (``None``: never, the toleration has no seconds); ``toleration`` names
    it (``""``: none tolerates the taint, so eviction follows the grace period at once).
    """

    taint: str
    outcome: FailoverOutcome
    seconds: float | None
    grace: float
    toleration_seconds: int | None
    toleration: str = ""


def failover(pod: PodView, grace: float) -> tuple[Failover, ...]:
    """The pod's failover time for a node that becomes not-ready, then for an unreachable one.

    The node lifecycle controller marks a node whose kubelet stopped reporting after
    ``--node-monitor-grace-period`` and taints it; the taint eviction controller then
    deletes the pod after the ``tolerationSeconds`` of the first toleration that matches
    the taint. Why both taints: pods tolerate them separately (DefaultTolerationSeconds'
    two flags), and the one a failure brings depends on whether the kubelet still reports.
    """
    out = []
    for key in (NOT_READY, UNREACHABLE):
        taint = Taint(key, "", NO_EXECUTE)
        match = pod.tolerating(taint.as_dict())
        if match is None:
            out.append(Failover(str(taint), "at-once", grace, grace, None))
            continue
        seconds = toleration_seconds(match)
        shown = describe(match)
        if seconds is None:
            out.append(Failover(str(taint), "never", None, grace, None, shown))
        else:
            outcome: FailoverOutcome = "at-once" if seconds <= 0 else "after"
            out.append(
                Failover(str(taint), outcome, grace + max(seconds, 0), grace, seconds, shown)
            )
    return tuple(out)


# --- node failure -------------------------------------------------------------------------


def _f32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


@dataclass(frozen=True, slots=True)
class Zone:
    """A zone's state as the node lifecycle controller computes it, and its eviction rate.

    ``state`` is ``None`` when every node of the zone is excluded from disruption checks.
    """

    name: str
    nodes: tuple[str, ...]
    counted: int
    not_ready: int
    state: ZoneState | None
    rate: float
    reason: str

    @property
    def stopped(self) -> bool:
        """Whether evictions stop here (rate 0); why: that is what the report must warn about."""
        return self.rate <= 0


def zone_state(not_ready: int, counted: int, threshold: float) -> ZoneState:
    """The controller's zone state for ``not_ready`` of ``counted`` nodes.

    Why float32: upstream divides and compares in float32, and at the boundary (11 of 20
    against 0.55) the answer must be the same.
    """
    if counted and not_ready == counted:
        return "FullDisruption"
    if not_ready > 2 and _f32(not_ready / counted) >= _f32(threshold):
        return "PartialDisruption"
    return "Normal"


def _zone(name: str, members: Sequence[Node], rates: Rates) -> Zone:
    counted = [n for n in members if not n.excluded]
    size, down = len(counted), sum(n.ready != "True" for n in counted)
    names = tuple(n.name for n in members)
    if not counted:
        why = f"every node is labelled {EXCLUDE_DISRUPTION}, so the zone has no state"
        return Zone(name, names, 0, 0, None, rates.node_eviction_rate, why)
    threshold = rates.unhealthy_zone_threshold
    state = zone_state(down, size, threshold)
    share = f"{down} of {size} nodes not Ready"
    rate = rates.node_eviction_rate
    if state == "FullDisruption":
        why = f"{share}, none Ready"
    elif state == "Normal" and down <= 2:
        why = f"{share}, and PartialDisruption needs more than 2"
    elif state == "Normal":
        why = f"{share}, below --unhealthy-zone-threshold {threshold:g}"
    else:
        why = f"{share}, at least --unhealthy-zone-threshold {threshold:g}; "
        large = rates.large_cluster_size_threshold
        if size > large:
            why += f"{size} nodes, more than --large-cluster-size-threshold {large}"
            rate = rates.secondary_node_eviction_rate
        else:
            why += f"{size} nodes, at most --large-cluster-size-threshold {large}"
            rate = 0.0
    return Zone(name, names, size, down, state, rate, why)


@dataclass(frozen=True, slots=True)
class NodeTaint:
    """When a failed node gets its not-ready/unreachable NoExecute taint (``None``: never)."""

    node: str
    zone: str
    taint: Taint
    at: float | None
    already: bool = False
    removed: bool = False


@dataclass(frozen=True, slots=True)
class Eviction:
    """When a pod that may be running on a failed node is evicted (``at`` ``None``: never)."""

    pod: str
    node: str
    at: float | None
    verdict: NoExecuteVerdict
    reason: str
    daemon: bool = False


@dataclass(frozen=True, slots=True)
class Simulation:
    """The node lifecycle controller's answer to a set of failed nodes."""

    rates: Rates
    zones: tuple[Zone, ...]
    all_fully_disrupted: bool
    taints: tuple[NodeTaint, ...]
    evictions: tuple[Eviction, ...]
    warnings: tuple[str, ...]


def _stop_warning(zone: Zone, down: Sequence[str], rates: Rates) -> str:
    label = zone.name or "(unlabelled)"
    keep = (
        f"the pods on {', '.join(down)} are never evicted and keep running as far as "
        "Kubernetes knows, until the nodes are Ready again"
    )
    large = rates.large_cluster_size_threshold
    if zone.state == "PartialDisruption" and zone.counted <= large:
        return (
            f"evictions stop in zone {label}: it is PartialDisruption ({zone.not_ready} of "
            f"{zone.counted} nodes not Ready, at least --unhealthy-zone-threshold "
            f"{rates.unhealthy_zone_threshold:g}) and has at most {large} nodes "
            f"(--large-cluster-size-threshold), so its eviction rate is 0: {keep}. To have them "
            f"evicted, set --unhealthy-zone-threshold above {zone.not_ready}/{zone.counted}, or "
            f"--large-cluster-size-threshold below {zone.counted} so that "
            f"--secondary-node-eviction-rate ({rates.secondary_node_eviction_rate:g}/s) applies."
        )
    if zone.state == "PartialDisruption":
        return (
            f"evictions stop in zone {label}: it is PartialDisruption and "
            f"--secondary-node-eviction-rate is 0: {keep}. Set --secondary-node-eviction-rate "
            "above 0 to have them evicted."
        )
    return (
        f"evictions stop in zone {label}: --node-eviction-rate is 0: {keep}. Set "
        "--node-eviction-rate above 0 to have them evicted."
    )


def simulate(nodes: Sequence[Node], pods: Sequence[PodView], rates: Rates) -> Simulation | None:
    """The zone states, taint times and pod evictions that follow from the failed nodes.

    ``None`` when every node is Ready. Why one pass over the final state: see the module
    docstring; the simplifications are listed there and in the command's help.
    """
    failed = [n for n in nodes if n.ready != "True"]
    if not failed:
        return None
    by_zone: dict[str, list[Node]] = {}
    for node in nodes:
        by_zone.setdefault(node.zone, []).append(node)
    zones = {name: _zone(name, members, rates) for name, members in by_zone.items()}
    counted = [z for z in zones.values() if z.state is not None]
    all_down = bool(counted) and all(z.state == "FullDisruption" for z in counted)
    warnings: list[str] = []
    if all_down:
        zones = {
            name: replace(z, rate=0.0, reason=z.reason + "; every zone is FullDisruption")
            if z.state is not None
            else z
            for name, z in zones.items()
        }
        warnings.append(
            "evictions stop everywhere: every zone is FullDisruption, which the node lifecycle "
            "controller takes for a control-plane or network failure rather than failed "
            "nodes; it removes the not-ready/unreachable taints it had added and evicts "
            "nothing until some node in some zone is Ready again. No flag changes this."
        )
    events: list[NodeTaint] = []
    for name, members in by_zone.items():
        zone = zones[name]
        queued = 0
        down = [n for n in members if n.ready != "True"]
        for node in down:
            taint = node.controller_taint
            if node.tainted_by_controller():
                events.append(
                    NodeTaint(
                        node.name,
                        name,
                        taint,
                        None if all_down else 0.0,
                        already=True,
                        removed=all_down,
                    )
                )
                continue
            at = None if zone.stopped else rates.node_monitor_grace_period + queued / zone.rate
            queued += 1
            events.append(NodeTaint(node.name, name, taint, at))
        if zone.stopped and down and not all_down:
            warnings.append(_stop_warning(zone, [n.name for n in down], rates))
    evictions = _evictions(nodes, pods, events)
    return Simulation(
        rates, tuple(zones.values()), all_down, tuple(events), evictions, tuple(warnings)
    )


def _evictions(
    nodes: Sequence[Node], pods: Sequence[PodView], events: Sequence[NodeTaint]
) -> tuple[Eviction, ...]:
    by_name = {n.name: n for n in nodes}
    out: list[Eviction] = []
    for event in events:
        node = by_name[event.node]
        healthy = node.healthy()
        for pod in pods:
            if pod.node_name != node.name and not (not pod.node_name and fit(pod, healthy).fits):
                continue
            taints = [*healthy.taints, event.taint]
            verdict = no_execute(pod.tolerations, taints, pod.comparisons)
            if event.removed:
                reason = "the controller removes the taint: every zone is FullDisruption"
                out.append(Eviction(pod.subject, node.name, None, verdict, reason, pod.daemon))
            elif event.at is None:
                zone = event.zone or "(unlabelled)"
                reason = f"the node is never tainted: evictions stop in zone {zone}"
                out.append(Eviction(pod.subject, node.name, None, verdict, reason, pod.daemon))
            elif verdict.outcome == "never":
                out.append(
                    Eviction(pod.subject, node.name, None, verdict, verdict.reason, pod.daemon)
                )
            else:
                at = event.at + (verdict.seconds or 0)
                out.append(
                    Eviction(pod.subject, node.name, at, verdict, verdict.reason, pod.daemon)
                )
    return tuple(out)
