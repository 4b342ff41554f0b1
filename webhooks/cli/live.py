"""A live cluster as the input of a command that otherwise reads files (``explain``).

"Live" means this and only this across the packages: the cluster read through the API as
input. Turning a stored object back into its CREATE is :mod:`webhooks.audit.recreate`.

Why a module of its own: ``explain --kubeconfig/--context`` reads the nodes, and the pods
of ``--namespace``, through the same reader as ``audit`` (paged lists, retries, one line
naming the request that failed), and the command itself should only choose between files
and the cluster. The ``kubernetes`` client is loaded only when a flag asks for a cluster.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from webhooks.cli.common import (
    USAGE_ERROR,
    fail,
    load_objects,
    read_config_or_exit,
    read_manifests,
    with_gates,
)
from webhooks.cli.common import report_problems as _report
from webhooks.dryrun.report import Report
from webhooks.dryrun.run import dry_run
from webhooks.explain.inventory import nodes_from, pods_from
from webhooks.explain.nodes import FailAs, Node
from webhooks.explain.pods import PodView
from webhooks.k8s.releases import NEWEST, Release, ServerRelease
from webhooks.manifests.reader import Document, api_document

if TYPE_CHECKING:  # the kubernetes client loads only when a flag asks for a cluster
    from webhooks.cluster.listing import Kind, Lister


def options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--kubeconfig`` and ``--context`` (passed as ``kubeconfig`` and ``kube_context``)."""
    command = click.option(
        "--context",
        "kube_context",
        help="Read the nodes (and with -n and no PATH, that namespace's pods) from this "
        "kubeconfig context instead of --nodes.",
    )(command)
    return click.option(
        "--kubeconfig",
        type=click.Path(dir_okay=False),
        help="Read the nodes (and with -n and no PATH, that namespace's pods) from this "
        "cluster instead of --nodes [default context: the current one].",
    )(command)


def pods_or_exit(report: Report) -> list[PodView]:
    """The pods ``explain`` places from a dry run; exits 2 if an input was unusable.

    Why shared: pods from files and pods from a cluster must reach the simulation alike,
    notes on what was left out included.
    """
    if report.problems:
        _report(report.problems)
        sys.exit(USAGE_ERROR)
    pods, notes = pods_from(report)
    for note in notes:
        click.echo(note, err=True)
    return pods


@dataclass(slots=True)
class Cluster:
    """What was read from the cluster: Nodes, Pods to place, and the admission context."""

    nodes: list[Document] = field(default_factory=list)
    pods: list[Document] = field(default_factory=list)
    context: list[dict[str, Any]] = field(default_factory=list)
    devices: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The release the API server runs (the newest when it could not be told).
    release: Release = NEWEST

    def inventory(self, failed: set[str], fail_as: FailAs) -> list[Node]:
        """The Nodes as ``explain``'s inventory; exits 2 as ``--nodes`` does when unusable."""
        inventory = nodes_from(self.nodes, failed, fail_as)
        if inventory.problems:
            _report(inventory.problems)
            sys.exit(USAGE_ERROR)
        if not inventory.nodes:
            fail("the cluster has no Node objects")
        unknown = sorted(failed - {node.name for node in inventory.nodes})
        if unknown:
            fail(f"--fail: no node named {', '.join(unknown)} in the cluster")
        return inventory.nodes

    def placed(
        self,
        paths: Sequence[str],
        config_path: str | None,
        objects: Sequence[str],
        namespace: str | None,
        stdin_name: str,
        gates: Mapping[str, bool] | None = None,
    ) -> list[PodView]:
        """PATH's pods, or else the cluster's, admitted with the cluster's Namespaces,
        RuntimeClasses and DRA objects (and ``--objects``) as the context."""
        for note in self.notes:
            click.echo(note, err=True)
        if not paths and not self.pods:
            return []
        config = with_gates(read_config_or_exit(config_path), gates or {})
        cluster = load_objects(objects)
        for obj in (*self.context, *self.devices):
            cluster.add(obj)
        documents, problems, files = self.pods, [], 0
        if paths:
            manifests = read_manifests(paths, stdin_name)
            documents, problems, files = manifests.documents, manifests.problems, manifests.files
            self.pods = list(documents)  # what explain reads DRA objects from, too
        report = dry_run(
            documents,
            config,
            cluster,
            namespace=namespace or "default",
            problems=problems,
            files=files,
        )
        return pods_or_exit(report)


def read(
    kubeconfig: str | None,
    kube_context: str | None,
    *,
    node_paths: Sequence[str],
    pods_of: str | None,
) -> Cluster | None:
    """The cluster the flags name (``None`` when neither is given); exits 2 in one line when
    it cannot be read. ``pods_of``: the namespace whose pods to read, if any."""
    if kubeconfig is None and kube_context is None:
        return None
    if node_paths:
        fail("--nodes and --kubeconfig/--context both give the nodes; give one of them")
    from webhooks.cluster.listing import ApiError, ClusterError, connect

    try:
        with connect(kubeconfig or "", kube_context or "") as lister:
            return _listed(lister, pods_of)
    except (ClusterError, ApiError) as exc:
        fail(str(exc))


def _served(lister: Lister, kind: Kind, into: list[dict[str, Any]]) -> bool:
    """Add every object of ``kind`` to ``into``; ``False`` when the cluster does not serve
    it (404). Why not an error: a kind a release lacks has no objects to consider."""
    from webhooks.cluster.listing import ApiError

    try:
        into.extend(lister.items(kind))
    except ApiError as exc:
        if exc.status != 404:
            raise
        return False
    return True


def _device_taint_rules(
    lister: Lister, found: ServerRelease, into: list[dict[str, Any]]
) -> list[str]:
    """Read the DeviceTaintRules at the version the cluster's release serves them; the
    notes to show (one line when they are not served, one when the release was assumed).

    Why a note and not a failure: without the gate and its runtime-config (the defaults
    before 1.37) no rule can exist, and the rest of the explanation holds.
    """
    from webhooks.cluster.listing import device_taint_rules

    release = found.release
    kind = device_taint_rules(release)
    rules: list[dict[str, Any]] = []
    if _served(lister, kind, rules):
        # 1.34's v1alpha3 rules may also select by class or CEL, which is not evaluated
        # here: such a rule is left out, and said, rather than applied too widely.
        kept = [r for r in rules if not _selects_beyond_pools(r)]
        into.extend(kept)
        left = len(rules) - len(kept)
        if not left:
            return []
        return [
            f"explain: {left} DeviceTaintRule(s) select devices by deviceClassName or CEL "
            f"selectors ({kind.api_version}), which explain does not evaluate: not considered"
        ]
    gate = release.device_taint_rule_gate
    how = f"gate {gate}, {release.gate_state(gate)}"
    if kind.version != "v1":
        how += f", and --runtime-config={kind.api_version}=true"
    note = (
        f"explain: this cluster does not serve DeviceTaintRules ({kind.api_version} on "
        f"Kubernetes {release.name} needs {how}): taints from such rules are not considered"
    )
    return [*([f"explain: {found.note}"] if found.note else []), note]


def _selects_beyond_pools(rule: dict[str, Any]) -> bool:
    """Whether a DeviceTaintRule's selector uses ``v1alpha3``'s class or CEL fields."""
    spec = rule.get("spec")
    selector = spec.get("deviceSelector") if isinstance(spec, dict) else None
    return isinstance(selector, dict) and bool(
        selector.get("deviceClassName") or selector.get("selectors")
    )


def _listed(lister: Lister, pods_of: str | None) -> Cluster:
    """What ``explain`` reads from a connected cluster (a ``Lister``): see :func:`read`."""
    from webhooks.audit.recreate import pods_to_place
    from webhooks.cluster.listing import DRA_KINDS, KINDS

    server = lister.release()
    found = Cluster(release=server.release)
    for kind in ("Namespace", "RuntimeClass"):
        found.context.extend(lister.items(KINDS[kind]))
    for dra_kind in DRA_KINDS:
        if not _served(lister, dra_kind, found.devices):
            break  # a cluster that does not serve resource.k8s.io/v1 has none
    else:
        found.notes.extend(_device_taint_rules(lister, server, found.devices))
    found.nodes = [
        api_document(node, f"api:nodes/{node['metadata'].get('name', '')}")
        for node in lister.items(KINDS["Node"])
    ]
    if pods_of:
        pods, notes = pods_to_place(lister, pods_of)
        found.notes.extend(notes)
        found.pods = [
            api_document(pod, f"api:pods/{pods_of}/{pod['metadata'].get('name', '')}")
            for pod in pods
        ]
    return found
