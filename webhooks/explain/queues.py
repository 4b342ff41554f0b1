"""Kueue queues: which ResourceFlavors Kueue may give a pod, read from its LocalQueue.

Why apart from :mod:`.templates`: a ResourceFlavor describes nodes, while whether a pod may
have it is a question of queues. Kueue admits a workload only through the LocalQueue its
``kueue.x-k8s.io/queue-name`` label names (in the workload's namespace), and only to the
flavors its ClusterQueue lists in ``spec.resourceGroups[].flavors``. Offering every flavor
to every pod answers "it fits" for pods Kueue never touches, and for flavors their queue
never reaches. The rules followed, each Kueue's own:

* **Which object carries the label** (:data:`QUEUE_LABEL_PATHS`): the Job, Pod,
  Deployment, StatefulSet (or ReplicaSet, ReplicationController) itself, or else its pod
  template, since Kueue's pod integration manages a labelled pod; a CronJob's
  ``spec.jobTemplate`` (the Jobs it creates are what Kueue sees), or else their pod
  template. A DaemonSet is never managed. Labels only: Kueue reads no annotation for the
  queue.
* **No label**: a LocalQueue named ``default`` in the namespace is the queue (Kueue's
  LocalQueueDefaulting, always on in current releases). Without one the workload is not
  Kueue's unless the configuration sets ``manageJobsWithoutQueueName``; then Kueue
  suspends it until it names a queue, so it is given no flavor either. Both apply only in
  namespaces Kueue manages, by default every namespace but ``kube-system`` and
  ``kueue-system`` (``managedJobsNamespaceSelector``; its default is the one read here).
* **The LocalQueue's ClusterQueue** (``spec.clusterQueue``) must exist, must select the
  namespace (``spec.namespaceSelector``: absent selects none, ``{}`` all), must not be
  stopped (``spec.stopPolicy`` other than ``None``, on either queue), and every flavor it
  names must exist: Kueue keeps a ClusterQueue inactive until they all do.

``spec.cohort`` (borrowing) and quota decide *whether there is room*, which is Kueue's to
say at run time; they do not change which flavors a queue can reach, and are not read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from webhooks.explain.nodes import InventoryError
from webhooks.k8s.podspec import POD, GroupKind
from webhooks.k8s.selectors import Selector, compile_selector, selector_problems
from webhooks.manifests.errors import show

QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
#: The LocalQueue an unlabelled workload gets when its namespace has one of this name.
DEFAULT_QUEUE: Final = "default"
#: Kueue's default ``managedJobsNamespaceSelector`` excludes these namespaces.
UNMANAGED_NAMESPACES: Final = frozenset({"kube-system", "kueue-system"})
QUEUE_APIS: Final = ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1")
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"

_OWN: Final = ("metadata", "labels")
_TEMPLATE: Final = ("spec", "template", "metadata", "labels")
#: Workload kind → where Kueue looks for its queue label, first match wins: the object it
#: turns into a workload, then the pod template (its pods carry the label, and Kueue's
#: pod integration manages a labelled pod whose owner it does not manage). Kinds not
#: listed (DaemonSet) are never managed by Kueue.
QUEUE_LABEL_PATHS: Final[Mapping[GroupKind, tuple[tuple[str, ...], ...]]] = {
    POD: (_OWN,),
    ("batch", "Job"): (_OWN, _TEMPLATE),
    ("apps", "Deployment"): (_OWN, _TEMPLATE),
    ("apps", "StatefulSet"): (_OWN, _TEMPLATE),
    ("apps", "ReplicaSet"): (_OWN, _TEMPLATE),
    ("", "ReplicationController"): (_OWN, _TEMPLATE),
    ("batch", "CronJob"): (
        ("spec", "jobTemplate", "metadata", "labels"),
        ("spec", "jobTemplate", "spec", "template", "metadata", "labels"),
    ),
    ("", "PodTemplate"): (("template", "metadata", "labels"),),
}


def _label_at(obj: Any, path: tuple[str, ...]) -> str | None:
    node: Any = obj
    for part in path:
        node = node.get(part) if isinstance(node, Mapping) else None
    value = node.get(QUEUE_LABEL) if isinstance(node, Mapping) else None
    return value if isinstance(value, str) and value else None


def queue_label(kind: GroupKind, obj: Any) -> str | None:
    """The ``kueue.x-k8s.io/queue-name`` an object of ``kind`` carries where Kueue reads it;
    ``None`` when it has none (or ``kind`` is one Kueue never manages).

    Why a table: Kueue reads the label from the object it turns into a workload, which is
    not always the one written (a CronJob's Jobs), or from the pods themselves.
    """
    for path in QUEUE_LABEL_PATHS.get(kind, ()):
        found = _label_at(obj, path)
        if found is not None:
            return found
    return None


@dataclass(frozen=True, slots=True)
class LocalQueue:
    """A LocalQueue: its namespace, name, ClusterQueue and where it was read."""

    namespace: str
    name: str
    cluster_queue: str
    stopped: str = ""
    where: str = ""

    @property
    def title(self) -> str:
        """``LocalQueue team-a/user-queue``; why: every message names it so."""
        return f"LocalQueue {self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    """A ClusterQueue: its flavors in order, the namespaces it serves (``None``: none)."""

    name: str
    flavors: tuple[str, ...]
    namespaces: Selector | None
    stopped: str = ""
    where: str = ""

    @property
    def title(self) -> str:
        """``ClusterQueue cluster-queue``; why: every message names it so."""
        return f"ClusterQueue {self.name}"


def _meta(obj: Mapping[str, Any], kind: str) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    if obj.get("apiVersion") not in QUEUE_APIS:
        raise InventoryError(
            f"{kind} apiVersion {show(obj.get('apiVersion'))}: --node-templates reads "
            f"{' and '.join(QUEUE_APIS)} {kind}s"
        )
    meta, spec = obj.get("metadata"), obj.get("spec")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise InventoryError(f"a {kind} without metadata.name")
    if spec is not None and not isinstance(spec, Mapping):
        raise InventoryError("spec must be a mapping")
    return meta, spec or {}


def _stop(spec: Mapping[str, Any]) -> str:
    policy = spec.get("stopPolicy")
    return policy if isinstance(policy, str) and policy not in ("", "None") else ""


def parse_local_queue(
    obj: Mapping[str, Any], where: str = "", namespace: str = "default"
) -> LocalQueue:
    """A :class:`LocalQueue`; one without ``metadata.namespace`` is in ``namespace``, as
    ``kubectl apply`` would put it. Why ``spec.clusterQueue`` is required: the API's
    validation refuses a LocalQueue without it, so such a queue never exists."""
    meta, spec = _meta(obj, "LocalQueue")
    target = spec.get("clusterQueue")
    if not isinstance(target, str) or not target:
        raise InventoryError("a LocalQueue needs spec.clusterQueue")
    ns = meta.get("namespace")
    return LocalQueue(
        ns if isinstance(ns, str) and ns else namespace, meta["name"], target, _stop(spec), where
    )


def parse_cluster_queue(obj: Mapping[str, Any], where: str = "") -> ClusterQueue:
    """A :class:`ClusterQueue`: the flavor names of every resource group, in order, and its
    namespaceSelector. Why refuse a malformed selector: the API refuses it, so no such
    queue serves anyone."""
    meta, spec = _meta(obj, "ClusterQueue")
    groups = spec.get("resourceGroups") or []
    if not isinstance(groups, list):
        raise InventoryError("spec.resourceGroups must be a list")
    flavors: list[str] = []
    for index, group in enumerate(groups):
        raw = group.get("flavors") if isinstance(group, Mapping) else None
        if not isinstance(raw, list):
            raise InventoryError(f"spec.resourceGroups[{index}].flavors must be a list")
        for position, flavor in enumerate(raw):
            name = flavor.get("name") if isinstance(flavor, Mapping) else None
            if not isinstance(name, str) or not name:
                raise InventoryError(
                    f"spec.resourceGroups[{index}].flavors[{position}] needs a name"
                )
            if name not in flavors:
                flavors.append(name)
    selector = spec.get("namespaceSelector")
    compiled = None
    if selector is not None:
        problems = selector_problems(selector)
        if problems:
            raise InventoryError(f"spec.namespaceSelector: {problems[0]}")
        compiled = compile_selector(selector)
    return ClusterQueue(meta["name"], tuple(flavors), compiled, _stop(spec), where)


@dataclass(frozen=True, slots=True)
class Assignment:
    """What Kueue may give one pod: ``flavors`` (names) through ``queue``, or, when
    ``flavors`` is ``None``, ``reason`` says why it gets none; ``suspended``: Kueue holds
    the workload and it never runs (manageJobsWithoutQueueName without a queue)."""

    flavors: frozenset[str] | None
    reason: str = ""
    suspended: bool = False
    queue: str = ""
    cluster_queue: str = ""
    order: tuple[str, ...] = ()

    def refusal(self, flavor: str) -> str:
        """Why ``flavor`` is not for this pod (``""``: it is). Why here: the reason names
        the queue, which only the assignment knows."""
        if self.flavors is None:
            return self.reason
        if flavor in self.flavors:
            return ""
        listed = ", ".join(self.order) or "none"
        return (
            f"not a flavor of {self.cluster_queue} ({self.queue}'s): Kueue gives its "
            f"workloads only {listed}"
        )


@dataclass(slots=True)
class Queues:
    """Every LocalQueue and ClusterQueue among the inputs, indexed once by name, the
    ResourceFlavors that exist, the Namespaces' labels, and whether Kueue manages
    workloads without a queue label.

    Why indexed: each pod looks its queue up, and a lookup must not grow with the queues.
    """

    local: dict[tuple[str, str], LocalQueue] = field(default_factory=dict)
    cluster: dict[str, ClusterQueue] = field(default_factory=dict)
    flavors: frozenset[str] = frozenset()
    namespaces: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    manage_without_queue_name: bool = False

    @property
    def given(self) -> bool:
        """Whether any LocalQueue or ClusterQueue was read; why: without them no queue
        can be resolved, which the warnings say once."""
        return bool(self.local or self.cluster)

    def add_namespaces(self, objects: Iterable[Any]) -> None:
        """Index the labels of the Namespace objects among ``objects``; why: a
        ClusterQueue's namespaceSelector is matched against them."""
        for obj in objects:
            if not isinstance(obj, Mapping) or obj.get("kind") != "Namespace":
                continue
            meta = obj.get("metadata")
            name = meta.get("name") if isinstance(meta, Mapping) else None
            labels = meta.get("labels") if isinstance(meta, Mapping) else None
            if isinstance(name, str) and name:
                self.namespaces[name] = labels if isinstance(labels, Mapping) else {}

    def assign(self, kind: GroupKind, label: str | None, namespace: str) -> Assignment:
        """The flavors Kueue may give a pod of a ``kind`` object labelled ``label`` in
        ``namespace`` (see the module docstring for each rule)."""
        if kind not in QUEUE_LABEL_PATHS:
            return Assignment(None, f"not managed by Kueue: it has no {kind[1]} integration")
        name = label
        if name is None:
            managed = namespace not in UNMANAGED_NAMESPACES
            if managed and (namespace, DEFAULT_QUEUE) in self.local:
                name = DEFAULT_QUEUE
            elif managed and self.manage_without_queue_name:
                return Assignment(
                    None,
                    f"Kueue suspends it until it has a {QUEUE_LABEL} label "
                    f"(manageJobsWithoutQueueName; no LocalQueue {DEFAULT_QUEUE} in "
                    f"namespace {namespace})",
                    suspended=True,
                )
            else:
                return Assignment(None, f"not managed by Kueue: no {QUEUE_LABEL} label")
        return self._through(namespace, name)

    def _through(self, namespace: str, name: str) -> Assignment:
        local = self.local.get((namespace, name))
        title = f"LocalQueue {namespace}/{name}"
        if local is None:
            given = "" if self.local else " (no LocalQueue is among the inputs)"
            return Assignment(
                None,
                f"{QUEUE_LABEL} names {title}, which is not among --node-templates{given}: "
                "the flavors of its ClusterQueue cannot be known",
            )
        if local.stopped:
            return Assignment(None, f"{title} is stopped (spec.stopPolicy {local.stopped})")
        queue = self.cluster.get(local.cluster_queue)
        if queue is None:
            return Assignment(
                None,
                f"{title} points at ClusterQueue {local.cluster_queue}, which is not among "
                "--node-templates: the flavors it offers cannot be known",
            )
        if queue.stopped:
            return Assignment(None, f"{queue.title} is stopped (spec.stopPolicy {queue.stopped})")
        labels = {**self.namespaces.get(namespace, {}), NAMESPACE_NAME_LABEL: namespace}
        if queue.namespaces is None or not queue.namespaces.matches(labels):
            why = "has no namespaceSelector, which selects no namespace"
            if queue.namespaces is not None:
                known = "" if namespace in self.namespaces else " (its Namespace is not given)"
                why = f"'s namespaceSelector does not select namespace {namespace}{known}"
            return Assignment(None, f"{queue.title} (of {title}) {why}: Kueue admits nothing")
        missing = [f for f in queue.flavors if f not in self.flavors]
        if missing:
            return Assignment(
                None,
                f"{queue.title} (of {title}) names ResourceFlavor {', '.join(missing)}, not "
                "among --node-templates: Kueue keeps the ClusterQueue inactive until it exists",
            )
        return Assignment(
            frozenset(queue.flavors), queue=title, cluster_queue=queue.title, order=queue.flavors
        )
