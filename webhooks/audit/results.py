"""What an audit found: results keyed by subject, policy, rule and outcome, with pod counts.

Why results are merged as they arrive: a 5,000-pod Deployment whose pods all miss the same
toleration is one result with a count, never 5,000, so memory and reports grow with the
distinct problems in the cluster, not with its size.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from webhooks.k8s.podspec import GroupKind, group_kind, kind_label

Outcome = Literal["fail", "warn", "error", "skip", "note"]
Rule = Literal["violation", "drift", "convergence", "exception", "monitor", "admission"]

#: What each outcome means for the run: ``fail`` and ``error`` fail it (exit 1).
FAILING: Final = ("fail", "error")
#: Outcomes written into reports; a ``note`` is only shown to whoever runs the command.
REPORTED: Final = ("fail", "error", "warn", "skip")
#: How results are ordered everywhere: what fails first.
ORDER: Final = {"fail": 0, "error": 1, "warn": 2, "skip": 3, "note": 4}


@dataclass(frozen=True, slots=True)
class Ref:
    """An object a result is about: enough to find it (``kubectl get``) and to tell it apart."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Ref:
        """The reference of an object read from the API server.

        Why tolerant of missing fields: a result must still name what it can of an object
        the API server sent in an unexpected shape.
        """
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        return cls(
            str(obj.get("apiVersion") or ""),
            str(obj.get("kind") or ""),
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            str(meta.get("uid") or ""),
        )

    @property
    def key(self) -> GroupKind:
        """The kind as the API knows it, (group, kind); why: an owner of another group that
        takes a built-in's name (an ``apps.kruise.io`` DaemonSet) is not the built-in."""
        return group_kind({"apiVersion": self.api_version, "kind": self.kind}) or ("", "")

    @property
    def subject(self) -> str:
        """``Kind namespace/name`` (``Kind name`` when cluster-scoped), as ``check`` says it."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{kind_label(self.key) if self.kind else self.kind} {where}"

    def reference(self) -> dict[str, str]:
        """An ``ObjectReference`` (the ``resources`` entry of a report result).

        Why with the uid: a dashboard must tell a deleted and recreated object apart.
        """
        out = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.uid:
            out["uid"] = self.uid
        return out


@dataclass(slots=True)
class Result:
    """One finding about one subject: a workload with its pods, a Pod, a Node.

    ``pods`` counts the Pods that showed it (0 when only the object itself did);
    ``message`` is the first one seen, which is the workload's own when it has the finding,
    because workloads are scanned before their pods.
    """

    ref: Ref
    policy: str
    rule: Rule
    outcome: Outcome
    message: str
    pods: int = 0
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def severity(self) -> str:
        """``high`` for a failure, ``medium`` for a warned violation, ``low`` for drift.

        Why only these three: the older wgpolicyk8s.io/v1alpha2 schema knows no others, and
        a skip or a note has no severity at all (``""``).
        """
        if self.outcome in FAILING:
            return "high"
        if self.outcome == "warn":
            return "medium" if self.rule == "violation" else "low"
        return ""

    def sort_key(self) -> tuple[int, str, str, str, str, str]:
        """What fails first, then by kind, namespace, name, policy and rule: a stable order."""
        r = self.ref
        return (ORDER[self.outcome], r.kind, r.namespace, r.name, self.policy, self.rule)


@dataclass(slots=True)
class Skipped:
    """Pods not admitted at all, and why (mirror pods, finished pods), counted per subject."""

    ref: Ref
    reason: str
    pods: int = 0


Key = tuple[str, str, str, str, str, str]


@dataclass(slots=True)
class Audit:
    """Everything one scan found, plus what it looked at.

    ``namespaces`` is the scope (``None``: the whole cluster, Nodes included) and
    ``excluded`` the namespaces a whole-cluster scan left out; ``objects`` counts what was
    admitted per kind, ``covered`` the ReplicaSets and Jobs reported on their Deployment or
    CronJob instead.
    """

    started: dt.datetime
    namespaces: tuple[str, ...] | None = None
    excluded: tuple[str, ...] = ()
    results: dict[Key, Result] = field(default_factory=dict)
    skipped: dict[tuple[str, str, str, str], Skipped] = field(default_factory=dict)
    objects: Counter[str] = field(default_factory=Counter)
    covered: Counter[str] = field(default_factory=Counter)

    @property
    def cluster_scoped(self) -> bool:
        """Whether cluster-scoped objects (Nodes) were scanned: only in a whole-cluster run."""
        return self.namespaces is None

    def add(
        self,
        ref: Ref,
        policy: str,
        rule: Rule,
        outcome: Outcome,
        message: str,
        *,
        pod: bool = False,
        properties: Mapping[str, str] | None = None,
    ) -> Result:
        """Record one finding, merged into the result for the same subject, policy, rule
        and outcome; a finding from a Pod adds one to its count."""
        key = (ref.kind, ref.namespace, ref.name, policy, rule, outcome)
        result = self.results.get(key)
        if result is None:
            result = self.results[key] = Result(
                ref, policy, rule, outcome, message, properties=dict(properties or {})
            )
        if pod:
            result.pods += 1
        return result

    def skip(self, ref: Ref, reason: str) -> None:
        """Count one Pod that was not admitted, under its subject and reason.

        Why counted even on the pod itself: "1 pod" says what was skipped when the subject
        is a controller, and is harmless when it is the pod.
        """
        key = (ref.kind, ref.namespace, ref.name, reason)
        entry = self.skipped.get(key)
        if entry is None:
            entry = self.skipped[key] = Skipped(ref, reason)
        entry.pods += 1

    def ordered(self) -> list[Result]:
        """Every result, what fails first (:meth:`Result.sort_key`).

        Why sorted here: text, JSON, JUnit and the capped reports must agree on the order.
        """
        return sorted(self.results.values(), key=Result.sort_key)

    def count(self, outcome: Outcome) -> int:
        """How many results have ``outcome``; why: the summary lines of every format."""
        return sum(r.outcome == outcome for r in self.results.values())

    def by_namespace(self) -> Iterator[tuple[str, list[Result]]]:
        """Reported results grouped by namespace (``""``: cluster-scoped), in order.

        Why: reports are per namespace, plus one for cluster-scoped objects.
        """
        groups: dict[str, list[Result]] = {}
        for result in self.ordered():
            if result.outcome in REPORTED:
                groups.setdefault(result.ref.namespace, []).append(result)
        yield from sorted(groups.items())

    def exit_code(self) -> int:
        """1 when a result fails (an enforced violation, an error), else 0.

        Why warnings and drift pass: the policy that produced them is not enforced, and
        drift is what admission would add, not something the cluster refuses.
        """
        return 1 if any(r.outcome in FAILING for r in self.results.values()) else 0
