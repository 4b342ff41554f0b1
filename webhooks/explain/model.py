"""``explain``: on which nodes a pod can run, and what happens to it when nodes fail.

Operators who taint and dedicate nodes need the answer before they deploy, and the rules
are easy to get wrong: several taints act together as a filter, NoExecute evicts running
pods (at once, after ``tolerationSeconds``, or never), PreferNoSchedule is only a
preference, and the node lifecycle controller stops evicting altogether in some disrupted
zones. This module is the model of existing nodes; :mod:`.templates` adds nodes that do
not exist yet, :mod:`.explanation` puts the answers together, :mod:`.render` renders them
and :mod:`webhooks.cli.explain` is the command. Everything works on plain dicts, after each
pod has gone through the admission chain exactly as ``check`` admits it.

What is modelled, following upstream:

* **Placement** — the scheduler's filters for taints (NoSchedule and NoExecute taints the
  pod does not tolerate; scheduler matching, spec §1d), ``spec.nodeName``, the nodeSelector
  and required node affinity (terms ORed, expressions ANDed), and resource requests against
  the node's allocatable. PreferNoSchedule taints the pod does not tolerate are reported
  apart: the node is a poor choice, not an impossible one. A node's taints are its
  ``spec.taints`` plus those the node lifecycle controller derives: NoSchedule taints from
  its conditions (Ready False: not-ready, Ready Unknown: unreachable, MemoryPressure,
  DiskPressure, PIDPressure, NetworkUnavailable) and ``node.kubernetes.io/unschedulable``
  for ``spec.unschedulable: true``.
* **NoExecute** (the taint eviction controller) — for every NoExecute taint on the node the
  *first* toleration in the pod's list that tolerates it is the one used; a taint none
  tolerates means eviction at once; otherwise the smallest ``tolerationSeconds`` of the
  used tolerations counts (zero or negative: at once); used tolerations without seconds
  never evict.
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

* Capacity ignores the pods already running on a node, and a node whose inventory has no
  ``status.allocatable`` is assumed to have room. Inter-pod affinity and anti-affinity,
  topology spread, volumes, host ports and scheduling gates are not modelled.
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
* A node whose inventory has no Ready condition is taken as Ready; a zone whose every node
  is excluded is tainted at the normal rate.
"""

from __future__ import annotations

import contextlib
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Final, Literal

from webhooks.dryrun.engine import Checked
from webhooks.k8s.affinity import affinity_failures, selector_failures
from webhooks.k8s.podspec import POD_SPEC_PATHS, get_path
from webhooks.k8s.quantity import QuantityError, parse_resource_list
from webhooks.k8s.tolerations import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    describe,
    identity,
    tolerates,
)
from webhooks.manifests.errors import show

NOT_READY: Final = "node.kubernetes.io/not-ready"
UNREACHABLE: Final = "node.kubernetes.io/unreachable"
UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"
EXCLUDE_DISRUPTION: Final = "node.kubernetes.io/exclude-disruption"
CONTROL_PLANE_LABELS: Final = (
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
)
#: (stable, deprecated beta) label pairs; upstream reads the beta label first when present.
ZONE_LABELS: Final = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS: Final = (
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/region",
)

Ready = Literal["True", "False", "Unknown"]
FailAs = Literal["unreachable", "not-ready"]
ZoneState = Literal["Normal", "PartialDisruption", "FullDisruption"]
Outcome = Literal["none", "at-once", "after", "never"]
Rule = Literal[
    "nodeName",
    "taint",
    "nodeSelector",
    "nodeAffinity",
    "resources",
    "requirement",
    "limits",
    "static",
    "notReady",
]

#: Node condition (type, status) → the NoSchedule taint the node lifecycle controller adds.
CONDITION_TAINTS: Mapping[tuple[str, str], str] = {
    ("Ready", "False"): NOT_READY,
    ("Ready", "Unknown"): UNREACHABLE,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
}
#: Conditions the controller resets to Unknown when a node stops reporting.
_KUBELET_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


class InventoryError(ValueError):
    """A node inventory entry that cannot be used; the message says what is wrong."""


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


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint; ``source`` says why it is there when the node spec does not have it."""

    key: str
    value: str
    effect: str
    source: str = ""

    def as_dict(self) -> dict[str, str]:
        """The taint as the API writes it; why: scheduler matching reads plain dicts."""
        return {"key": self.key, "value": self.value, "effect": self.effect}

    def __str__(self) -> str:
        value = f"={self.value}" if self.value else ""
        return f"{self.key}{value}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Node:
    """One node of the inventory, as the scheduler and the node lifecycle controller see it."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    ready: Ready = "True"
    failed: bool = False
    zone: str = ""
    excluded: bool = False
    allocatable: Mapping[str, Decimal] | None = None
    where: str = ""

    @property
    def control_plane(self) -> bool:
        """Whether the node has a control-plane role label; shown only, since upstream counts
        such nodes in zone health like any other."""
        return any(label in self.labels for label in CONTROL_PLANE_LABELS)

    @property
    def controller_taint(self) -> Taint:
        """The NoExecute taint the controller gives this node when not Ready.

        Why two keys: Ready False means not-ready, Ready Unknown means unreachable, and pods
        tolerate the two separately.
        """
        key = NOT_READY if self.ready == "False" else UNREACHABLE
        return Taint(key, "", NO_EXECUTE, f"node lifecycle controller: Ready is {self.ready}")

    def tainted_by_controller(self) -> bool:
        """Whether the inventory already has a not-ready or unreachable NoExecute taint.

        Why it matters: such a node is not queued again; the controller swaps the taint to
        match the Ready condition at once, without waiting for the rate limiter.
        """
        return any(
            t.key in (NOT_READY, UNREACHABLE) and t.effect == NO_EXECUTE for t in self.taints
        )

    def healthy(self) -> Node:
        """This node before its failure: Ready, without not-ready or unreachable taints.

        Why: pods that may be running on a failed node are those that fit it while healthy.
        """
        kept = tuple(t for t in self.taints if t.key not in (NOT_READY, UNREACHABLE))
        return replace(self, taints=kept, ready="True", failed=False)


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _label(labels: Mapping[str, str], names: Sequence[str]) -> str:
    stable, beta = names
    return labels[beta] if beta in labels else labels.get(stable, "")


def zone_of(labels: Mapping[str, str]) -> str:
    """The zone a node belongs to, ``region/zone`` or ``zone`` (``""`` when unlabelled).

    Why region too: the node lifecycle controller keys zones by region and zone, reading
    the deprecated beta labels first when a node has them.
    """
    region, zone = _label(labels, REGION_LABELS), _label(labels, ZONE_LABELS)
    return f"{region}/{zone}" if region else zone


def _taint(raw: Any, where: str) -> Taint:
    if not isinstance(raw, Mapping):
        raise InventoryError(f"{where}: a taint must be a mapping")
    key, value, effect = raw.get("key"), raw.get("value", ""), raw.get("effect")
    if not isinstance(key, str) or not isinstance(effect, str):
        raise InventoryError(f"{where}: a taint needs a key and an effect")
    return Taint(key, value if isinstance(value, str) else str(value), effect)


def _allocatable(status: Mapping[str, Any]) -> dict[str, Decimal] | None:
    raw = status.get("allocatable")
    if not isinstance(raw, Mapping):
        return None
    try:
        return parse_resource_list(raw)
    except (QuantityError, ValueError) as exc:
        raise InventoryError(f"status.allocatable: {exc}") from None


def parse_node(obj: Any, fail: FailAs | None = None, where: str = "") -> Node:
    """A :class:`Node` from a Node object, failed as ``fail`` says (``None``: as it is).

    The taints are the node's ``spec.taints`` plus those the node lifecycle controller adds
    without rate limiting: NoSchedule taints for its conditions and for
    ``spec.unschedulable`` (as ``kubectl cordon`` sets it). Why derive them: a ``kubectl get
    nodes`` taken a moment after a failure may not show them yet, and ``--fail`` must
    behave as the controller will.
    """
    if not isinstance(obj, Mapping) or obj.get("kind") != "Node":
        kind = obj.get("kind") if isinstance(obj, Mapping) else None
        raise InventoryError(f"not a Node (kind {show(kind)}); --nodes takes Node objects")
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        raise InventoryError("a Node without metadata.name")
    labels = _strings(meta.get("labels") if isinstance(meta, Mapping) else None)
    raw_spec, raw_status = obj.get("spec"), obj.get("status")
    spec: Mapping[str, Any] = raw_spec if isinstance(raw_spec, Mapping) else {}
    status: Mapping[str, Any] = raw_status if isinstance(raw_status, Mapping) else {}
    raw_taints = spec.get("taints") or []
    if not isinstance(raw_taints, list):
        raise InventoryError("spec.taints must be a list")
    taints = [_taint(t, f"spec.taints[{i}]") for i, t in enumerate(raw_taints)]
    conditions: dict[str, str] = {}
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and isinstance(condition.get("type"), str):
            conditions[condition["type"]] = str(condition.get("status", "Unknown"))
    if fail is not None:
        if fail == "unreachable":
            for kind in _KUBELET_CONDITIONS:
                conditions[kind] = "Unknown"
        else:
            conditions["Ready"] = "False"
    ready = conditions.get("Ready", "True")
    ready_state: Ready = "True" if ready == "True" else "False" if ready == "False" else "Unknown"
    present = {(t.key, t.effect) for t in taints}
    for (kind, state), key in CONDITION_TAINTS.items():
        if conditions.get(kind) == state and (key, NO_SCHEDULE) not in present:
            source = "--fail" if fail is not None and kind == "Ready" else "its conditions"
            taints.append(Taint(key, "", NO_SCHEDULE, f"{source}: {kind} is {state}"))
    if spec.get("unschedulable") is True and (UNSCHEDULABLE, NO_SCHEDULE) not in present:
        taints.append(Taint(UNSCHEDULABLE, "", NO_SCHEDULE, "spec.unschedulable is true"))
    try:
        allocatable = _allocatable(status)
    except InventoryError as exc:
        raise InventoryError(f"node {name}: {exc}") from None
    return Node(
        name=name,
        labels=labels,
        taints=tuple(taints),
        ready=ready_state,
        failed=fail is not None,
        zone=zone_of(labels),
        excluded=EXCLUDE_DISRUPTION in labels,
        allocatable=allocatable,
        where=where,
    )


# --- pods ---------------------------------------------------------------------------------


def _toleration_key(t: Mapping[str, Any]) -> tuple[tuple[str, str, str, str], int | None]:
    return identity(t), _seconds(t)


@dataclass(frozen=True, slots=True)
class PodView:
    """A pod as admission stores it, and what admission did to it."""

    subject: str
    spec: Mapping[str, Any]
    where: str = ""
    added: frozenset[tuple[tuple[str, str, str, str], int | None]] = frozenset()
    admission: tuple[str, ...] = ()
    denied: tuple[str, ...] = ()
    daemon: bool = False

    @property
    def tolerations(self) -> list[Mapping[str, Any]]:
        """The pod's tolerations that can be read; why: a malformed entry tolerates nothing."""
        raw = self.spec.get("tolerations")
        return [t for t in raw if isinstance(t, Mapping)] if isinstance(raw, list) else []

    @property
    def node_name(self) -> str:
        """``spec.nodeName`` or ``""``; why: when set, the scheduler is bypassed for that node."""
        value = self.spec.get("nodeName")
        return value if isinstance(value, str) else ""

    def was_added(self, toleration: Mapping[str, Any]) -> bool:
        """Whether admission added ``toleration``; why: the report credits the chain for it."""
        return _toleration_key(toleration) in self.added


def pod_view(checked: Checked) -> PodView | None:
    """The pod that ``checked`` yields (the Pod, or the Pod its controller creates).

    ``None`` for objects that create no pods. Why from :class:`Checked`: the pod must be
    exactly what the admission chain stores, tolerations and node affinity included.
    """
    kind = checked.kind
    path = POD_SPEC_PATHS.get(kind)
    if path is None:
        return None
    pod = checked.stored.get("object" if kind == "Pod" else "pod")
    spec = pod.get("spec") if isinstance(pod, Mapping) else None
    if not isinstance(spec, Mapping):
        return None
    written = get_path(checked.document.obj, path) if isinstance(checked.document.obj, dict) else {}
    before = (written or {}).get("tolerations")
    before_keys = (
        {_toleration_key(t) for t in before if isinstance(t, Mapping)}
        if isinstance(before, list)
        else set()
    )
    added = frozenset(
        _toleration_key(t)
        for t in spec.get("tolerations") or []
        if isinstance(t, Mapping) and _toleration_key(t) not in before_keys
    )
    admission = tuple(
        f"{plugin}: {summary}"
        for finding in checked.findings
        if finding.type == "mutation"
        for plugin, summary in zip(finding.plugins, finding.summaries, strict=False)
    )
    # Only what refuses the pod: a violation under warn or audit admits it.
    denied = tuple(
        f"{f.rule}: {f.message}"
        for f in checked.findings
        if f.type == "violation" and f.level == "error"
    )
    subject = checked.subject if kind == "Pod" else f"pods of {checked.subject}"
    return PodView(
        subject=subject,
        spec=spec,
        # Objects read from the API have no line: their path names them whole.
        where=(
            f"{checked.document.path}:{checked.document.line}"
            if checked.document.line > 0
            else checked.document.path
        ),
        added=added,
        admission=tuple(dict.fromkeys(admission)),
        denied=tuple(dict.fromkeys(denied)),
        daemon=kind == "DaemonSet",
    )


def _requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
    resources = container.get("resources")
    raw = resources.get("requests") if isinstance(resources, Mapping) else None
    try:
        return parse_resource_list(raw if isinstance(raw, Mapping) else None)
    except (QuantityError, ValueError):
        return {}  # validation reports it; it cannot be placed either way


def _add(total: dict[str, Decimal], more: Mapping[str, Decimal]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, Decimal(0)) + amount


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """What the scheduler reserves for a pod: its effective requests, overhead included.

    App containers and sidecars (init containers with ``restartPolicy: Always``) add up; an
    ordinary init container runs alone with the sidecars started before it, so the result
    is the larger of the two, per resource, plus ``spec.overhead``. Why not only the app
    containers: an init container asking for more decides where the pod fits.
    """
    running: dict[str, Decimal] = {}
    for container in spec.get("containers") or []:
        if isinstance(container, Mapping):
            _add(running, _requests(container))
    sidecars: dict[str, Decimal] = {}
    peak: dict[str, Decimal] = {}
    for container in spec.get("initContainers") or []:
        if not isinstance(container, Mapping):
            continue
        wanted = _requests(container)
        if container.get("restartPolicy") == "Always":
            _add(sidecars, wanted)
            continue
        for name, amount in wanted.items():
            peak[name] = max(peak.get(name, Decimal(0)), amount + sidecars.get(name, Decimal(0)))
    _add(running, sidecars)
    result = {n: max(running.get(n, Decimal(0)), peak.get(n, Decimal(0))) for n in running | peak}
    overhead = spec.get("overhead")
    with contextlib.suppress(QuantityError, ValueError):
        _add(result, parse_resource_list(overhead if isinstance(overhead, Mapping) else None))
    return result


_BINARY = (("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10))


def show_quantity(name: str, amount: Decimal) -> str:
    """A quantity as people write it: ``500m`` CPU, ``32Gi`` memory, ``2`` GPUs.

    Why not the exact decimal: ``34359738368`` bytes is not how anyone sizes a node.
    """
    if name == "cpu" and amount != amount.to_integral_value():
        return f"{amount * 1000:f}".rstrip("0").rstrip(".") + "m"
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        for suffix, power in _BINARY:
            unit = Decimal(2**power)
            if amount >= unit and amount % unit == 0:
                return f"{amount / unit:f}".split(".")[0] + suffix
    text = f"{amount:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


# --- one pod on one node ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Unmet:
    """One requirement a node does not meet, as a sentence."""

    rule: Rule
    message: str


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


def _seconds(toleration: Mapping[str, Any]) -> int | None:
    value = toleration.get("tolerationSeconds")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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
    timed = [(s, taint, t) for taint, t in used if (s := _seconds(t)) is not None]
    if not timed:
        shown = ", ".join(_used(t, taint) for taint, t in used)
        return NoExecuteVerdict("never", None, f"{shown}: no tolerationSeconds")
    seconds, taint, toleration = min(timed, key=lambda item: item[0])
    return NoExecuteVerdict(
        "at-once" if seconds <= 0 else "after", max(seconds, 0), _used(toleration, taint)
    )


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
        match = next((t for t in pod.tolerations if tolerates(t, taint.as_dict())), None)
        if match is None:
            out.append(Failover(str(taint), "at-once", grace, grace, None))
            continue
        seconds = _seconds(match)
        shown = describe(match)
        if seconds is None:
            out.append(Failover(str(taint), "never", None, grace, None, shown))
        else:
            outcome: FailoverOutcome = "at-once" if seconds <= 0 else "after"
            out.append(
                Failover(str(taint), outcome, grace + max(seconds, 0), grace, seconds, shown)
            )
    return tuple(out)


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
            verdict = no_execute(pod.tolerations, taints)
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
