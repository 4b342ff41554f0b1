"""The ``explain`` command: read a node inventory, node templates and manifests; admit,
place, try templates, check DaemonSet coverage, simulate failures.

Exit codes: 0 when every pod fits some node or a template can add one; 1 when a pod fits
neither or admission denies it; 2 when an input or option is unusable, reported
``file:line: reason`` on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from webhooks.cli import live
from webhooks.cli.common import (
    COMPARISON_OPERATORS,
    EXPLAIN_GATES,
    USAGE_ERROR,
    dry_run_inputs,
    fail,
    feature_gates_option,
    manifest_inputs,
    parse_feature_gates,
    read_config_or_exit,
    read_manifests,
    report_problems,
    with_gates,
)
from webhooks.explain import render as explain_format
from webhooks.explain.devices import DeviceInventory
from webhooks.explain.explanation import MAX_PAIRS, TooManyPairs, check_pairs
from webhooks.explain.explanation import explain as explain_all
from webhooks.explain.failure import Rates, parse_duration
from webhooks.explain.inventory import devices_from, nodes_from, templates_from, with_devices
from webhooks.explain.nodes import FailAs, Node
from webhooks.explain.pods import PodView
from webhooks.explain.queues import QUEUE_LABEL, Queues
from webhooks.explain.templates import Template
from webhooks.k8s import cel
from webhooks.k8s.releases import DRA_EXTENDED_RESOURCE, NEWEST
from webhooks.manifests.reader import STDIN, Document, load

HELP = """Where each pod can run on the nodes in --nodes, on nodes an autoscaler can add
(--node-templates), and what happens when nodes fail.

PATH holds Pods or workloads (files, directories, - for stdin); each goes through the
admission chain as `check` admits it, and the Pod it yields is checked against every node
as the scheduler's filters do: NoSchedule and NoExecute taints it does not tolerate,
spec.nodeName, the nodeSelector, required node affinity and resource requests against
allocatable. PreferNoSchedule taints are listed apart (a poor choice, not a refusal). For
NoExecute taints it says whether a running pod is evicted at once, after
tolerationSeconds, or never, and its failover time: how long after its node fails it is
evicted (--node-monitor-grace-period plus the tolerationSeconds of its not-ready and
unreachable tolerations, or never). A pod that fits no node is reported with the closest
node and what that node lacks.

DRA (resource.k8s.io/v1): ResourceSlices and DeviceTaintRules in --nodes (or from the
cluster), DeviceClasses, ResourceClaims and ResourceClaimTemplates in PATH, --nodes or
--objects. A pod's claims fit a node only when the devices its slices publish there can be
allocated as the scheduler allocates them: each request's DeviceClass and CEL selectors
(the cel-python library, `pip install 'placement-webhooks[explain]'`), count or All, first
available alternative, matchAttribute constraints, devices not in use by a given claim,
and every NoSchedule and NoExecute device taint (from the slice or a DeviceTaintRule)
tolerated by the request. An extended resource a DeviceClass serves (extendedResourceName,
or deviceclass.resource.kubernetes.io/<class>) counts as capacity on nodes with such
devices when their allocatable does not list it. A NoExecute device taint on a device the
pod holds (an allocated claim) or would hold shows as an eviction in the failover view.

--node-templates takes Karpenter karpenter.sh/v1 NodePools, Node objects standing for
cluster-autoscaler node groups (scale-from-zero templates), and Kueue ResourceFlavors with
the LocalQueues and ClusterQueues that reach them (kueue.x-k8s.io/v1beta1 or v1beta2;
`kubectl get resourceflavors,clusterqueues,localqueues -A -o yaml`). A pod is offered only
the flavors of the ClusterQueue behind the LocalQueue its kueue.x-k8s.io/queue-name label
names (on the Job, Pod, Deployment or StatefulSet, a CronJob's jobTemplate, or else the
pod template), or the LocalQueue named default in its namespace; a pod without either is
not Kueue's and gets none, nor does one whose queue is not among the inputs, is stopped,
or whose ClusterQueue's namespaceSelector leaves its namespace out. It fits an offered
flavor when its tolerations and the flavor's tolerate the flavor's nodeTaints and its
selectors, reduced to the flavor's label keys, match nodeLabels; the nodes it then fits,
with the flavor's selector and tolerations, are listed. Documents of other kinds (the
EC2NodeClass beside a NodePool) are skipped with a note. For a pod that fits no node it
says which templates can add a node for it and why the others cannot: a taint it does not
tolerate (startup taints are ignored, as the autoscalers do), a nodeSelector or node
affinity term that conflicts with a NodePool requirement (named), a resource above the
group's allocatable or what the pool's limits leave (with the requests of the DaemonSets
that run there). A NodePool offers an extended resource such as nvidia.com/gpu only when
its spec.limits or a taint names it. For each tainted node and each template it lists the
DaemonSets among PATH that run there and why the others do not, and warns for each
template a DaemonSet does not cover but for a taint or its size (one its own nodeSelector
or affinity excludes is only listed).

--kubeconfig FILE or --context NAME read the nodes from that cluster instead of --nodes, and
with -n NS and no PATH the pods of NS (one per controller, without their node binding), both
through the reader `audit` uses; the cluster's Namespaces and RuntimeClasses are then the
admission context.

--nodes takes `kubectl get nodes -o yaml` output or Node manifests. Nodes named by --fail,
and nodes whose Ready condition is not True, are simulated as the node lifecycle
controller handles them: zone states (FullDisruption, PartialDisruption, Normal; zones
from topology.kubernetes.io/zone, one zone when unlabelled), the rate at which the
not-ready/unreachable NoExecute taints are added per zone after the grace period, and when
each pod that may be running there is evicted. The rate and grace period options are
kube-controller-manager's flags, with its defaults (--node-monitor-grace-period is 50s
since Kubernetes v1.32, 40s before); when evictions stop, the report says so and names the
flag to change.

--feature-gates TaintTolerationComparisonOperators=true matches Gt and Lt tolerations
numerically, as the scheduler does with that gate (and lets admission accept them).
--feature-gates DRAExtendedResource=false|true says whether DeviceClasses serve extended
resources (their extendedResourceName and deviceclass.resource.kubernetes.io/<class>);
the default is the release's: the cluster's with --kubeconfig (off before 1.36), the
newest supported release's otherwise.

\b
Simplified: capacity ignores pods already running (devices held by a given allocated
ResourceClaim do count); DRA claims are not checked on node templates (a node's devices are
published once it exists); shared counters, consumable capacity and binding conditions of
devices are not modelled; inter-pod affinity, topology spread,
volumes and host ports are not modelled; a pod is assumed to possibly run on any failed
node it fits; all nodes fail at t=0 and are noticed together one grace period later (a
node failing while its zone is still Normal is tainted at the normal rate before later
failures change the zone's state; a kubelet that reports Ready False is noticed within
--node-monitor-period, 5s, so for not-ready the figure is an upper bound); within a zone
nodes are tainted in inventory order, the k-th (from 0) k/rate seconds after the first;
"evicted" means deleted, and on an unreachable node the pod stays Terminating until the
kubelet returns or the Node is deleted. A NodePool's instance types are not known
offline: CPU and memory are checked against its limits only. Kueue's quota, cohorts and
which resource group covers which resource are Kueue's to decide at run time and are not
checked; its managedJobsNamespaceSelector is taken as its default (every namespace but
kube-system and kueue-system), and a workload it manages is placed on existing nodes as if
already admitted.

Exit codes: 0 every pod fits a node or a template; 1 a pod fits neither, or admission
denies it; 2 unusable input.
"""


def _nodes(
    paths: Sequence[str],
    stdin_name: str,
    failed: set[str],
    fail_as: FailAs,
    found: list[Document],
) -> list[Node]:
    if not paths:
        if failed:
            fail("--fail needs --nodes")
        return []
    manifests = read_manifests(paths, stdin_name, what="--nodes")
    found.extend(manifests.documents)
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


def _templates(
    paths: Sequence[str], stdin_name: str, namespace: str | None, found_docs: list[Document]
) -> tuple[list[Template], Queues]:
    if not paths:
        return [], Queues()
    manifests = read_manifests(paths, stdin_name, what="--node-templates")
    found_docs.extend(manifests.documents)
    found = templates_from(manifests.documents, namespace or "default")
    for note in found.skipped:
        click.echo(note, err=True)
    problems = [*manifests.problems, *found.problems]
    if problems:
        report_problems(problems)
        sys.exit(USAGE_ERROR)
    if not found.templates:
        fail(
            f"--node-templates {' '.join(paths)}: no NodePool, Node or ResourceFlavor objects found"
        )
    return found.templates, found.queues


def _pods(
    paths: Sequence[str],
    config_path: str | None,
    objects: Sequence[str],
    namespace: str | None,
    stdin_name: str,
    gates: dict[str, bool],
    found: list[Document],
) -> list[PodView]:
    if not paths:
        return []
    config = with_gates(read_config_or_exit(config_path), gates)
    report, manifests = dry_run_inputs(paths, config, objects, namespace, stdin_name)
    found.extend(manifests.documents)
    return live.pods_or_exit(report)


def _devices(
    documents: Sequence[Document], extra: Sequence[Document], more: Sequence[Any]
) -> DeviceInventory:
    """The DRA objects of every input: --nodes, PATH, --objects (``extra``) and a cluster.

    Exits 2 when a selector needs the CEL library and it is missing: no answer that
    depends on a selector could be given.
    """
    devices = devices_from([*(d.obj for d in (*documents, *extra)), *more])
    if devices.selectors() and not cel.available():
        fail(
            "the DeviceClasses and claims carry CEL selectors, and evaluating them needs "
            f"the cel-python library: {cel.EXTRA_HINT}"
        )
    return devices


def _fail_names(values: Sequence[str]) -> set[str]:
    return {name.strip() for value in values for name in value.split(",") if name.strip()}


#: The lifecycle controller's defaults, as the options' defaults: one source of truth.
_DEFAULT_RATES = Rates()


@click.command(help=HELP)
@click.argument("paths", nargs=-1, metavar="[PATH... | -]")
# Where nodes come from. --nodes is checked in the command, not by click, so that another
# source of nodes can stand in for it.
@click.option(
    "--nodes",
    "node_paths",
    multiple=True,
    metavar="FILE",
    help="Node inventory: `kubectl get nodes -o yaml`, or Node YAML/JSON; repeatable, - for stdin.",
)
@live.options
@click.option(
    "--node-templates",
    "template_paths",
    multiple=True,
    metavar="FILE",
    help="Nodes that do not exist yet: Karpenter karpenter.sh/v1 NodePools, Node objects "
    "standing for cluster-autoscaler node groups, and Kueue ResourceFlavors with the "
    "LocalQueues and ClusterQueues that decide which pods may have them (other kinds are "
    "skipped with a note); repeatable, - for stdin.",
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
    "--node-monitor-grace-period",
    "grace_period",
    default=f"{_DEFAULT_RATES.node_monitor_grace_period:g}s",
    show_default=True,
    metavar="DURATION",
    help="How long a node may stop reporting before it is marked (50s since Kubernetes "
    "v1.32, 40s before); counted in every failover time.",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
@click.option(
    "--max-pairs",
    type=click.IntRange(min=1),
    default=MAX_PAIRS,
    show_default=True,
    help="The most pods × (nodes + node templates) to place; more exits 2 before any work, "
    "as time grows with each pair (memory does not).",
)
@click.option(
    "--kueue-manage-jobs-without-queue-name",
    "manage_without_queue_name",
    is_flag=True,
    help="Kueue runs with manageJobsWithoutQueueName: true, so it suspends a workload "
    f"without a {QUEUE_LABEL} label (and no LocalQueue named default in its namespace) "
    "instead of leaving it alone; either way such a workload gets no ResourceFlavor.",
)
@feature_gates_option
@manifest_inputs
def explain(
    paths: tuple[str, ...],
    node_paths: tuple[str, ...],
    template_paths: tuple[str, ...],
    kubeconfig: str | None,
    kube_context: str | None,
    fail_nodes: tuple[str, ...],
    fail_as: FailAs,
    node_eviction_rate: float,
    secondary_node_eviction_rate: float,
    unhealthy_zone_threshold: float,
    large_cluster_size_threshold: int,
    grace_period: str,
    output: str,
    max_pairs: int,
    manage_without_queue_name: bool,
    feature_gates: tuple[str, ...],
    config_path: str | None,
    objects: tuple[str, ...],
    namespace: str | None,
    stdin_name: str,
) -> None:
    """Load, admit, place, simulate, render; the help text is :data:`HELP`."""
    gates = parse_feature_gates(feature_gates, EXPLAIN_GATES)
    readers = [
        name
        for name, given in (
            ("--nodes", node_paths),
            ("--node-templates", template_paths),
            ("PATH", paths),
        )
        if STDIN in given
    ]
    if len(readers) > 1:
        fail(f"{' and '.join(readers)} cannot {'both' if len(readers) == 2 else 'all'} read stdin")
    cluster = live.read(
        kubeconfig, kube_context, node_paths=node_paths, pods_of=None if paths else namespace
    )
    if cluster is None and not node_paths and not template_paths:
        fail(
            "give --nodes (the nodes there are), --kubeconfig/--context (a cluster's nodes) "
            "or --node-templates (the nodes there can be)"
        )
    try:
        grace = parse_duration(grace_period)
    except ValueError as exc:
        fail(f"--node-monitor-grace-period: {exc}")
    documents: list[Document] = []
    if cluster is not None:
        nodes = cluster.inventory(_fail_names(fail_nodes), fail_as)
        pods = cluster.placed(paths, config_path, objects, namespace, stdin_name, gates)
        documents.extend(cluster.pods)
    else:
        nodes = _nodes(node_paths, stdin_name, _fail_names(fail_nodes), fail_as, documents)
        pods = _pods(paths, config_path, objects, namespace, stdin_name, gates, documents)
    extra = load([o for o in objects if o != STDIN]).documents if objects else []
    devices = _devices(documents, extra, cluster.devices if cluster is not None else ())
    release = cluster.release if cluster is not None else NEWEST
    bridge = gates.get(DRA_EXTENDED_RESOURCE, release.gate_on(DRA_EXTENDED_RESOURCE))
    nodes, pods = with_devices(nodes, pods, devices, gates.get(COMPARISON_OPERATORS, False), bridge)
    template_docs: list[Document] = []
    templates, queues = _templates(template_paths, stdin_name, namespace, template_docs)
    queues.manage_without_queue_name = manage_without_queue_name
    queues.add_namespaces(d.obj for d in (*documents, *extra, *template_docs))
    queues.add_namespaces(cluster.context if cluster is not None else ())
    rates = Rates(
        node_eviction_rate=node_eviction_rate,
        secondary_node_eviction_rate=secondary_node_eviction_rate,
        unhealthy_zone_threshold=unhealthy_zone_threshold,
        large_cluster_size_threshold=large_cluster_size_threshold,
        node_monitor_grace_period=grace,
    )
    try:
        check_pairs(len(pods), len(nodes) + len(templates), max_pairs)
    except TooManyPairs as exc:
        fail(str(exc))
    explanation = explain_all(nodes, pods, rates, templates, queues)
    write = explain_format.write_json if output == "json" else explain_format.write_text
    sys.exit(write(explanation, _echo))


def _echo(chunk: str) -> None:
    # Each pod's answer as it is rendered: the report is never held whole.
    click.echo(chunk, nl=False)
