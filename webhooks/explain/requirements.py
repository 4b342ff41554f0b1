"""Label requirements as Karpenter compares them: a NodePool's against a pod's.

A pool's requirements and template labels, and a pod's nodeSelector and required
nodeSelectorTerms, each say which values a node label may take. Per label key they are
ANDed into one set of values (:class:`Values`), and a pool can host a pod when, for every
key the pod constrains, the two sets overlap (``kubernetes-sigs/karpenter``
``pkg/scheduling``, read, not copied). A key the pool does not mention is fine when it is
a well-known label (zone, region, instance type, arch, os, capacity type, the provider's
own ``karpenter.k8s.aws/*``): the cloud provider chooses its value; any other label is
never on the pool's nodes, so only NotIn and DoesNotExist are met. A requirement with
``minValues`` must keep that many values after the overlap (the ``Strict`` policy).
Terms are ORed: Karpenter tries the next term when a pool does not fit the first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from webhooks.explain.reasons import Rule, Unmet
from webhooks.k8s.affinity import (
    EMPTY_TERM,
    describe_expression,
    expression_is_valid,
    is_empty_term,
    parse_int64,
    required_terms,
)

HOSTNAME: Final = "kubernetes.io/hostname"
NODEPOOL_LABEL: Final = "karpenter.sh/nodepool"

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
BOUNDED: Final = ("Gt", "Lt", "Gte", "Lte")
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


def contradicts(found: Constraint) -> bool:
    """Whether the requirements on one key leave no value although a label is needed.

    Why apart: such a pod matches no node at all, and such a pool makes none, whatever
    the other side asks.
    """
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
        if contradicts(want):
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
