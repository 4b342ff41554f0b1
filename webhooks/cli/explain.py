"""The ``explain`` command: read a node inventory and manifests, admit, place, simulate.

Exit codes: 0 when every pod fits some node; 1 when a pod fits no node or admission denies
it; 2 when an input or option is unusable, reported ``file:line: reason`` on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from webhooks.cli.common import config_option, fail, objects_option
from webhooks.cli.dryrun_commands import namespace_option, prepare, stdin_name_option
from webhooks.explain import model
from webhooks.explain import render as explain_format
from webhooks.explain.model import (
    FailAs,
    InventoryError,
    Node,
    PodView,
    Rates,
    parse_node,
    pod_view,
)
from webhooks.manifests.reader import STDIN, Problem, read, split

HELP = """Where each pod can run on the nodes in --nodes, and what happens when nodes fail.

PATH holds Pods or workloads (files, directories, - for stdin); each goes through the
admission chain as `check` admits it, and the Pod it yields is checked against every node
as the scheduler's filters do: NoSchedule and NoExecute taints it does not tolerate,
spec.nodeName, the nodeSelector, required node affinity and resource requests against
allocatable. PreferNoSchedule taints are listed apart (a poor choice, not a refusal). For
NoExecute taints it says whether a running pod is evicted at once, after
tolerationSeconds, or never. A pod that fits no node is reported with the closest node
and what that node lacks.

--nodes takes `kubectl get nodes -o yaml` output or Node manifests. Nodes named by --fail,
and nodes whose Ready condition is not True, are simulated as the node lifecycle
controller handles them: zone states (FullDisruption, PartialDisruption, Normal; zones
from topology.kubernetes.io/zone, one zone when unlabelled), the rate at which the
not-ready/unreachable NoExecute taints are added per zone, and when each pod that may be
running there is evicted. The four rate options are kube-controller-manager's flags, with
its defaults; when evictions stop, the report says so and names the flag to change.

\b
Simplified: capacity ignores pods already running; inter-pod affinity, topology spread,
volumes and host ports are not modelled; a pod is assumed to possibly run on any failed
node it fits; all failures are seen at t=0 (in a cluster an unreachable node is noticed
after --node-monitor-grace-period, and a node failing while its zone is still Normal is
tainted at the normal rate before later failures change the zone's state); within a zone
nodes are tainted in inventory order, the k-th (from 0) k/rate seconds after the first;
"evicted" means deleted, and on an unreachable node the pod stays Terminating until the
kubelet returns or the Node is deleted.

Exit codes: 0 every pod fits a node; 1 a pod fits no node or admission denies it; 2
unusable input.
"""


def _nodes(
    paths: Sequence[str], stdin: bytes | None, failed: set[str], fail_as: FailAs
) -> list[Node]:
    sources, problems = read(paths, stdin, "<stdin>")
    nodes: list[Node] = []
    seen: set[str] = set()
    for source in sources:
        docs, problem = split(source)
        if problem is not None:
            problems.append(problem)
        for doc in docs:
            if doc.obj is None:
                continue
            try:
                node = parse_node(doc.obj, None, f"{doc.path}:{doc.line}")
                if node.name in failed:
                    node = parse_node(doc.obj, fail_as, node.where)
            except InventoryError as exc:
                problems.append(Problem(doc.path, doc.line, str(exc)))
                continue
            if node.name in seen:
                problems.append(Problem(doc.path, doc.line, f"node {node.name} is listed twice"))
                continue
            seen.add(node.name)
            nodes.append(node)
    if problems:
        for p in problems:
            click.echo(str(p), err=True)
        sys.exit(2)
    if not nodes:
        fail(f"--nodes {' '.join(paths)}: no Node objects found")
    unknown = sorted(failed - seen)
    if unknown:
        fail(f"--fail: no node named {', '.join(unknown)} in the inventory")
    return nodes


def _pods(
    paths: Sequence[str],
    config_path: str | None,
    objects: Sequence[str],
    namespace: str | None,
    stdin_name: str,
) -> list[PodView]:
    if not paths:
        return []
    run = prepare(paths, config_path, objects, namespace, stdin_name)
    if run.report.problems:
        for problem in run.report.problems:
            click.echo(str(problem), err=True)
        sys.exit(2)
    pods: list[PodView] = []
    for doc in run.documents:
        checked = run.engine.check(doc, run.report)
        if checked is None:
            continue
        if checked.kind == "Node":
            click.echo(f"{doc.path}:{doc.line}: a Node in PATH is ignored; use --nodes", err=True)
            continue
        pod = pod_view(checked)
        if pod is not None:
            pods.append(pod)
    return pods


def _fail_names(values: Sequence[str]) -> set[str]:
    return {name.strip() for value in values for name in value.split(",") if name.strip()}


#: The lifecycle controller's defaults, as the options' defaults: one source of truth.
_DEFAULT_RATES = Rates()


@click.command(help=HELP)
@click.argument("paths", nargs=-1, metavar="[PATH... | -]")
@click.option(
    "--nodes",
    "node_paths",
    multiple=True,
    required=True,
    metavar="FILE",
    help="Node inventory: `kubectl get nodes -o yaml`, or Node YAML/JSON; repeatable, - for stdin.",
)
@click.option(
    "--fail",
    "fail_nodes",
    multiple=True,
    metavar="NODE[,NODE...]",
    help="Simulate these nodes failing; repeatable.",
)
@click.option(
    "--fail-as",
    type=click.Choice(["unreachable", "not-ready"]),
    default="unreachable",
    show_default=True,
    help="How --fail nodes fail: the kubelet stops reporting (Ready Unknown), or reports "
    "Ready False.",
)
@click.option(
    "--node-eviction-rate",
    type=click.FloatRange(min=0),
    default=_DEFAULT_RATES.node_eviction_rate,
    show_default=True,
    help="Nodes per second tainted in a Normal or FullDisruption zone.",
)
@click.option(
    "--secondary-node-eviction-rate",
    type=click.FloatRange(min=0),
    default=_DEFAULT_RATES.secondary_node_eviction_rate,
    show_default=True,
    help="Nodes per second tainted in a PartialDisruption zone larger than "
    "--large-cluster-size-threshold.",
)
@click.option(
    "--unhealthy-zone-threshold",
    type=click.FloatRange(min=0),
    default=_DEFAULT_RATES.unhealthy_zone_threshold,
    show_default=True,
    help="Share of not-Ready nodes (with more than 2) that makes a zone PartialDisruption.",
)
@click.option(
    "--large-cluster-size-threshold",
    type=click.IntRange(min=0),
    default=_DEFAULT_RATES.large_cluster_size_threshold,
    show_default=True,
    help="A PartialDisruption zone of at most this many nodes stops evictions (rate 0).",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
@config_option()
@objects_option
@namespace_option
@stdin_name_option
def explain(
    paths: tuple[str, ...],
    node_paths: tuple[str, ...],
    fail_nodes: tuple[str, ...],
    fail_as: FailAs,
    node_eviction_rate: float,
    secondary_node_eviction_rate: float,
    unhealthy_zone_threshold: float,
    large_cluster_size_threshold: int,
    output: str,
    config_path: str | None,
    objects: tuple[str, ...],
    namespace: str | None,
    stdin_name: str,
) -> None:
    """Load, admit, place, simulate, render; the help text is :data:`HELP`."""
    if STDIN in node_paths and STDIN in paths:
        fail("--nodes - and PATH - cannot both read stdin")
    stdin = sys.stdin.buffer.read() if STDIN in node_paths else None
    nodes = _nodes(node_paths, stdin, _fail_names(fail_nodes), fail_as)
    pods = _pods(paths, config_path, objects, namespace, stdin_name)
    rates = Rates(
        node_eviction_rate=node_eviction_rate,
        secondary_node_eviction_rate=secondary_node_eviction_rate,
        unhealthy_zone_threshold=unhealthy_zone_threshold,
        large_cluster_size_threshold=large_cluster_size_threshold,
    )
    explanation = model.explain(nodes, pods, rates)
    render = explain_format.json if output == "json" else explain_format.text
    click.echo(render(explanation), nl=False)
    sys.exit(explanation.exit_code)
