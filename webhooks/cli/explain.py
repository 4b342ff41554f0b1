"""The ``explain`` command: read a node inventory and manifests, admit, place, simulate.

Exit codes: 0 when every pod fits some node; 1 when a pod fits no node or admission denies
it; 2 when an input or option is unusable, reported ``file:line: reason`` on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from webhooks.cli import live
from webhooks.cli.common import (
    USAGE_ERROR,
    fail,
    load_config,
    load_objects,
    manifest_inputs,
    read_manifests,
    report_problems,
)
from webhooks.dryrun.run import dry_run
from webhooks.explain import model
from webhooks.explain import render as explain_format
from webhooks.explain.inventory import nodes_from, pods_from
from webhooks.explain.model import FailAs, Node, PodView, Rates
from webhooks.manifests.reader import STDIN

HELP = """Where each pod can run on the nodes in --nodes, and what happens when nodes fail.

PATH holds Pods or workloads (files, directories, - for stdin); each goes through the
admission chain as `check` admits it, and the Pod it yields is checked against every node
as the scheduler's filters do: NoSchedule and NoExecute taints it does not tolerate,
spec.nodeName, the nodeSelector, required node affinity and resource requests against
allocatable. PreferNoSchedule taints are listed apart (a poor choice, not a refusal). For
NoExecute taints it says whether a running pod is evicted at once, after
tolerationSeconds, or never. A pod that fits no node is reported with the closest node
and what that node lacks.

--kubeconfig FILE or --context NAME read the nodes from that cluster instead of --nodes, and
with -n NS and no PATH the pods of NS (one per controller, without their node binding), both
through the reader `audit` uses; the cluster's Namespaces and RuntimeClasses are then the
admission context.

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


def _nodes(paths: Sequence[str], stdin_name: str, failed: set[str], fail_as: FailAs) -> list[Node]:
    manifests = read_manifests(paths, stdin_name, what="--nodes")
    inventory = nodes_from(manifests.documents, failed, fail_as)
    problems = [*manifests.problems, *inventory.problems]
    if problems:
        report_problems(problems)
        sys.exit(USAGE_ERROR)
    if not inventory.nodes:
        fail(f"--nodes {' '.join(paths)}: no Node objects found")
    unknown = sorted(failed - {node.name for node in inventory.nodes})
    if unknown:
        fail(f"--fail: no node named {', '.join(unknown)} in the inventory")
    return inventory.nodes


def _pods(
    paths: Sequence[str],
    config_path: str | None,
    objects: Sequence[str],
    namespace: str | None,
    stdin_name: str,
) -> list[PodView]:
    if not paths:
        return []
    config = load_config(config_path)
    cluster = load_objects(objects)
    manifests = read_manifests(paths, stdin_name)
    report = dry_run(
        manifests.documents,
        config,
        cluster,
        namespace=namespace or "default",
        problems=manifests.problems,
        files=manifests.files,
    )
    if report.problems:
        report_problems(report.problems)
        sys.exit(USAGE_ERROR)
    pods, notes = pods_from(report)
    for note in notes:
        click.echo(note, err=True)
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
    metavar="FILE",
    help="Node inventory: `kubectl get nodes -o yaml`, or Node YAML/JSON; repeatable, - for stdin.",
)
@live.options
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
@manifest_inputs
def explain(
    paths: tuple[str, ...],
    node_paths: tuple[str, ...],
    kubeconfig: str | None,
    kube_context: str | None,
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
    cluster = live.read(
        kubeconfig, kube_context, node_paths=node_paths, pods_of=None if paths else namespace
    )
    if cluster is None and not node_paths:
        fail("give --nodes FILE, or --kubeconfig/--context to read the nodes from a cluster")
    if cluster is not None:
        nodes = cluster.inventory(_fail_names(fail_nodes), fail_as)
        pods = cluster.placed(paths, config_path, objects, namespace, stdin_name)
    else:
        nodes = _nodes(node_paths, stdin_name, _fail_names(fail_nodes), fail_as)
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
