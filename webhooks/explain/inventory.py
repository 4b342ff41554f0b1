"""What ``explain`` works on: the node inventory and the admitted pods, from manifests.

Why apart from the CLI: the live-cluster reader and the tests build the same inventory from
documents, and neither should need a command line to do it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from webhooks.dryrun.engine import Report
from webhooks.explain.model import FailAs, InventoryError, Node, PodView, parse_node, pod_view
from webhooks.explain.templates import Template, parse_template
from webhooks.manifests.errors import ManifestError
from webhooks.manifests.reader import Document


@dataclass(slots=True)
class Inventory:
    """Nodes in input order, and every document that could not be used as one."""

    nodes: list[Node] = field(default_factory=list)
    problems: list[ManifestError] = field(default_factory=list)


def nodes_from(documents: Iterable[Document], failed: set[str], fail_as: FailAs) -> Inventory:
    """Parse Node documents; those named in ``failed`` fail as ``fail_as``.

    Why a name listed twice is a problem: the simulation keys nodes by name, and two
    different descriptions of one node would make its answer depend on input order.
    """
    inventory = Inventory()
    seen: set[str] = set()
    for doc in documents:
        if doc.obj is None:
            continue
        try:
            node = parse_node(doc.obj, None, f"{doc.path}:{doc.line}")
            if node.name in failed:
                node = parse_node(doc.obj, fail_as, node.where)
        except InventoryError as exc:
            inventory.problems.append(ManifestError(doc.path, doc.line, str(exc)))
            continue
        if node.name in seen:
            inventory.problems.append(
                ManifestError(doc.path, doc.line, f"node {node.name} is listed twice")
            )
            continue
        seen.add(node.name)
        inventory.nodes.append(node)
    return inventory


@dataclass(slots=True)
class Templates:
    """Node templates in input order, and every document that could not be used as one."""

    templates: list[Template] = field(default_factory=list)
    problems: list[ManifestError] = field(default_factory=list)


def templates_from(documents: Iterable[Document]) -> Templates:
    """Parse NodePools and node-group Nodes from ``--node-templates`` documents.

    Why a title listed twice is a problem: coverage warnings and scale-up answers name a
    template by its title, which must then mean one thing.
    """
    found = Templates()
    seen: set[str] = set()
    for doc in documents:
        if doc.obj is None:
            continue
        try:
            template = parse_template(doc.obj, f"{doc.path}:{doc.line}")
        except InventoryError as exc:
            found.problems.append(ManifestError(doc.path, doc.line, str(exc)))
            continue
        if template.title in seen:
            found.problems.append(
                ManifestError(doc.path, doc.line, f"{template.title} is listed twice")
            )
            continue
        seen.add(template.title)
        found.templates.append(template)
    return found


def pods_from(report: Report) -> tuple[list[PodView], list[str]]:
    """The Pod each admitted object yields, and a note for each Node found among them.

    Why Nodes are noted, not placed: they belong in ``--nodes``; a Node in PATH is almost
    always a file given to the wrong option.
    """
    pods: list[PodView] = []
    notes: list[str] = []
    for checked in report.checked:
        if checked.kind == "Node":
            doc = checked.document
            notes.append(f"{doc.path}:{doc.line}: a Node in PATH is ignored; use --nodes")
            continue
        pod = pod_view(checked)
        if pod is not None:
            pods.append(pod)
    return pods, notes
