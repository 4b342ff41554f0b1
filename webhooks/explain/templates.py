"""Node templates: nodes that do not exist yet, and whether a pending pod would get one.

With Karpenter or the cluster-autoscaler the node that would host a pod is created for it,
so "fits no node" is not the end of the answer. Scale-up fails silently when the pod does
not tolerate a pool's taints, when its node affinity excludes every pool, or when a
resource is more than a pool may add; and a node that is created is of little use when a
DaemonSet it needs (device plugin, CNI, monitoring) does not run there. This module reads
the templates, answers both questions, and says why not in terms of the user's own YAML.

Two kinds of template, read from ``--node-templates``:

* **Karpenter NodePools** (``karpenter.sh/v1``). A pool's nodes carry its template labels,
  its ``taints`` and, until some agent removes them, its ``startupTaints``; its
  ``requirements`` constrain the labels Karpenter may choose (operators In, NotIn, Exists,
  DoesNotExist, Gt, Lt, Gte, Lte; ``minValues``). A pod can get a node from a pool when,
  as Karpenter decides it (``kubernetes-sigs/karpenter`` ``pkg/scheduling``, read, not
  copied):

  - it tolerates every NoSchedule and NoExecute taint of ``taints``; ``startupTaints`` are
    ignored (Karpenter expects them to go away); a PreferNoSchedule taint it does not
    tolerate makes the pool a poor choice, which Karpenter relaxes, not a refusal;
  - its nodeSelector and one of its required nodeSelectorTerms are *compatible* with the
    pool: per label key, the values the pool allows (its requirements and template labels
    on that key, ANDed) and the values the pod asks for overlap. A key the pool does not
    mention is fine when it is a well-known label (zone, region, instance type, arch, os,
    capacity type, the provider's own ``karpenter.k8s.aws/*``): any value the cloud
    provider offers may be chosen; for any other key the pool's nodes never carry the
    label, so only NotIn and DoesNotExist are satisfied. After the overlap, a requirement
    with ``minValues`` must keep at least that many values (the ``Strict`` policy);
  - what it requests, with the requests of the DaemonSets among the inputs that would run
    on the new node, fits in what the pool's ``limits`` leave (limits minus
    ``status.resources``) and ``limits.nodes`` is not reached;
  - an extended resource (``nvidia.com/gpu``) is offered: Karpenter asks the cloud
    provider's instance types, which cannot be seen offline, so a pool counts as offering
    one only when its ``limits`` or one of its taints names it (GPU pools are tainted with
    the resource name, and bounded by a limit on it). CPU and memory are not checked
    against instance sizes, for the same reason;
  - the pool is not static (``spec.replicas``: a static pool keeps its node count whatever
    is pending) and is not marked not Ready in its status.

  Where several pools can host a pod, Karpenter tries the one with the highest
  ``weight`` first.
* **cluster-autoscaler node groups**: a Node object standing for the group's nodes (a
  scale-from-zero template): its labels, taints and ``status.allocatable``. The pod must
  pass the scheduler's filters on it, with the allocatable reduced by the DaemonSets that
  would run there; taints whose keys start with the autoscaler's ``startup-taint``,
  ``status-taint`` and ``ignore-taint`` prefixes are ignored, as the autoscaler ignores
  them when it builds a template.

DaemonSet coverage: for each tainted existing node and each template, which DaemonSets run
there (their pods as admission stores them, default tolerations included) and why the
others do not: a taint they do not tolerate, their own nodeSelector or node affinity. On a
NodePool a DaemonSet runs when it tolerates the template ``taints`` and its requirements
are compatible, as Karpenter computes DaemonSet overhead; a startup taint it does not
tolerate only delays it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Final, Literal

from webhooks.explain.model import (
    InventoryError,
    Node,
    PodView,
    Rule,
    Taint,
    Tolerated,
    Unmet,
    fit,
    parse_node,
    pod_requests,
    show_quantity,
)
from webhooks.k8s.affinity import (
    EMPTY_TERM,
    describe_expression,
    expression_is_valid,
    is_empty_term,
    parse_int64,
    required_terms,
)
from webhooks.k8s.names import is_extended_resource_name, is_qualified_name
from webhooks.k8s.quantity import QuantityError, parse_resource_list
from webhooks.k8s.tolerations import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    describe,
    tolerates,
)
from webhooks.manifests.errors import show

KARPENTER_API: Final = "karpenter.sh/v1"
HOSTNAME: Final = "kubernetes.io/hostname"
NODEPOOL_LABEL: Final = "karpenter.sh/nodepool"
#: Labels Karpenter itself sets on a pool's nodes once they join, which DaemonSets may select.
_LIFECYCLE_LABELS: Final = ("karpenter.sh/registered", "karpenter.sh/initialized")

#: Labels whose values come from the cloud provider when a pool does not restrict them
#: (Karpenter's ``WellKnownLabels``, and the AWS provider's zone ID).
WELL_KNOWN_LABELS: Final = frozenset(
    {
        NODEPOOL_LABEL,
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "karpenter.sh/capacity-type",
        "node.kubernetes.io/windows-build",
        "topology.k8s.aws/zone-id",
    }
)
#: Label domains a Karpenter provider reserves for the instance properties it labels
#: (instance family, CPU count, GPU name, ...): every key in them is well known.
PROVIDER_DOMAINS: Final = ("karpenter.k8s.aws/", "karpenter.azure.com/")
#: Deprecated label keys that Karpenter reads as their stable names.
NORMALIZED_LABELS: Final = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
    "beta.kubernetes.io/arch": "kubernetes.io/arch",
    "beta.kubernetes.io/os": "kubernetes.io/os",
    "beta.kubernetes.io/instance-type": "node.kubernetes.io/instance-type",
}
OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
_BOUNDED: Final = ("Gt", "Lt", "Gte", "Lte")
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

TemplateKind = Literal["NodePool", "NodeGroup"]
#: Requirement origins that are a label (``key=value``) rather than an expression.
LABEL_ORIGINS: Final = ("template label", "label", "nodeSelector")


def normalized(key: str) -> str:
    """The label key Karpenter compares (``beta.kubernetes.io/arch`` → ``kubernetes.io/arch``).

    Why: a pod written against the deprecated key must meet the pool's stable one.
    """
    return NORMALIZED_LABELS.get(key, key)


def is_well_known(key: str) -> bool:
    """Whether a pool that does not mention ``key`` lets the cloud provider choose its value.

    Why it matters: for any other key a new node simply has no such label.
    """
    return key in WELL_KNOWN_LABELS or key.startswith(PROVIDER_DOMAINS)


# --- sets of label values -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Values:
    """The values one label key may take: a set, or everything but a set, within bounds.

    ``complement`` False: exactly ``values`` (empty: the label must be absent).
    ``complement`` True: any value but ``values`` (the label must be present), and when a
    bound is set only integers within ``low``..``high`` (inclusive). Why this shape: every
    operator, and every AND of them, is one of these, so a pool and a pod compare in one step.
    """

    complement: bool
    values: frozenset[str] = frozenset()
    low: int | None = None
    high: int | None = None

    @classmethod
    def of(cls, operator: str, values: Sequence[str]) -> Values:
        """The values ``key <operator> <values>`` allows (the operator already checked).

        Why Gt and Lt become inclusive bounds: Gte and Lte need them, and one form of bound
        keeps the intersection to a max and a min.
        """
        if operator == "In":
            return cls(False, frozenset(values))
        if operator == "NotIn":
            return cls(True, frozenset(values))
        if operator == "Exists":
            return cls(True)
        if operator == "DoesNotExist":
            return cls(False)
        bound = parse_int64(values[0])
        assert bound is not None  # checked when the requirement was read
        if operator == "Gt":
            return cls(True, low=bound + 1)
        if operator == "Gte":
            return cls(True, low=bound)
        if operator == "Lt":
            return cls(True, high=bound - 1)
        return cls(True, high=bound)

    def _bounded(self, value: str, low: int | None, high: int | None) -> bool:
        if low is None and high is None:
            return True
        number = parse_int64(value)
        return (
            number is not None
            and (low is None or number >= low)
            and (high is None or number <= high)
        )

    def has(self, value: str) -> bool:
        """Whether a node labelled with ``value`` satisfies these values.

        Why bounds reject words: a node label that is not an integer never meets Gt or Lt.
        """
        listed = value in self.values
        return (listed != self.complement) and self._bounded(value, self.low, self.high)

    def intersect(self, other: Values) -> Values:
        """The values both allow (an AND of two requirements on one key).

        Why a set stays a set: once a finite list is involved the answer is finite, and its
        size is what ``minValues`` counts.
        """
        low = _max(self.low, other.low)
        high = _min(self.high, other.high)
        if low is not None and high is not None and low > high:
            return Values(False)
        if self.complement and other.complement:
            return Values(True, self.values | other.values, low, high)
        if self.complement:
            kept = other.values - self.values
        elif other.complement:
            kept = self.values - other.values
        else:
            kept = self.values & other.values
        return Values(False, frozenset(v for v in kept if self._bounded(v, low, high)))

    def overlaps(self, other: Values) -> bool:
        """Whether some node label value satisfies both (a present label; see :meth:`absent`).

        Why this is the test: a pool and a pod are compatible on a key when a node could
        carry a value both accept.
        """
        joined = self.intersect(other)
        return joined.complement or bool(joined.values)

    @property
    def absent(self) -> bool:
        """Whether a node *without* the label satisfies these values (NotIn, DoesNotExist).

        Why apart from :meth:`overlaps`: two requirements that both accept a missing label
        are compatible even when no value satisfies both.
        """
        if self.complement:
            return bool(self.values) and self.low is None and self.high is None
        return not self.values


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement on a node label, as written, and where it was written.

    ``origin`` is ``requirement`` or ``template label`` (a pool) or ``nodeSelector`` or
    ``node affinity`` (a pod); messages quote it so it can be found in the YAML.
    """

    key: str
    operator: str
    values: tuple[str, ...] = ()
    min_values: int | None = None
    origin: str = "requirement"

    def __str__(self) -> str:
        if self.origin in LABEL_ORIGINS:
            return f"{self.origin} {self.key}={self.values[0]}"
        expr = {"key": self.key, "operator": self.operator, "values": list(self.values)}
        text = describe_expression(expr)
        if self.operator in ("Gte", "Lte") and len(self.values) == 1:
            text = f"{self.key} {self.operator} {self.values[0]}"
        if self.min_values is not None:
            text += f" (minValues {self.min_values})"
        return f"{self.origin} {text}"

    @property
    def allowed(self) -> Values:
        """The values this requirement allows; why a property: the text is kept for messages."""
        return Values.of(self.operator, self.values)


@dataclass(frozen=True, slots=True)
class Constraint:
    """Everything said about one label key, ANDed: the values left and who said what."""

    values: Values
    sources: tuple[Requirement, ...]
    min_values: int | None = None

    @property
    def needs_label(self) -> bool:
        """Whether some source needs the label present (In, Exists, Gt, Lt, Gte, Lte).

        Why: an empty set then means the sources contradict each other, not "no label".
        """
        return any(s.operator not in ("NotIn", "DoesNotExist") for s in self.sources)

    def text(self) -> str:
        """The sources as the user wrote them, ANDed; why: messages quote the YAML."""
        return " and ".join(str(s) for s in self.sources)


def constraints(requirements: Iterable[Requirement]) -> dict[str, Constraint]:
    """Requirements ANDed per (normalized) label key; ``minValues`` is the largest given.

    Why per key: Karpenter compares a pool and a pod key by key, and two requirements on one
    key of the same object narrow each other.
    """
    out: dict[str, Constraint] = {}
    for req in requirements:
        key = normalized(req.key)
        found = out.get(key)
        if found is None:
            out[key] = Constraint(req.allowed, (req,), req.min_values)
            continue
        least = _max(found.min_values, req.min_values)
        out[key] = Constraint(found.values.intersect(req.allowed), (*found.sources, req), least)
    return out


def _contradicts(found: Constraint) -> bool:
    return found.needs_label and not found.values.complement and not found.values.values


def conflicts(
    pool: Mapping[str, Constraint], pod: Mapping[str, Constraint], what: str
) -> list[Unmet]:
    """Why a node of ``pool`` cannot satisfy ``pod`` (one requirement set of a pod): empty
    when it can. ``what`` names the pool in the messages.

    Why each message names both sides: the fix is in one of two files, and the reader must
    see which requirement of the pool stands in the way.
    """
    out: list[Unmet] = []
    for key, want in pod.items():
        rule: Rule = (
            "nodeAffinity"
            if any(s.origin == "node affinity" for s in want.sources)
            else "nodeSelector"
        )
        if _contradicts(want):
            out.append(Unmet(rule, f"{want.text()}: these contradict each other"))
            continue
        have = pool.get(key)
        if key == HOSTNAME and not want.values.absent:
            out.append(Unmet(rule, f"{want.text()}: a new node's name is not known in advance"))
            continue
        if have is None:
            if is_well_known(key) or want.values.absent:
                continue
            out.append(
                Unmet(
                    rule,
                    f"{want.text()}: {what} has no requirement or template label {key}, so "
                    "its nodes never carry that label",
                )
            )
            continue
        if not want.values.overlaps(have.values) and not (
            want.values.absent and have.values.absent
        ):
            out.append(Unmet(rule, f"{want.text()} conflicts with {what}'s {have.text()}"))
            continue
        if have.min_values is not None:
            joined = have.values.intersect(want.values)
            if not joined.complement and len(joined.values) < have.min_values:
                left = ", ".join(sorted(joined.values)) or "none"
                out.append(
                    Unmet(
                        rule,
                        f"{want.text()} leaves {len(joined.values)} value(s) of {key} "
                        f"({left}), and {what}'s {have.text()} needs at least "
                        f"{have.min_values}",
                    )
                )
    return out


def pod_alternatives(spec: Mapping[str, Any]) -> tuple[list[list[Requirement]], list[str]]:
    """The pod's requirement sets, one per required nodeSelectorTerm (terms are ORed), each
    with the nodeSelector; and for terms no new node can match, why.

    Why alternatives: Karpenter tries the first term and, when no pool fits it, the next;
    the scheduler accepts a node that matches any term.
    """
    base: list[Requirement] = []
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping):
        base = [
            Requirement(str(k), "In", (str(v),), origin="nodeSelector") for k, v in selector.items()
        ]
    terms = required_terms(spec)
    if terms is None:
        return [base], []
    if not terms:
        return [], ["required node affinity has no terms: no node"]
    alternatives: list[list[Requirement]] = []
    problems: list[str] = []
    for index, term in enumerate(terms):
        prefix = "" if len(terms) == 1 else f"term {index}: "
        if is_empty_term(term) or not isinstance(term, Mapping):
            problems.append(prefix + EMPTY_TERM)
            continue
        expressions = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if not isinstance(expressions, list) or not isinstance(fields, list):
            problems.append(prefix + "the term cannot be read")
            continue
        bad = [e for e in expressions if not (isinstance(e, Mapping) and expression_is_valid(e))]
        if bad:
            shown = describe_expression(bad[0]) if isinstance(bad[0], Mapping) else repr(bad[0])
            problems.append(
                prefix + f"{shown} is not a valid requirement, so the term matches no node"
            )
            continue
        pinned = [f for f in fields if isinstance(f, Mapping) and f.get("operator") == "In"]
        if pinned:
            problems.append(
                prefix + f"matchFields {describe_expression(pinned[0])}: a new node's name is "
                "not known in advance"
            )
            continue
        alternatives.append(
            [
                *base,
                *(
                    Requirement(
                        e["key"],
                        e["operator"],
                        tuple(e.get("values") or ()),
                        origin="node affinity",
                    )
                    for e in expressions
                ),
            ]
        )
    return alternatives, problems


# --- templates ------------------------------------------------------------------------------


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

    @property
    def title(self) -> str:
        """``NodePool gpu`` or ``node group gpu-workers``; why: every message names it so."""
        return f"NodePool {self.name}" if self.kind == "NodePool" else f"node group {self.name}"

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
        """A node group's template as a :class:`Node`, without its ignored taints.

        Why no allocatable: resources are checked here, with the DaemonSets deducted,
        while the scheduler's other filters are the model's.
        """
        return Node(name=self.name, labels=self.labels, taints=self.taints, where=self.where)


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
    if operator in _BOUNDED:
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
    raise InventoryError(
        f"not a node template (kind {show(kind)}); --node-templates takes {KARPENTER_API} "
        "NodePools and Node objects that stand for cluster-autoscaler node groups"
    )


# --- a pod against a template ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TemplateFit:
    """Whether a template can give a pod a node, and every reason it cannot."""

    template: Template
    unmet: tuple[Unmet, ...]
    tolerated: tuple[Tolerated, ...] = ()
    prefer_no_schedule: tuple[str, ...] = ()
    startup_ignored: tuple[str, ...] = ()
    overhead: Mapping[str, Decimal] = field(default_factory=dict)

    @property
    def fits(self) -> bool:
        """No requirement is unmet; why a property: the unmet list is the single truth."""
        return not self.unmet


def _taint_check(
    pod: PodView, template: Template
) -> tuple[list[Unmet], list[Tolerated], list[str]]:
    unmet: list[Unmet] = []
    tolerated: list[Tolerated] = []
    prefer: list[str] = []
    for taint in template.taints:
        match = next((t for t in pod.tolerations if tolerates(t, taint.as_dict())), None)
        if match is not None:
            if taint.effect != PREFER_NO_SCHEDULE:
                tolerated.append(Tolerated(str(taint), describe(match), pod.was_added(match)))
        elif taint.effect == PREFER_NO_SCHEDULE:
            prefer.append(str(taint))
        else:
            unmet.append(Unmet("taint", f"taint {taint} is not tolerated"))
    return unmet, tolerated, prefer


def _startup_ignored(pod: PodView, template: Template) -> list[str]:
    return [
        str(t)
        for t in template.startup_taints
        if not any(tolerates(tol, t.as_dict()) for tol in pod.tolerations)
    ]


def _requirement_check(pod: PodView, template: Template) -> list[Unmet]:
    pool = template.pool
    broken = [
        Unmet("requirement", f"{template.title}'s {c.text()}: these contradict each other")
        for c in pool.values()
        if _contradicts(c)
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


def _with_overhead(name: str, amount: Decimal, overhead: Mapping[str, Decimal]) -> str:
    extra = overhead.get(name, Decimal(0))
    text = f"requests {name} {show_quantity(name, amount)}"
    if extra > 0:
        text += f" (+{show_quantity(name, extra)} for DaemonSets)"
    return text


def _resource_check(
    pod: PodView, template: Template, overhead: Mapping[str, Decimal]
) -> list[Unmet]:
    unmet: list[Unmet] = []
    requests = {n: a for n, a in pod_requests(pod.spec).items() if a > 0}
    if template.kind == "NodeGroup":
        if template.allocatable is None:
            return []
        for name, amount in sorted(requests.items()):
            have = template.allocatable.get(name, Decimal(0))
            if amount + overhead.get(name, Decimal(0)) > have:
                unmet.append(
                    Unmet(
                        "resources",
                        f"{_with_overhead(name, amount, overhead)}, the group's nodes have "
                        f"{show_quantity(name, have)} allocatable",
                    )
                )
        return unmet
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


def template_fit(
    pod: PodView, template: Template, overhead: Mapping[str, Decimal] | None = None
) -> TemplateFit:
    """Whether ``template`` can give ``pod`` a new node, with every reason it cannot.

    ``overhead`` is what the DaemonSets that run on the template request. Why every reason:
    a pool refused for its taint *and* its zone needs both fixed, and counting them picks
    the closest template.
    """
    overhead = overhead or {}
    startup = _startup_ignored(pod, template)
    if template.kind == "NodeGroup":
        checked = fit(pod, template.node())
        unmet = [*checked.unmet, *_resource_check(pod, template, overhead)]
        return TemplateFit(
            template,
            tuple(unmet),
            checked.tolerated,
            checked.prefer_no_schedule,
            tuple(startup),
            overhead,
        )
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
    taints, tolerated, prefer = _taint_check(pod, template)
    unmet.extend(taints)
    unmet.extend(_requirement_check(pod, template))
    unmet.extend(_resource_check(pod, template, overhead))
    return TemplateFit(
        template, tuple(unmet), tuple(tolerated), tuple(prefer), tuple(startup), overhead
    )


@dataclass(frozen=True, slots=True)
class ScaleUp:
    """A pod that fits no existing node, against every template, in input order."""

    pod: PodView
    fits: tuple[TemplateFit, ...]

    @property
    def hosts(self) -> list[TemplateFit]:
        """Templates that can give the pod a node: NodePools by weight (Karpenter's order),
        then node groups; why ordered: the first is the one that scales up."""
        found = [f for f in self.fits if f.fits]
        return sorted(found, key=lambda f: (f.template.kind != "NodePool", -f.template.weight))


def scale_up(
    pod: PodView, templates: Sequence[Template], overheads: Mapping[str, Mapping[str, Decimal]]
) -> ScaleUp:
    """Check ``pod`` against every template; ``overheads`` maps a template title to the
    DaemonSet requests on its nodes. Why input order: ties and reports stay predictable."""
    return ScaleUp(pod, tuple(template_fit(pod, t, overheads.get(t.title)) for t in templates))


# --- DaemonSet coverage ---------------------------------------------------------------------


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
    unmet: list[Unmet] = []
    for taint in template.taints:
        if taint.effect == PREFER_NO_SCHEDULE:
            continue  # a DaemonSet's pods ignore the preference, as Karpenter counts them
        if not any(tolerates(t, taint.as_dict()) for t in pod.tolerations):
            unmet.append(Unmet("taint", f"taint {taint} is not tolerated"))
    unmet.extend(_requirement_check(pod, template))
    return _daemon_run(pod, unmet, _startup_ignored(pod, template))


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
    node = replace(target.node(), allocatable=target.allocatable)
    return _daemon_on_node(pod, node, _startup_ignored(pod, target))


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
    if not daemons:
        return ()
    out: list[Coverage] = []
    for node in (n.healthy() for n in nodes):
        if _is_tainted(node):
            out.append(
                Coverage(
                    f"node {node.name}",
                    "Node",
                    tuple(str(t) for t in node.taints),
                    tuple(daemon_runs(d, node) for d in daemons),
                )
            )
    for template in templates:
        out.append(
            Coverage(
                template.title,
                template.kind,
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
