"""Node templates: nodes that do not exist yet, read from ``--node-templates``.

With Karpenter or the cluster-autoscaler the node that would host a pod is created for it,
so "fits no node" is not the end of the answer. Scale-up fails silently when the pod does
not tolerate a pool's taints, when its node affinity excludes every pool, or when a
resource is more than a pool may add; and a node that is created is of little use when a
DaemonSet it needs (device plugin, CNI, monitoring) does not run there. This module reads
the templates; :mod:`.fit` answers the first question with the same fit as for nodes,
saying why not in terms of the user's own YAML, and :mod:`.coverage` the second.

Two kinds of template:

* **Karpenter NodePools** (``karpenter.sh/v1``). A pool's nodes carry its template labels,
  its ``taints`` and, until some agent removes them, its ``startupTaints``; its
  ``requirements`` constrain the labels Karpenter may choose (operators In, NotIn, Exists,
  DoesNotExist, Gt, Lt, Gte, Lte; ``minValues``), and its ``limits`` (with
  ``status.resources`` and ``status.nodes``) bound what it may add. A pool refused by
  Karpenter's validation (an operator, a value count, ``minValues``, a taint effect) is
  refused here too: it is never created. ``spec.replicas`` makes a pool static and a
  Ready condition that is not True makes Karpenter ignore it.
* **Kueue ResourceFlavors** (``kueue.x-k8s.io/v1beta1`` and ``v1beta2``): not nodes but
  the set of nodes Kueue assigns a workload to when it admits it. Kueue admits a pod set
  to a flavor when its tolerations, together with the flavor's ``tolerations``, tolerate
  each NoSchedule and NoExecute taint in ``nodeTaints`` (PreferNoSchedule is ignored),
  and its nodeSelector and required node affinity, reduced to the label keys of the
  flavor's ``nodeLabels``, match those labels (``flavorassigner``). The admitted pods then
  carry the flavor's ``nodeLabels`` in their nodeSelector (keys they do not set already)
  and its ``tolerations``; which existing nodes they fit is answered with those added.
  Quota (the ClusterQueue's) is not read: whether there is room is Kueue's to say. Which
  pods may have a flavor at all (those whose LocalQueue's ClusterQueue lists it) is
  :mod:`.queues`'s question.
* **cluster-autoscaler node groups**: a Node object standing for the group's nodes (a
  scale-from-zero template): its labels, taints and ``status.allocatable``. Taints whose
  keys start with the autoscaler's ``startup-taint``, ``status-taint`` and
  ``ignore-taint`` prefixes are startup taints, and its removal taints are dropped, as the
  autoscaler does when it builds a template.

The label algebra is :mod:`.requirements`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, Literal

from webhooks.explain.nodes import InventoryError, Node, Taint, parse_node
from webhooks.explain.requirements import (
    BOUNDED,
    NODEPOOL_LABEL,
    OPERATORS,
    Constraint,
    Requirement,
    constraints,
)
from webhooks.k8s.affinity import parse_int64
from webhooks.k8s.names import is_qualified_name
from webhooks.k8s.quantity import QuantityError, parse_resource_list
from webhooks.k8s.tolerations import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
)
from webhooks.manifests.errors import show

KARPENTER_API: Final = "karpenter.sh/v1"
KUEUE_APIS: Final = ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1")
#: Labels Karpenter itself sets on a pool's nodes once they join, which DaemonSets may select.
_LIFECYCLE_LABELS: Final = ("karpenter.sh/registered", "karpenter.sh/initialized")
#: Taint key prefixes the cluster-autoscaler ignores in a node group's template.
AUTOSCALER_STARTUP_PREFIXES: Final = (
    "startup-taint.cluster-autoscaler.kubernetes.io/",
    "status-taint.cluster-autoscaler.kubernetes.io/",
    "ignore-taint.cluster-autoscaler.kubernetes.io/",
)
#: Taints the cluster-autoscaler puts on nodes it removes; never on a new node.
AUTOSCALER_REMOVAL_TAINTS: Final = (
    "ToBeDeletedByClusterAutoscaler",
    "DeletionCandidateOfClusterAutoscaler",
)

TemplateKind = Literal["NodePool", "NodeGroup", "ResourceFlavor"]
#: The kinds ``--node-templates`` reads: NodePools, Nodes that stand for node groups, and
#: Kueue ResourceFlavors.
TEMPLATE_KINDS: Final = ("NodePool", "Node", "ResourceFlavor")


@dataclass(frozen=True, slots=True)
class Template:
    """A node that does not exist yet: a NodePool's, or a cluster-autoscaler node group's."""

    kind: TemplateKind
    name: str
    where: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    requirements: tuple[Requirement, ...] = ()
    karpenter_labels: Mapping[str, str] = field(default_factory=dict)
    allocatable: Mapping[str, Decimal] | None = None
    limits: Mapping[str, Decimal] = field(default_factory=dict)
    used: Mapping[str, Decimal] = field(default_factory=dict)
    node_count: int | None = None
    replicas: int | None = None
    weight: int = 0
    not_ready: str = ""
    tolerations: tuple[Mapping[str, Any], ...] = ()

    @property
    def title(self) -> str:
        """``NodePool gpu``, ``node group gpu-workers`` or ``ResourceFlavor a100``; why:
        every message names it so."""
        if self.kind == "NodeGroup":
            return f"node group {self.name}"
        return f"{self.kind} {self.name}"

    @property
    def remaining(self) -> dict[str, Decimal]:
        """What ``limits`` leave after ``status.resources`` and, for ``nodes``, after
        ``status.nodes`` (resource → amount, never below 0).

        Why the status: a limit stops Karpenter once the pool's nodes add up to it, so what
        matters for the next node is what is left.
        """
        used = dict(self.used)
        if self.node_count is not None:
            used["nodes"] = Decimal(self.node_count)
        return {
            name: max(limit - used.get(name, Decimal(0)), Decimal(0))
            for name, limit in self.limits.items()
        }

    @property
    def offers(self) -> frozenset[str]:
        """Extended resources a NodePool says it offers: named in its limits or its taints.

        Why only these: which instance types carry GPUs is the cloud provider's answer,
        which cannot be read offline; GPU pools are tainted and limited by the resource name.
        """
        keys = {t.key for t in (*self.taints, *self.startup_taints)}
        return frozenset(keys | set(self.limits))

    @property
    def pool(self) -> dict[str, Constraint]:
        """A NodePool's label constraints: requirements, template labels and the pool's own
        labels, ANDed per key.

        Why the labels too: Karpenter layers them onto the requirements, so a pod may
        select a pool by a template label or by ``karpenter.sh/nodepool``.
        """
        labels = [
            Requirement(k, "In", (v,), origin="template label") for k, v in self.labels.items()
        ]
        own = [Requirement(k, "In", (v,), origin="label") for k, v in self.karpenter_labels.items()]
        return constraints([*self.requirements, *labels, *own])

    def node(self) -> Node:
        """A node group's template as the :class:`Node` each of its nodes will be, without
        its startup and removal taints.

        Why: a DaemonSet runs on such a node as on any other, by the scheduler's filters.
        """
        return Node(
            name=self.name,
            labels=self.labels,
            taints=self.taints,
            allocatable=self.allocatable,
            where=self.where,
        )


def _taints(raw: Any, where: str) -> tuple[Taint, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InventoryError(f"{where} must be a list")
    out = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise InventoryError(f"{where}[{index}]: a taint must be a mapping")
        key, value, effect = item.get("key"), item.get("value", ""), item.get("effect")
        if (
            not isinstance(key, str)
            or not key
            or effect
            not in (
                NO_SCHEDULE,
                PREFER_NO_SCHEDULE,
                NO_EXECUTE,
            )
        ):
            raise InventoryError(f"{where}[{index}]: a taint needs a key and a valid effect")
        out.append(Taint(key, value if isinstance(value, str) else str(value), str(effect)))
    return tuple(out)


def _requirement(raw: Any, where: str) -> Requirement:
    if not isinstance(raw, Mapping):
        raise InventoryError(f"{where}: a requirement must be a mapping")
    key, operator, values = raw.get("key"), raw.get("operator"), raw.get("values")
    if not isinstance(key, str) or not is_qualified_name(key):
        raise InventoryError(f"{where}: key {show(key)} is not a valid label key")
    if operator not in OPERATORS:
        raise InventoryError(
            f"{where}: operator {show(operator)} is not one of {', '.join(OPERATORS)}"
        )
    if values is None:
        values = []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InventoryError(f"{where}: values must be a list of strings")
    if operator == "In" and not values:
        raise InventoryError(f"{where}: operator In needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise InventoryError(f"{where}: operator {operator} takes no values")
    if operator in BOUNDED:
        number = parse_int64(values[0]) if len(values) == 1 else None
        if number is None or number < 0:
            raise InventoryError(
                f"{where}: operator {operator} needs a single non-negative integer value"
            )
    least = raw.get("minValues")
    if least is not None:
        if isinstance(least, bool) or not isinstance(least, int) or not 1 <= least <= 50:
            raise InventoryError(f"{where}: minValues must be an integer from 1 to 50")
        if operator == "In" and len(values) < least:
            raise InventoryError(
                f"{where}: minValues {least} needs at least that many values, {len(values)} given"
            )
    return Requirement(key, str(operator), tuple(values), least, "requirement")


def _resources(raw: Any, where: str) -> dict[str, Decimal]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InventoryError(f"{where} must be a mapping of resource quantities")
    try:
        return parse_resource_list(raw)
    except (QuantityError, ValueError) as exc:
        raise InventoryError(f"{where}: {exc}") from None


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InventoryError(f"{where} must be a mapping")
    return value


def _integer(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InventoryError(f"{where} must be a non-negative integer")
    return value


def _not_ready(status: Mapping[str, Any]) -> str:
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            state = condition.get("status")
            if state in ("False", "Unknown"):
                message = condition.get("message") or condition.get("reason") or ""
                return f"status Ready is {state}" + (f": {message}" if message else "")
    return ""


def parse_nodepool(obj: Mapping[str, Any], where: str = "") -> Template:
    """A :class:`Template` from a ``karpenter.sh/v1`` NodePool.

    The nodeClassRef becomes the label Karpenter puts on the pool's nodes
    (``<group>/<kind in lower case>``), as does ``karpenter.sh/nodepool``. Why refuse what
    Karpenter's validation refuses (operators, value counts, ``minValues``): such a pool is
    never created, so any answer about it would mislead.
    """
    if obj.get("apiVersion") != KARPENTER_API:
        raise InventoryError(
            f"NodePool apiVersion {show(obj.get('apiVersion'))}: --node-templates reads "
            f"{KARPENTER_API} NodePools (Karpenter 1.0 and later)"
        )
    meta = _mapping(obj.get("metadata"), "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InventoryError("a NodePool without metadata.name")
    spec = _mapping(obj.get("spec"), "spec")
    template = _mapping(spec.get("template"), "spec.template")
    tmeta = _mapping(template.get("metadata"), "spec.template.metadata")
    tspec = _mapping(template.get("spec"), "spec.template.spec")
    raw_labels = _mapping(tmeta.get("labels"), "spec.template.metadata.labels")
    labels = {str(k): str(v) for k, v in raw_labels.items()}
    own = {NODEPOOL_LABEL: name}
    ref = _mapping(tspec.get("nodeClassRef"), "spec.template.spec.nodeClassRef")
    group, kind, ref_name = ref.get("group"), ref.get("kind"), ref.get("name")
    if isinstance(group, str) and isinstance(kind, str) and isinstance(ref_name, str) and group:
        own[f"{group}/{kind.lower()}"] = ref_name
    for label in _LIFECYCLE_LABELS:
        own[label] = "true"
    raw_requirements = tspec.get("requirements") or []
    if not isinstance(raw_requirements, list):
        raise InventoryError("spec.template.spec.requirements must be a list")
    requirements = tuple(
        _requirement(r, f"spec.template.spec.requirements[{i}]")
        for i, r in enumerate(raw_requirements)
    )
    status = _mapping(obj.get("status"), "status")
    weight = _integer(spec.get("weight"), "spec.weight") or 0
    return Template(
        kind="NodePool",
        name=name,
        where=where,
        labels=labels,
        karpenter_labels=own,
        taints=_taints(tspec.get("taints"), "spec.template.spec.taints"),
        startup_taints=_taints(tspec.get("startupTaints"), "spec.template.spec.startupTaints"),
        requirements=requirements,
        limits=_resources(spec.get("limits"), "spec.limits"),
        used=_resources(status.get("resources"), "status.resources"),
        node_count=_integer(status.get("nodes"), "status.nodes"),
        replicas=_integer(spec.get("replicas"), "spec.replicas"),
        weight=weight,
        not_ready=_not_ready(status),
    )


def parse_node_group(obj: Mapping[str, Any], where: str = "") -> Template:
    """A :class:`Template` from a Node object that stands for a cluster-autoscaler node group.

    Why the node's conditions are ignored: a template describes a new node, which starts
    healthy; the autoscaler's startup, status and removal taints are set apart or dropped.
    """
    node = parse_node(obj, None, where)
    own = [t for t in node.taints if not t.source and t.key not in AUTOSCALER_REMOVAL_TAINTS]
    startup = tuple(t for t in own if t.key.startswith(AUTOSCALER_STARTUP_PREFIXES))
    taints = tuple(t for t in own if t not in startup)
    return Template(
        kind="NodeGroup",
        name=node.name,
        where=where,
        labels=dict(node.labels),
        taints=taints,
        startup_taints=startup,
        allocatable=node.allocatable,
    )


def parse_flavor(obj: Mapping[str, Any], where: str = "") -> Template:
    """A :class:`Template` from a Kueue ResourceFlavor (see the module docstring).

    Why taints are checked as Kueue's webhook checks them: a flavor it refuses is never
    stored, so an answer about it would mislead.
    """
    if obj.get("apiVersion") not in KUEUE_APIS:
        raise InventoryError(
            f"ResourceFlavor apiVersion {show(obj.get('apiVersion'))}: --node-templates reads "
            f"{' and '.join(KUEUE_APIS)} ResourceFlavors"
        )
    meta = _mapping(obj.get("metadata"), "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InventoryError("a ResourceFlavor without metadata.name")
    spec = _mapping(obj.get("spec"), "spec")
    labels = _mapping(spec.get("nodeLabels"), "spec.nodeLabels")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise InventoryError("spec.nodeLabels must map label keys to string values")
    raw = spec.get("tolerations") or []
    if not isinstance(raw, list) or not all(isinstance(t, Mapping) for t in raw):
        raise InventoryError("spec.tolerations must be a list of tolerations")
    return Template(
        kind="ResourceFlavor",
        name=name,
        where=where,
        labels=dict(labels),
        taints=_taints(spec.get("nodeTaints"), "spec.nodeTaints"),
        tolerations=tuple(raw),
    )


def parse_template(obj: Any, where: str = "") -> Template:
    """A NodePool or a node group's Node, from one document of ``--node-templates``.

    Why one entry point: a directory of templates mixes both, as clusters migrating from
    the cluster-autoscaler to Karpenter do.
    """
    kind = obj.get("kind") if isinstance(obj, Mapping) else None
    if kind == "NodePool":
        return parse_nodepool(obj, where)
    if kind == "Node":
        return parse_node_group(obj, where)
    if kind == "ResourceFlavor":
        return parse_flavor(obj, where)
    raise InventoryError(
        f"not a node template (kind {show(kind)}); --node-templates takes {KARPENTER_API} "
        "NodePools, Node objects that stand for cluster-autoscaler node groups and Kueue "
        "ResourceFlavors"
    )
