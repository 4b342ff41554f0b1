"""What ``explain`` works on: the node inventory and the admitted pods, from manifests.

Why apart from the CLI: the live-cluster reader and the tests build the same inventory from
documents, and neither should need a command line to do it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from webhooks.dryrun.report import Report
from webhooks.explain.devices import DeviceInventory, is_device_object
from webhooks.explain.nodes import FailAs, InventoryError, Node, parse_node
from webhooks.explain.pods import PodView, pod_view
from webhooks.explain.queues import (
    ClusterQueue,
    LocalQueue,
    Queues,
    parse_cluster_queue,
    parse_local_queue,
)
from webhooks.explain.templates import TEMPLATE_KINDS, Template, parse_template
from webhooks.k8s.podspec import NODE
from webhooks.manifests.errors import ManifestError
from webhooks.manifests.reader import Document

T = TypeVar("T")


def _parse_unique(
    documents: Iterable[Document],
    parse: Callable[[Any, str], T],
    title: Callable[[T], str],
    into: list[T],
    problems: list[ManifestError],
) -> None:
    """Parse each document into ``into``; an unusable one, or a title seen before, is a problem.

    Why a repeated title is refused: answers name nodes and templates by it, and two
    descriptions of one would make an answer depend on input order.
    """
    seen: set[str] = set()
    for doc in documents:
        if doc.obj is None:
            continue
        try:
            item = parse(doc.obj, f"{doc.path}:{doc.line}")
        except InventoryError as exc:
            problems.append(ManifestError(doc.path, doc.line, str(exc)))
            continue
        name = title(item)
        if name in seen:
            problems.append(ManifestError(doc.path, doc.line, f"{name} is listed twice"))
            continue
        seen.add(name)
        into.append(item)


@dataclass(slots=True)
class Inventory:
    """Nodes in input order, and every document that could not be used as one."""

    nodes: list[Node] = field(default_factory=list)
    problems: list[ManifestError] = field(default_factory=list)


def nodes_from(documents: Iterable[Document], failed: set[str], fail_as: FailAs) -> Inventory:
    """Parse Node documents; those named in ``failed`` fail as ``fail_as``. DRA objects
    (ResourceSlices and the rest, as ``kubectl get nodes,resourceslices`` writes them) are
    left for :func:`devices_from`.

    Why a name listed twice is a problem: the simulation keys nodes by name, and two
    different descriptions of one node would make its answer depend on input order.
    """

    def parse(obj: Any, where: str) -> Node:
        node = parse_node(obj, None, where)
        return parse_node(obj, fail_as, node.where) if node.name in failed else node

    inventory = Inventory()
    _parse_unique(
        [d for d in documents if not is_device_object(d.obj)],
        parse,
        lambda node: f"node {node.name}",
        inventory.nodes,
        inventory.problems,
    )
    return inventory


@dataclass(slots=True)
class Templates:
    """Node templates in input order, Kueue's queues, every document that could not be
    used as either, and a note (``file:line: skipped kind X``) for each document of
    another kind."""

    templates: list[Template] = field(default_factory=list)
    problems: list[ManifestError] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    queues: Queues = field(default_factory=Queues)


def templates_from(documents: Iterable[Document], namespace: str = "default") -> Templates:
    """Parse NodePools, node-group Nodes and ResourceFlavors from ``--node-templates``
    documents, and the LocalQueues (those without a namespace in ``namespace``) and
    ClusterQueues that decide which flavors a pod may have; skip documents of other
    kinds with a note.

    Why skip rather than refuse: Karpenter's examples, and most clusters' manifests, keep a
    NodePool and its EC2NodeClass (or another node class) in one file, and that file is what
    a user points at; the other kinds say nothing about where a pod can run. A document
    without a kind, or a NodePool that cannot be read, is still a problem: it may be the
    template the user meant. Why a title listed twice is a problem: coverage warnings and
    scale-up answers name a template by its title, which must then mean one thing.
    """
    found = Templates()
    wanted: list[Document] = []
    local: list[Document] = []
    cluster: list[Document] = []
    for doc in documents:
        kind = doc.obj.get("kind") if isinstance(doc.obj, Mapping) else None
        if kind == "LocalQueue":
            local.append(doc)
        elif kind == "ClusterQueue":
            cluster.append(doc)
        elif isinstance(kind, str) and kind and kind not in TEMPLATE_KINDS:
            found.skipped.append(f"{doc.path}:{doc.line}: skipped kind {kind}")
        else:
            wanted.append(doc)
    _parse_unique(wanted, parse_template, lambda t: t.title, found.templates, found.problems)
    locals_: list[LocalQueue] = []
    _parse_unique(
        local,
        lambda obj, where: parse_local_queue(obj, where, namespace),
        lambda q: q.title,
        locals_,
        found.problems,
    )
    clusters: list[ClusterQueue] = []
    _parse_unique(cluster, parse_cluster_queue, lambda q: q.title, clusters, found.problems)
    found.queues.local = {(q.namespace, q.name): q for q in locals_}
    found.queues.cluster = {q.name: q for q in clusters}
    return found


def pods_from(report: Report) -> tuple[list[PodView], list[str]]:
    """The Pod each admitted object yields, and a note for each Node found among them and
    each kind of another group that takes a built-in's name.

    Why Nodes are noted, not placed: they belong in ``--nodes``; a Node in PATH is almost
    always a file given to the wrong option. Why the foreign kinds: an ``apps.kruise.io``
    DaemonSet is not placed as a DaemonSet's pods, and the user must see that it was not.
    """
    pods: list[PodView] = []
    notes = [f"{doc.path}:{doc.line}: skipped: {reason}" for doc, reason in report.foreign]
    for checked in report.checked:
        if checked.key == NODE:
            doc = checked.document
            notes.append(f"{doc.path}:{doc.line}: a Node in PATH is ignored; use --nodes")
            continue
        pod = pod_view(checked)
        if pod is not None:
            pods.append(pod)
    return pods, notes


def devices_from(objects: Iterable[Any]) -> DeviceInventory:
    """The DRA objects among ``objects`` (documents' objects or API objects), indexed.

    Why from everywhere: slices come with the nodes, classes and claim templates with the
    workloads or ``--objects``, and a cluster gives all of them.
    """
    found = DeviceInventory()
    for obj in objects:
        if isinstance(obj, Mapping):
            found.add(obj)
    return found


def with_devices(
    nodes: Sequence[Node],
    pods: Sequence[PodView],
    devices: DeviceInventory,
    comparisons: bool,
    bridge: bool = True,
) -> tuple[list[Node], list[PodView]]:
    """The nodes with the devices their slices publish, and the pods with their claims
    resolved, the cluster's TaintTolerationComparisonOperators gate, and (``bridge``, its
    DRAExtendedResource gate) the extended resources DeviceClasses serve.

    Why after admission: the claims are those of the pod admission stores.
    """
    if devices:
        placed = []
        for node in nodes:
            found, problems = devices.devices_for(node.name, node.labels)
            placed.append(replace(node, devices=tuple(found), device_problems=tuple(problems)))
        nodes = placed
    ready = [
        replace(
            pod,
            comparisons=comparisons,
            claims=devices.resolve(pod.spec, pod.namespace),
            extended=devices.extended(pod.spec, bridge),
            classes=devices.classes,
        )
        for pod in pods
    ]
    return list(nodes), ready
