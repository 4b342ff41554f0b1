"""A pod as ``explain`` places it: the Pod admission stores, and what admission did to it.

Why apart from the nodes and the fit: every question ``explain`` asks (where it fits, when
it is evicted, whether a template can host it, whether a DaemonSet covers a node) starts
from the same admitted pod, its tolerations, ``spec.nodeName`` and the resources the
scheduler reserves for it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from webhooks.dryrun.report import Checked
from webhooks.explain.devices import ExtendedDevices, ResolvedClaim
from webhooks.explain.queues import queue_label
from webhooks.k8s.podspec import DAEMON_SET, POD, POD_SPEC_PATHS, GroupKind, get_path
from webhooks.k8s.quantity import QuantityError, parse_resource_list
from webhooks.k8s.tolerations import identity, tolerates


def toleration_seconds(toleration: Mapping[str, Any]) -> int | None:
    """A toleration's ``tolerationSeconds``, or ``None`` when it has none (or not a number).

    Why one reader: eviction times, failover times and what admission added all key on it,
    and a boolean must not count as a number of seconds.
    """
    value = toleration.get("tolerationSeconds")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _toleration_key(t: Mapping[str, Any]) -> tuple[tuple[str, str, str, str], int | None]:
    return identity(t), toleration_seconds(t)


@dataclass(frozen=True, slots=True)
class PodView:
    """A pod as admission stores it, and what admission did to it.

    ``comparisons`` is the TaintTolerationComparisonOperators gate the cluster runs with
    (``Gt``/``Lt`` tolerations match only with it). ``claims`` are the pod's DRA claims
    resolved, ``extended`` the extended resources a DeviceClass can serve, and ``classes``
    the DeviceClasses by name (:mod:`.devices`); all empty for a pod without DRA.
    ``kind`` is the kind of the object written, and ``queue`` the Kueue LocalQueue its
    ``kueue.x-k8s.io/queue-name`` label names where Kueue reads it (:mod:`.queues`).
    """

    subject: str
    spec: Mapping[str, Any]
    where: str = ""
    added: frozenset[tuple[tuple[str, str, str, str], int | None]] = frozenset()
    admission: tuple[str, ...] = ()
    denied: tuple[str, ...] = ()
    daemon: bool = False
    namespace: str = ""
    comparisons: bool = False
    claims: tuple[ResolvedClaim, ...] = ()
    extended: tuple[ExtendedDevices, ...] = ()
    classes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    kind: GroupKind = ("", "")
    queue: str | None = None

    def tolerating(
        self, taint: Mapping[str, Any], extra: Sequence[Mapping[str, Any]] = ()
    ) -> Mapping[str, Any] | None:
        """The first of the pod's tolerations (then ``extra``) that tolerates ``taint``.

        Why here: whether ``Gt``/``Lt`` match depends on the cluster's gate, which every
        question about taints must honour alike.
        """
        return next(
            (
                t
                for t in (*self.tolerations, *extra)
                if tolerates(t, taint, comparisons=self.comparisons)
            ),
            None,
        )

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
    kind = checked.key
    path = POD_SPEC_PATHS.get(kind)
    if path is None or not checked.admitted:
        return None
    pod = checked.stored.get("object" if kind == POD else "pod")
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
    subject = checked.subject if kind == POD else f"pods of {checked.subject}"
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
        daemon=kind == DAEMON_SET,
        namespace=checked.namespace,
        kind=kind,
        queue=queue_label(kind, checked.stored.get("object") or checked.document.obj),
    )


#: Resources a pod-level request may name besides ``hugepages-<size>``.
POD_LEVEL: Final = frozenset({"cpu", "memory"})


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


def _pod_level(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """The pod-level requests the scheduler honours (``PodLevelResources``, on by default
    since v1.34): CPU, memory and ``hugepages-*``; other names there are ignored."""
    found = _requests(spec)  # spec.resources.requests, read as a container's are
    return {n: a for n, a in found.items() if n in POD_LEVEL or n.startswith("hugepages-")}


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """What the scheduler reserves for a pod: its effective requests, overhead included.

    App containers and sidecars (init containers with ``restartPolicy: Always``) add up; an
    ordinary init container runs alone with the sidecars started before it, so the result
    is the larger of the two, per resource. Pod-level requests (``spec.resources``, for the
    resources it supports: CPU, memory and huge pages) replace that sum, since the
    containers share them; then ``spec.overhead`` is added. Why not only the app
    containers: an init container asking for more decides where the pod fits, and so does
    a pod-level request larger than its containers'.
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
    result.update(_pod_level(spec))
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
