"""Node templates: NodePools and node groups against pods, limits, and DaemonSet coverage."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.reviews import taint, tol
from webhooks.explain.coverage import coverage, coverage_warnings, daemon_overhead
from webhooks.explain.explanation import explain
from webhooks.explain.failure import Rates
from webhooks.explain.fit import fit
from webhooks.explain.inventory import templates_from
from webhooks.explain.nodes import InventoryError, parse_node
from webhooks.explain.pods import PodView
from webhooks.explain.requirements import Values
from webhooks.explain.templates import Template, parse_template
from webhooks.manifests.reader import load

ZONE = "topology.kubernetes.io/zone"
GPU = "nvidia.com/gpu"
EC2 = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}


def nodepool(
    name: str = "general",
    *,
    requirements: list[dict[str, Any]] | None = None,
    taints: list[dict[str, Any]] | None = None,
    startup: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    limits: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    tspec: dict[str, Any] = {"nodeClassRef": EC2, "requirements": requirements or []}
    if taints is not None:
        tspec["taints"] = taints
    if startup is not None:
        tspec["startupTaints"] = startup
    template: dict[str, Any] = {"spec": tspec}
    if labels is not None:
        template["metadata"] = {"labels": labels}
    body: dict[str, Any] = {"template": template, **spec}
    if limits is not None:
        body["limits"] = limits
    obj: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": body,
    }
    if status is not None:
        obj["status"] = status
    return obj


def req(key: str, operator: str, *values: str, min_values: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    if min_values is not None:
        out["minValues"] = min_values
    return out


def pod(
    *,
    selector: dict[str, str] | None = None,
    terms: list[list[dict[str, Any]]] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    requests: dict[str, str] | None = None,
    daemon: bool = False,
    name: str = "Pod default/p",
    **spec: Any,
) -> PodView:
    body: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": requests or {}}}],
        **spec,
    }
    if selector is not None:
        body["nodeSelector"] = selector
    if terms is not None:
        body["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
                }
            }
        }
    if tolerations is not None:
        body["tolerations"] = tolerations
    return PodView(subject=name, spec=body, daemon=daemon)


def daemon_set(name: str, **kw: Any) -> PodView:
    return pod(daemon=True, name=f"pods of DaemonSet kube-system/{name}", **kw)


def node_group(
    name: str = "ng",
    *taints: dict[str, str],
    labels: dict[str, str] | None = None,
    allocatable: dict[str, str] | None = None,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": list(taints)},
    }
    if allocatable is not None:
        obj["status"] = {"allocatable": allocatable}
    return obj


# --- sets of label values -------------------------------------------------------------------

VALUES: list[tuple[str, tuple[str, list[str]], tuple[str, list[str]], bool, bool]] = [
    ("In and In overlap on a shared value", ("In", ["a", "b"]), ("In", ["b"]), True, False),
    ("In and In with nothing shared", ("In", ["a", "b"]), ("In", ["c"]), False, False),
    (
        "In and NotIn overlap when a value is left",
        ("In", ["a", "b"]),
        ("NotIn", ["a"]),
        True,
        False,
    ),
    ("In and NotIn of every value do not", ("In", ["a"]), ("NotIn", ["a"]), False, False),
    (
        "NotIn and NotIn overlap, and both accept no label",
        ("NotIn", ["a"]),
        ("NotIn", ["b"]),
        True,
        True,
    ),
    ("Exists and DoesNotExist do not", ("Exists", []), ("DoesNotExist", []), False, False),
    (
        "DoesNotExist and NotIn both accept no label",
        ("DoesNotExist", []),
        ("NotIn", ["a"]),
        False,
        True,
    ),
    ("Gt and Lt leave the integers between", ("Gt", ["2"]), ("Lt", ["5"]), True, False),
    ("Gt and Lt with nothing between do not", ("Gt", ["4"]), ("Lt", ["5"]), False, False),
    ("Gte and Lte are inclusive", ("Gte", ["5"]), ("Lte", ["5"]), True, False),
    ("Gte keeps In values at or above it", ("Gte", ["6"]), ("In", ["5", "6"]), True, False),
    ("Gte drops In values below it", ("Gte", ["6"]), ("In", ["5"]), False, False),
    ("a bound drops values that are not integers", ("Gt", ["1"]), ("In", ["large"]), False, False),
]


@pytest.mark.parametrize(
    ("a", "b", "overlap", "absent"),
    [c[1:] for c in VALUES],
    ids=[c[0] for c in VALUES],
)
def test_values_of_two_requirements(
    a: tuple[str, list[str]], b: tuple[str, list[str]], overlap: bool, absent: bool
) -> None:
    left, right = Values.of(*a), Values.of(*b)
    assert left.overlaps(right) is overlap
    assert right.overlaps(left) is overlap
    assert (left.absent and right.absent) is absent


# --- reading templates ----------------------------------------------------------------------


def test_a_nodepool_is_read_with_the_labels_karpenter_gives_its_nodes() -> None:
    template = parse_template(
        nodepool(
            "gpu",
            requirements=[req(ZONE, "In", "a", "b", min_values=2)],
            taints=[taint(GPU, value="true")],
            startup=[taint("agent-not-ready", "NoExecute")],
            labels={"team": "ml"},
            limits={"cpu": "100", GPU: 8, "nodes": 4},
            status={"resources": {"cpu": "40"}, "nodes": 3},
            weight=5,
        ),
        "pools.yaml:1",
    )
    assert (template.title, template.where, template.weight) == ("NodePool gpu", "pools.yaml:1", 5)
    assert [str(t) for t in template.taints] == ["nvidia.com/gpu=true:NoSchedule"]
    assert [str(t) for t in template.startup_taints] == ["agent-not-ready:NoExecute"]
    assert template.labels == {"team": "ml"}
    assert template.karpenter_labels["karpenter.sh/nodepool"] == "gpu"
    assert template.karpenter_labels["karpenter.k8s.aws/ec2nodeclass"] == "default"
    assert template.remaining == {"cpu": Decimal(60), GPU: Decimal(8), "nodes": Decimal(1)}
    assert str(template.requirements[0]) == f"requirement {ZONE} In [a, b] (minValues 2)"


BAD_POOLS: list[tuple[str, dict[str, Any], str]] = [
    (
        "a v1beta1 NodePool",
        {**nodepool(), "apiVersion": "karpenter.sh/v1beta1"},
        'NodePool apiVersion "karpenter.sh/v1beta1"',
    ),
    ("a NodePool without a name", {**nodepool(), "metadata": {}}, "without metadata.name"),
    (
        "an operator Karpenter does not know",
        nodepool(requirements=[req(ZONE, "Within", "a")]),
        'requirements[0]: operator "Within" is not one of In, NotIn',
    ),
    ("In without values", nodepool(requirements=[req(ZONE, "In")]), "In needs at least one value"),
    (
        "Exists with values",
        nodepool(requirements=[req(ZONE, "Exists", "a")]),
        "Exists takes no values",
    ),
    (
        "Gte with a word",
        nodepool(requirements=[req("gen", "Gte", "six")]),
        "Gte needs a single non-negative integer value",
    ),
    (
        "Gt with two values",
        nodepool(requirements=[req("gen", "Gt", "1", "2")]),
        "Gt needs a single non-negative integer value",
    ),
    (
        "Lt with a negative value",
        nodepool(requirements=[req("gen", "Lt", "-1")]),
        "Lt needs a single non-negative integer value",
    ),
    (
        "minValues above the number of In values",
        nodepool(requirements=[req(ZONE, "In", "a", min_values=2)]),
        "minValues 2 needs at least that many values, 1 given",
    ),
    (
        "minValues of zero",
        nodepool(requirements=[req(ZONE, "Exists", min_values=0)]),
        "minValues must be an integer from 1 to 50",
    ),
    (
        "a key that is not a label key",
        nodepool(requirements=[req("a b", "Exists")]),
        'key "a b" is not a valid label key',
    ),
    (
        "a taint with an unknown effect",
        nodepool(taints=[taint("x", "NoAdmit")]),
        "taints[0]: a taint needs a key and a valid effect",
    ),
    (
        "a limit that is not a quantity",
        nodepool(limits={"cpu": "lots"}),
        "spec.limits: ",
    ),
    (
        "replicas that are not a count",
        nodepool(replicas=-1),
        "spec.replicas must be a non-negative integer",
    ),
    (
        "a kind that is not a template",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
        'not a node template (kind "Pod")',
    ),
]


@pytest.mark.parametrize(
    ("obj", "message"), [c[1:] for c in BAD_POOLS], ids=[c[0] for c in BAD_POOLS]
)
def test_templates_karpenter_would_refuse_are_refused(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(InventoryError) as caught:
        parse_template(obj)
    assert message in str(caught.value)


MIXED: list[tuple[str, str, list[str], list[str]]] = [
    (
        "a NodePool and its EC2NodeClass: the pool read, the class skipped",
        "kind: EC2NodeClass\napiVersion: karpenter.k8s.aws/v1\nmetadata: {name: default}\n",
        ["NodePool general"],
        ["{file}:6: skipped kind EC2NodeClass"],
    ),
    (
        "every kind that is not a template gets its own note",
        "kind: ConfigMap\nmetadata: {name: c}\n---\nkind: Node\nmetadata: {name: ng}\n"
        "---\nkind: AKSNodeClass\nmetadata: {name: a}\n",
        ["NodePool general", "node group ng"],
        ["{file}:6: skipped kind ConfigMap", "{file}:12: skipped kind AKSNodeClass"],
    ),
]


@pytest.mark.parametrize(
    ("others", "titles", "notes"), [c[1:] for c in MIXED], ids=[c[0] for c in MIXED]
)
def test_a_mixed_template_file_reads_the_templates_and_notes_every_other_kind(
    tmp_path: Path, others: str, titles: list[str], notes: list[str]
) -> None:
    path = tmp_path / "pools.yaml"
    pool = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: general}\n"
    path.write_text(f"{pool}spec: {{}}\n---\n{others}")
    found = templates_from(load([str(path)]).documents)
    assert found.problems == []
    assert [t.title for t in found.templates] == titles
    assert found.skipped == [n.format(file=path) for n in notes]


def test_a_node_group_sets_the_autoscalers_startup_taints_apart_and_drops_removal_taints() -> None:
    template = parse_template(
        node_group(
            "ng-gpu",
            taint(GPU, value="present"),
            taint("startup-taint.cluster-autoscaler.kubernetes.io/driver"),
            taint("ignore-taint.cluster-autoscaler.kubernetes.io/legacy"),
            taint("ToBeDeletedByClusterAutoscaler"),
            allocatable={"cpu": "4", GPU: "1"},
        )
    )
    assert template.title == "node group ng-gpu"
    assert [t.key for t in template.taints] == [GPU]
    assert [t.key.split("/")[0] for t in template.startup_taints] == [
        "startup-taint.cluster-autoscaler.kubernetes.io",
        "ignore-taint.cluster-autoscaler.kubernetes.io",
    ]
    assert template.allocatable == {"cpu": Decimal(4), GPU: Decimal(1)}


# --- a pod against a NodePool ---------------------------------------------------------------

GENERAL = nodepool(
    "general",
    requirements=[
        req("karpenter.sh/capacity-type", "In", "spot", "on-demand"),
        req(ZONE, "In", "eu-west-1a", "eu-west-1b"),
        req("karpenter.k8s.aws/instance-category", "In", "c", "m", "r", min_values=2),
        req("karpenter.k8s.aws/instance-generation", "Gte", "6"),
    ],
    labels={"team": "platform"},
    startup=[taint("node.cilium.io/agent-not-ready", "NoExecute", "true")],
    limits={"cpu": "64", "memory": "256Gi"},
    status={"resources": {"cpu": "60", "memory": "64Gi"}, "nodes": 8},
)
GPU_POOL = nodepool(
    "gpu",
    requirements=[req(ZONE, "In", "eu-west-1a")],
    taints=[taint(GPU, value="true")],
)

POOL_CASES: list[tuple[str, dict[str, Any], PodView, list[str], list[str]]] = [
    ("a plain pod fits the general pool", GENERAL, pod(), [], []),
    (
        "a startup taint the pod does not tolerate is ignored",
        nodepool(startup=[taint("agent-not-ready", "NoExecute")]),
        pod(),
        [],
        [],
    ),
    (
        "a taint the pod does not tolerate refuses it",
        GPU_POOL,
        pod(),
        ["taint"],
        ["taint nvidia.com/gpu=true:NoSchedule is not tolerated"],
    ),
    (
        "a PreferNoSchedule taint only makes a poor choice",
        nodepool(taints=[taint("spot", "PreferNoSchedule")]),
        pod(),
        [],
        [],
    ),
    (
        "a nodeSelector on a template label fits",
        GENERAL,
        pod(selector={"team": "platform"}),
        [],
        [],
    ),
    (
        "a nodeSelector against a template label names it",
        GENERAL,
        pod(selector={"team": "data"}),
        ["nodeSelector"],
        ["nodeSelector team=data conflicts with NodePool general's template label team=platform"],
    ),
    (
        "a custom label the pool never sets cannot be selected",
        GENERAL,
        pod(selector={"disk": "ssd"}),
        ["nodeSelector"],
        [
            "nodeSelector disk=ssd: NodePool general has no requirement or template label "
            "disk, so its nodes never carry that label"
        ],
    ),
    (
        "NotIn on a custom label the pool never sets is met by its absence",
        GENERAL,
        pod(terms=[[req("disk", "NotIn", "hdd")]]),
        [],
        [],
    ),
    (
        "a well-known label the pool does not restrict is the cloud provider's to choose",
        GENERAL,
        pod(selector={"kubernetes.io/arch": "arm64"}),
        [],
        [],
    ),
    (
        "a zone the pool does not allow names the pool's requirement",
        GENERAL,
        pod(terms=[[req(ZONE, "In", "eu-west-1c")]]),
        ["nodeAffinity"],
        [
            "node affinity topology.kubernetes.io/zone In [eu-west-1c] conflicts with "
            "NodePool general's requirement topology.kubernetes.io/zone In [eu-west-1a, "
            "eu-west-1b]"
        ],
    ),
    (
        "the deprecated zone label is read as the stable one",
        GENERAL,
        pod(selector={"failure-domain.beta.kubernetes.io/zone": "eu-west-1c"}),
        ["nodeSelector"],
        [
            "nodeSelector failure-domain.beta.kubernetes.io/zone=eu-west-1c conflicts with "
            "NodePool general's requirement topology.kubernetes.io/zone In [eu-west-1a, "
            "eu-west-1b]"
        ],
    ),
    (
        "Gt within the pool's Gte fits",
        GENERAL,
        pod(terms=[[req("karpenter.k8s.aws/instance-generation", "Gt", "6")]]),
        [],
        [],
    ),
    (
        "Lt below the pool's Gte conflicts",
        GENERAL,
        pod(terms=[[req("karpenter.k8s.aws/instance-generation", "Lt", "5")]]),
        ["nodeAffinity"],
        [
            "node affinity karpenter.k8s.aws/instance-generation Lt 5 conflicts with NodePool "
            "general's requirement karpenter.k8s.aws/instance-generation Gte 6"
        ],
    ),
    (
        "one instance category leaves fewer than minValues",
        GENERAL,
        pod(selector={"karpenter.k8s.aws/instance-category": "c"}),
        ["nodeSelector"],
        [
            "nodeSelector karpenter.k8s.aws/instance-category=c leaves 1 value(s) of "
            "karpenter.k8s.aws/instance-category (c), and NodePool general's requirement "
            "karpenter.k8s.aws/instance-category In [c, m, r] (minValues 2) needs at least 2"
        ],
    ),
    (
        "terms are ORed: a second term the pool allows is enough",
        GENERAL,
        pod(terms=[[req(ZONE, "In", "eu-west-1c")], [req(ZONE, "In", "eu-west-1b")]]),
        [],
        [],
    ),
    (
        "the pool's own label selects it",
        GPU_POOL,
        pod(selector={"karpenter.sh/nodepool": "gpu"}, tolerations=[tol(GPU, "Exists")]),
        [],
        [],
    ),
    (
        "another pool's label does not",
        GENERAL,
        pod(selector={"karpenter.sh/nodepool": "gpu"}),
        ["nodeSelector"],
        [
            "nodeSelector karpenter.sh/nodepool=gpu conflicts with NodePool general's label "
            "karpenter.sh/nodepool=general"
        ],
    ),
    (
        "a hostname is never known in advance",
        GENERAL,
        pod(selector={"kubernetes.io/hostname": "general-a"}),
        ["nodeSelector"],
        ["nodeSelector kubernetes.io/hostname=general-a: a new node's name is not known"],
    ),
    (
        "requirements of the pod that contradict each other",
        GENERAL,
        pod(selector={ZONE: "eu-west-1a"}, terms=[[req(ZONE, "In", "eu-west-1b")]]),
        ["nodeAffinity"],
        ["these contradict each other"],
    ),
    (
        "required affinity with no terms allows no node",
        GENERAL,
        pod(terms=[]),
        ["nodeAffinity"],
        ["required node affinity has no terms: no node"],
    ),
    (
        "spec.nodeName bypasses the scheduler, so no node is made",
        GENERAL,
        pod(nodeName="general-a"),
        ["nodeName"],
        ["spec.nodeName is general-a, so no new node is made for it"],
    ),
    (
        "a static pool adds no node for pending pods",
        nodepool(replicas=3),
        pod(),
        ["static"],
        ["a static NodePool (spec.replicas 3) keeps its node count"],
    ),
    (
        "a pool its status marks not Ready is ignored",
        nodepool(
            status={
                "conditions": [{"type": "Ready", "status": "False", "reason": "NodeClassNotReady"}]
            }
        ),
        pod(),
        ["notReady"],
        ["Karpenter ignores the pool: status Ready is False: NodeClassNotReady"],
    ),
    (
        "an extended resource the pool does not name is not offered",
        GENERAL,
        pod(requests={GPU: "1"}, tolerations=[tol(GPU, "Exists")]),
        ["resources"],
        [
            "requests nvidia.com/gpu 1: NodePool general does not say it offers nvidia.com/gpu "
            "(neither its spec.limits nor a taint names it)"
        ],
    ),
    (
        "a taint named after the resource offers it",
        GPU_POOL,
        pod(requests={GPU: "1"}, tolerations=[tol(GPU, "Exists")]),
        [],
        [],
    ),
    (
        "a limit on the resource offers it",
        nodepool(limits={GPU: "4"}),
        pod(requests={GPU: "4"}),
        [],
        [],
    ),
    (
        "requests above what the limits leave",
        GENERAL,
        pod(requests={"cpu": "6"}),
        ["limits"],
        ["requests cpu 6, above what spec.limits leave: 4 (limit 64, 60 in use)"],
    ),
    (
        "a pool at limits.nodes adds no node",
        nodepool(limits={"nodes": 8}, status={"nodes": 8}),
        pod(),
        ["limits"],
        ["the pool has 8 nodes, its limits.nodes is 8"],
    ),
]


@pytest.mark.parametrize(
    ("obj", "candidate", "rules", "messages"),
    [c[1:] for c in POOL_CASES],
    ids=[c[0] for c in POOL_CASES],
)
def test_a_pod_against_a_nodepool(
    obj: dict[str, Any], candidate: PodView, rules: list[str], messages: list[str]
) -> None:
    found = fit(candidate, parse_template(obj))
    assert [u.rule for u in found.unmet] == rules
    for message, unmet in zip(messages, found.unmet, strict=True):
        assert message in unmet.message


def test_a_startup_taint_and_a_prefer_no_schedule_taint_are_reported_apart() -> None:
    template = parse_template(
        nodepool(
            taints=[taint("spot", "PreferNoSchedule")],
            startup=[taint("agent-not-ready", "NoExecute")],
        )
    )
    found = fit(pod(), template)
    assert found.fits
    assert found.prefer_no_schedule == ("spot:PreferNoSchedule",)
    assert found.startup_ignored == ("agent-not-ready:NoExecute",)


def test_daemonset_requests_count_against_the_limits() -> None:
    template = parse_template(GENERAL)
    overhead = daemon_overhead([daemon_set("agent", requests={"cpu": "500m"})], template)
    assert overhead == {"cpu": Decimal("0.5")}
    assert fit(pod(requests={"cpu": "3500m"}), template, overhead).fits
    found = fit(pod(requests={"cpu": "3600m"}), template, overhead)
    assert [u.message for u in found.unmet] == [
        "requests cpu 3600m (+500m for DaemonSets), above what spec.limits leave: 4 "
        "(limit 64, 60 in use)"
    ]


# --- a pod against a node group -------------------------------------------------------------

GROUP = node_group(
    "ng-gpu",
    taint(GPU, value="present"),
    taint("startup-taint.cluster-autoscaler.kubernetes.io/driver"),
    labels={ZONE: "eu-west-1a", "accelerator": "a10"},
    allocatable={"cpu": "4", "memory": "16Gi", GPU: "1"},
)

GROUP_CASES: list[tuple[str, PodView, list[str]]] = [
    (
        "a GPU pod that tolerates the taint fits, the startup taint ignored",
        pod(tolerations=[tol(GPU, "Exists")], requests={GPU: "1"}),
        [],
    ),
    ("a pod without the toleration does not", pod(), ["taint"]),
    (
        "a label the group's nodes carry is matched as the scheduler does",
        pod(tolerations=[tol(GPU, "Exists")], selector={"accelerator": "a10"}),
        [],
    ),
    (
        "another zone does not match",
        pod(tolerations=[tol(GPU, "Exists")], terms=[[req(ZONE, "In", "eu-west-1b")]]),
        ["nodeAffinity"],
    ),
    (
        "more GPUs than a node of the group has",
        pod(tolerations=[tol(GPU, "Exists")], requests={GPU: "2"}),
        ["resources"],
    ),
]


@pytest.mark.parametrize(
    ("candidate", "rules"), [c[1:] for c in GROUP_CASES], ids=[c[0] for c in GROUP_CASES]
)
def test_a_pod_against_a_node_group(candidate: PodView, rules: list[str]) -> None:
    found = fit(candidate, parse_template(GROUP))
    assert [u.rule for u in found.unmet] == rules


def test_a_node_groups_allocatable_is_reduced_by_its_daemonsets() -> None:
    template = parse_template(GROUP)
    agent = daemon_set("agent", tolerations=[tol(operator="Exists")], requests={"cpu": "500m"})
    overhead = daemon_overhead([agent], template)
    found = fit(
        pod(tolerations=[tol(GPU, "Exists")], requests={"cpu": "3600m"}), template, overhead
    )
    assert [u.message for u in found.unmet] == [
        "requests cpu 3600m (+500m for DaemonSets), the group's nodes have 4 allocatable"
    ]


# --- DaemonSet coverage ---------------------------------------------------------------------

PLUGIN = daemon_set("nvidia-device-plugin", requests={"cpu": "50m"})
EXPORTER = daemon_set("node-exporter", tolerations=[tol(operator="Exists")])
WINDOWS = daemon_set("windows-agent", selector={"kubernetes.io/os": "windows"})
CNI = daemon_set(
    "cilium",
    tolerations=[tol("node.cilium.io/agent-not-ready", "Exists")],
    selector={"kubernetes.io/os": "linux"},
)

COVERAGE_CASES: list[tuple[str, dict[str, Any], PodView, bool, bool, list[str]]] = [
    (
        "a DaemonSet without the pool's toleration does not run there and is warned about",
        GPU_POOL,
        PLUGIN,
        False,
        True,
        ["taint nvidia.com/gpu=true:NoSchedule is not tolerated"],
    ),
    ("one that tolerates everything runs", GPU_POOL, EXPORTER, True, True, []),
    (
        "one whose nodeSelector excludes the pool chose so and is not warned about",
        nodepool(requirements=[req("kubernetes.io/os", "In", "linux")]),
        WINDOWS,
        False,
        False,
        ["conflicts with NodePool general's requirement kubernetes.io/os In [linux]"],
    ),
    (
        "a startup taint only delays it",
        nodepool(startup=[taint("node.cilium.io/agent-not-ready", "NoExecute")]),
        PLUGIN,
        True,
        True,
        [],
    ),
    (
        "a node group's taint keeps it off too",
        GROUP,
        PLUGIN,
        False,
        True,
        ["taint nvidia.com/gpu=present:NoSchedule is not tolerated"],
    ),
    ("a node group with a tolerating DaemonSet", GROUP, EXPORTER, True, True, []),
]


@pytest.mark.parametrize(
    ("obj", "daemon", "runs", "selected", "reasons"),
    [c[1:] for c in COVERAGE_CASES],
    ids=[c[0] for c in COVERAGE_CASES],
)
def test_daemonset_coverage_of_a_template(
    obj: dict[str, Any], daemon: PodView, runs: bool, selected: bool, reasons: list[str]
) -> None:
    template = parse_template(obj)
    (found,) = coverage([daemon], [], [template])
    (run,) = found.daemon_sets
    assert (run.daemon_set, run.runs, run.selected) == (daemon.subject[8:], runs, selected)
    for reason, got in zip(reasons, run.reasons, strict=True):
        assert reason in got
    warnings = coverage_warnings([found])
    assert len(warnings) == (0 if runs or not selected else 1)


def test_a_startup_taint_the_daemonset_does_not_tolerate_is_what_it_waits_for() -> None:
    template = parse_template(
        nodepool(startup=[taint("node.cilium.io/agent-not-ready", "NoExecute")])
    )
    (found,) = coverage([PLUGIN, CNI], [], [template])
    assert [d.waits_for for d in found.daemon_sets] == [
        ("startup taint node.cilium.io/agent-not-ready:NoExecute",),
        (),
    ]


def test_the_warning_names_the_template_and_the_daemonset() -> None:
    assert coverage_warnings(coverage([PLUGIN], [], [parse_template(GPU_POOL)])) == (
        "NodePool gpu is not covered by DaemonSet kube-system/nvidia-device-plugin: taint "
        "nvidia.com/gpu=true:NoSchedule is not tolerated",
    )


def test_coverage_lists_tainted_nodes_only_and_never_warns_about_them() -> None:
    tainted = parse_node(node_group("gpu-1", taint(GPU, value="present")))
    plain = parse_node(node_group("cpu-1"))
    failed = parse_node(node_group("cpu-2"), "unreachable")
    found = coverage([PLUGIN], [tainted, plain, failed], [])
    assert [c.target for c in found] == ["node gpu-1"]
    assert not found[0].daemon_sets[0].runs
    assert coverage_warnings(found) == ()


def test_without_daemonsets_there_is_no_coverage() -> None:
    assert coverage([], [], [parse_template(GPU_POOL)]) == ()


# --- the whole answer -----------------------------------------------------------------------


def templates(*objs: dict[str, Any]) -> list[Template]:
    return [parse_template(o) for o in objs]


def test_a_pod_that_fits_only_a_template_is_placeable() -> None:
    job = pod(tolerations=[tol(GPU, "Exists")], requests={GPU: "1"})
    answer = explain([], [job], Rates(), templates(GENERAL, GPU_POOL))
    (found,) = answer.pods
    assert found.scale_up is not None
    assert [f.name for f in found.scale_up.hosts] == ["NodePool gpu"]
    assert answer.exit_code == 0


def test_a_pod_that_fits_neither_a_node_nor_a_template_fails() -> None:
    pinned = pod(terms=[[req(ZONE, "In", "eu-west-1c")]])
    answer = explain([], [pinned], Rates(), templates(GENERAL, GPU_POOL))
    assert answer.pods[0].scale_up is not None and not answer.pods[0].scale_up.hosts
    assert answer.exit_code == 1


def test_pools_are_offered_by_weight_then_node_groups() -> None:
    light, heavy = nodepool("light", weight=1), nodepool("heavy", weight=50)
    answer = explain([], [pod()], Rates(), templates(node_group("ng"), light, heavy))
    up = answer.pods[0].scale_up
    assert up is not None
    assert [f.name for f in up.hosts] == [
        "NodePool heavy",
        "NodePool light",
        "node group ng",
    ]


def test_pods_that_fit_a_node_daemonsets_and_denied_pods_are_not_tried_on_templates() -> None:
    fits = pod()
    denied = PodView(subject="Pod default/d", spec=fits.spec, denied=("rule: no",))
    nodes = [parse_node(node_group("n"))]
    answer = explain(nodes, [fits, EXPORTER, denied], Rates(), templates(GENERAL))
    assert [a.scale_up for a in answer.pods] == [None, None, None]
    assert answer.exit_code == 1  # the denied pod


def test_daemonset_warnings_reach_the_explanation() -> None:
    answer = explain([], [PLUGIN], Rates(), templates(GPU_POOL))
    assert answer.warnings == (
        "NodePool gpu is not covered by DaemonSet kube-system/nvidia-device-plugin: taint "
        "nvidia.com/gpu=true:NoSchedule is not tolerated",
    )
