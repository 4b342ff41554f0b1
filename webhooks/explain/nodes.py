"""The node inventory as the scheduler and the node lifecycle controller see it.

Why apart from the fit and the failure simulation: a node is read once, from ``--nodes``,
a cluster, or a node group's template, and both questions are asked of the same object.
A node's taints are its ``spec.taints`` plus those the node lifecycle controller derives:
NoSchedule taints from its conditions (Ready False: not-ready, Ready Unknown: unreachable,
MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable) and
``node.kubernetes.io/unschedulable`` for ``spec.unschedulable: true``. Zones come from the
zone and region labels (one zone when unlabelled). A node whose inventory has no Ready
condition is taken as Ready.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Final, Literal

from webhooks.explain.devices import Device
from webhooks.k8s.quantity import QuantityError, parse_resource_list
from webhooks.k8s.tolerations import NO_EXECUTE, NO_SCHEDULE
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
    """One node of the inventory, as the scheduler and the node lifecycle controller see it.

    ``devices`` are the DRA devices its ResourceSlices publish for it (:mod:`.devices`), and
    ``device_problems`` why some pools that reach it cannot be used.
    """

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    ready: Ready = "True"
    failed: bool = False
    zone: str = ""
    excluded: bool = False
    allocatable: Mapping[str, Decimal] | None = None
    where: str = ""
    devices: tuple[Device, ...] = ()
    device_problems: tuple[str, ...] = ()

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
