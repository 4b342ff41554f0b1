"""``explain`` as a user runs it: the real command in a subprocess, and its usage errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.command import ROOT, invoke_cli, run_cli

FIXTURES = ROOT / "tests" / "fixtures" / "explain"
ONE_ZONE = str(FIXTURES / "one-zone.yaml")
WORKLOADS = str(FIXTURES / "workloads.yaml")
TRAP = ["--fail", "worker-1,worker-2,worker-3"]


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    return run_cli("explain", *args, stdin=stdin.decode())


def section(text: str, title: str) -> str:
    return text[text.index(title) :]


def test_three_failed_workers_of_four_stop_evictions_in_a_small_cluster() -> None:
    result = run("--nodes", ONE_ZONE, WORKLOADS, *TRAP)
    failure = section(result.stdout, "Node failure")
    assert "zone (unlabelled): PartialDisruption (3 of 4 nodes not Ready" in failure
    warning = next(line for line in failure.splitlines() if "WARNING" in line)
    assert "evictions stop in zone (unlabelled)" in warning
    assert "has at most 50 nodes (--large-cluster-size-threshold)" in warning
    assert "--unhealthy-zone-threshold above 3/4" in warning
    assert "timeline:" not in failure
    kept = section(failure, "never evicted, keep running:")
    for workload in (
        "Deployment shop/web",
        "DaemonSet monitoring/node-exporter",
        "StatefulSet shop/db",
    ):
        assert f"pods of {workload} on worker-1, worker-2, worker-3 (" in kept


def test_with_a_threshold_of_1_the_same_pods_are_evicted_on_the_normal_schedule() -> None:
    result = run("--nodes", ONE_ZONE, WORKLOADS, *TRAP, "--unhealthy-zone-threshold", "1")
    failure = section(result.stdout, "Node failure")
    assert "zone (unlabelled): Normal (3 of 4 nodes not Ready, below" in failure
    assert "WARNING" not in failure
    timeline = [" ".join(line.split()) for line in section(failure, "timeline:").splitlines()]
    expected = [
        "t+0s worker-1, worker-2, worker-3 fail",
        "t+50s worker-1 gets node.kubernetes.io/unreachable:NoExecute",
        "t+60s worker-2 gets node.kubernetes.io/unreachable:NoExecute",
        "t+70s worker-3 gets node.kubernetes.io/unreachable:NoExecute",
        "t+350s (5m50s) worker-1: pods of Deployment shop/web evicted",
        "t+360s (6m) worker-2: pods of Deployment shop/web evicted",
        "t+370s (6m10s) worker-3: pods of Deployment shop/web evicted",
        "t+6050s (1h40m50s) worker-1: pods of StatefulSet shop/db evicted",
        "t+6060s (1h41m) worker-2: pods of StatefulSet shop/db evicted",
        "t+6070s (1h41m10s) worker-3: pods of StatefulSet shop/db evicted",
    ]
    found = [line for line in timeline if line.startswith("t+")]
    assert [line.split(" (toleration")[0] for line in found] == expected
    kept = section(failure, "never evicted, keep running:")
    assert "pods of DaemonSet monitoring/node-exporter on worker-1, worker-2, worker-3" in kept
    assert "no tolerationSeconds" in kept


def test_a_gpu_job_fits_only_the_gpu_nodes_once_admission_adds_the_toleration() -> None:
    result = run("--nodes", str(FIXTURES / "gpu.yaml"), str(FIXTURES / "gpu-job.yaml"))
    assert result.returncode == 0, result.stderr
    out = section(result.stdout, "pods of Job ml/train")
    assert (
        "admission: extended-resource-toleration: added nvidia.com/gpu:NoSchedule (Exists)" in out
    )
    assert "fits 2 of 5 nodes: gpu-1, gpu-2" in out
    assert (
        "tolerates nvidia.com/gpu=present:NoSchedule with nvidia.com/gpu:NoSchedule (Exists), "
        "added by admission"
    ) in out
    assert "cpu-1, cpu-2: does not fit\n    - requests nvidia.com/gpu 2, the node has 0" in out


def test_without_the_chain_adding_it_the_gpu_job_fits_nowhere() -> None:
    config = "plugins:\n  extended-resource-toleration: {enabled: false}\n"
    result = run(
        "--nodes",
        str(FIXTURES / "gpu.yaml"),
        "--config",
        "/dev/stdin",
        str(FIXTURES / "gpu-job.yaml"),
        stdin=config.encode(),
    )
    assert result.returncode == 1, result.stderr
    assert "fits no node (0 of 5)" in result.stdout
    assert (
        "closest: gpu-1, missing 1:\n    - taint nvidia.com/gpu=present:NoSchedule" in result.stdout
    )


def invoke(*args: str, stdin: str | None = None) -> Any:
    return invoke_cli(["explain", *args], stdin=stdin)


def test_json_has_every_node_for_every_pod_and_the_simulation() -> None:
    result = invoke("--nodes", ONE_ZONE, WORKLOADS, *TRAP, "-o", "json")
    data = json.loads(result.stdout)
    assert [n["name"] for n in data["nodes"]] == ["cp-1", "worker-1", "worker-2", "worker-3"]
    assert [n["failed"] for n in data["nodes"]] == [False, True, True, True]
    web = data["pods"][0]
    assert web["pod"] == "pods of Deployment shop/web" and web["fits"] == []
    assert web["closest"]["node"] == "cp-1"
    assert [len(n["unmet"]) for n in web["nodes"]] == [1, 1, 1, 1]
    (zone,) = data["failure"]["zones"]
    assert (zone["state"], zone["rate"], zone["evictionsStop"]) == ("PartialDisruption", 0.0, True)
    assert {e["at"] for e in data["failure"]["evictions"]} == {None}
    assert data["exitCode"] == result.exit_code == 1


def test_the_taint_documentation_example(tmp_path: Path) -> None:
    nodes = """\
apiVersion: v1
kind: Node
metadata: {name: node1}
spec:
  taints:
  - {key: key1, value: value1, effect: NoSchedule}
  - {key: key1, value: value1, effect: NoExecute}
  - {key: key2, value: value1, effect: NoSchedule}
"""
    pod = """\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: nginx}]
  tolerations:
  - {key: key1, operator: Equal, value: value1, effect: NoSchedule}
  - {key: key1, operator: Equal, value: value1, effect: NoExecute}
"""
    result = invoke("--nodes", "-", "-", stdin=nodes)
    assert result.exit_code == 2  # both cannot be stdin
    (tmp_path / "nodes.yaml").write_text(nodes)
    result = invoke("--nodes", str(tmp_path / "nodes.yaml"), "-", stdin=pod)
    assert result.exit_code == 1
    assert (
        "node1: does not fit\n    - taint key2=value1:NoSchedule is not tolerated" in result.stdout
    )
    assert "NoExecute: a running pod keeps running (toleration key1=value1:NoExecute (Equal)" in (
        result.stdout
    )


def test_a_multi_zone_inventory_gets_one_state_per_zone() -> None:
    result = invoke(
        "--nodes",
        str(FIXTURES / "multi-zone.yaml"),
        "--fail",
        "worker-a1",
        "--fail",
        "worker-a2,worker-c2",
        "-o",
        "json",
    )
    zones = {z["zone"]: z for z in json.loads(result.stdout)["failure"]["zones"]}
    assert {k: (z["state"], z["rate"]) for k, z in zones.items()} == {
        "eu-west-1/eu-west-1a": ("FullDisruption", 0.1),
        "eu-west-1/eu-west-1b": ("Normal", 0.1),
        "eu-west-1/eu-west-1c": ("FullDisruption", 0.1),  # worker-c1 is excluded
    }
    assert zones["eu-west-1/eu-west-1c"]["counted"] == 1


def test_ready_conditions_in_the_inventory_fail_nodes_without_fail() -> None:
    nodes = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n"
        "status: {conditions: [{type: Ready, status: 'False'}]}\n"
        "---\napiVersion: v1\nkind: Node\nmetadata: {name: b}\n"
    )
    result = invoke("--nodes", "-", stdin=nodes)
    assert result.exit_code == 0
    assert "a gets node.kubernetes.io/not-ready:NoExecute" in result.stdout


def test_a_node_in_path_is_ignored_with_a_note() -> None:
    node = "apiVersion: v1\nkind: Node\nmetadata: {name: x}\n"
    result = invoke("--nodes", ONE_ZONE, "-", stdin=node)
    assert "<stdin>:1: a Node in PATH is ignored; use --nodes" in result.stderr


USAGE: list[tuple[str, list[str], str, str]] = [
    (
        "an unknown node in --fail",
        ["--nodes", ONE_ZONE, "--fail", "worker-9"],
        "",
        "--fail: no node named worker-9",
    ),
    (
        "a Pod in the inventory",
        ["--nodes", "-"],
        "kind: Pod\nmetadata: {name: p}\n",
        '<stdin>:1: not a Node (kind "Pod")',
    ),
    ("an inventory without nodes", ["--nodes", "-"], "", "<stdin>: no manifests found"),
    (
        "a node listed twice",
        ["--nodes", "-"],
        "kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: a}\n",
        "<stdin>:4: node a is listed twice",
    ),
    ("an unreadable inventory", ["--nodes", "/nonexistent/nodes.yaml"], "", "cannot read"),
    ("a negative rate", ["--nodes", ONE_ZONE, "--node-eviction-rate", "-1"], "", "-1"),
    ("neither --nodes nor --node-templates", [WORKLOADS], "", "give --nodes"),
    (
        "--fail without --nodes",
        ["--node-templates", "-", "--fail", "a"],
        "",
        "--fail needs --nodes",
    ),
    (
        "a grace period that is not a duration",
        ["--nodes", ONE_ZONE, "--node-monitor-grace-period", "soon"],
        "",
        "--node-monitor-grace-period: 'soon' is not a duration",
    ),
    (
        "two inputs on stdin",
        ["--node-templates", "-", "-"],
        "",
        "--node-templates and PATH cannot both read stdin",
    ),
    (
        "more pod-node pairs than --max-pairs",
        ["--nodes", ONE_ZONE, WORKLOADS, "--max-pairs", "3"],
        "",
        "pod-node pairs, over the limit of 3 (--max-pairs)",
    ),
]


@pytest.mark.parametrize(
    ("args", "stdin", "message"), [c[1:] for c in USAGE], ids=[c[0] for c in USAGE]
)
def test_unusable_input_exits_2(args: list[str], stdin: str, message: str) -> None:
    result = invoke(*args, stdin=stdin)
    assert result.exit_code == 2
    assert message in result.stderr


def test_the_help_states_what_the_model_simplifies() -> None:
    text = " ".join(invoke("--help").stdout.split())
    for phrase in (
        "capacity ignores pods already running",
        "all nodes fail at t=0 and are noticed together one grace period later",
        "--node-monitor-grace-period",
        "in inventory order",
        "stays Terminating",
        "Kueue's quota, cohorts and which resource group covers which resource",
    ):
        assert phrase in text


def test_the_help_lists_kueue_objects_where_it_lists_the_other_templates() -> None:
    text = " ".join(invoke("--help").stdout.split())
    option = text[text.index("--node-templates FILE") :]
    option = option[: option.index("--fail ")]
    for kind in ("NodePools", "ResourceFlavors", "LocalQueues", "ClusterQueues"):
        assert kind in option
    assert "--kueue-manage-jobs-without-queue-name" in text


# --- failover time and node templates (issue 16) ---------------------------------------------

KARPENTER_NODES = str(FIXTURES / "karpenter-nodes.yaml")
NODEPOOLS = str(FIXTURES / "nodepools.yaml")
NODE_GROUPS = str(FIXTURES / "node-groups.yaml")
GPU_JOB = str(FIXTURES / "gpu-job.yaml")
DAEMONSETS = str(FIXTURES / "daemonsets.yaml")
ZONE_PINNED = str(FIXTURES / "zone-pinned.yaml")
FAILOVER = str(FIXTURES / "failover.yaml")
FAILOVER_CONFIG = str(FIXTURES / "failover-config.yaml")


def pod_json(result: Any, subject: str) -> dict[str, Any]:
    data = json.loads(result.stdout)
    return next(p for p in data["pods"] if p["pod"] == subject)


def test_a_namespace_failover_of_30s_shows_80s_by_default() -> None:
    result = invoke("--config", FAILOVER_CONFIG, "--nodes", KARPENTER_NODES, FAILOVER)
    assert result.exit_code == 0, result.output
    out = section(result.stdout, "pods of StatefulSet db/postgres")
    assert (
        "not-ready: evicted 80s after its node fails (50s + toleration "
        "node.kubernetes.io/not-ready:NoExecute (Exists) for 30s)"
    ) in out
    assert "unreachable: evicted 350s (5m50s) after its node fails" in out
    data = pod_json(
        invoke("--config", FAILOVER_CONFIG, "--nodes", KARPENTER_NODES, FAILOVER, "-o", "json"),
        "pods of StatefulSet db/postgres",
    )
    assert [(f["taint"], f["seconds"]) for f in data["failover"]] == [
        ("node.kubernetes.io/not-ready:NoExecute", 80.0),
        ("node.kubernetes.io/unreachable:NoExecute", 350.0),
    ]


def test_without_namespace_overrides_the_same_pod_fails_over_after_350s() -> None:
    result = invoke("--nodes", KARPENTER_NODES, FAILOVER)
    assert "not-ready: evicted 350s (5m50s) after its node fails" in result.stdout


def test_the_grace_period_is_an_option_in_go_duration_notation() -> None:
    args = ["--config", FAILOVER_CONFIG, "--nodes", KARPENTER_NODES, FAILOVER]
    result = invoke(*args, "--node-monitor-grace-period", "40s")
    assert "not-ready: evicted 70s after its node fails (40s + toleration" in result.stdout


def test_a_fail_timeline_counts_the_grace_period_and_the_namespaces_seconds() -> None:
    result = invoke(
        "--config",
        FAILOVER_CONFIG,
        "--nodes",
        KARPENTER_NODES,
        FAILOVER,
        "--fail",
        "general-a",
        "--fail-as",
        "not-ready",
    )
    timeline = [" ".join(line.split()) for line in section(result.stdout, "timeline:").splitlines()]
    assert timeline[1:4] == [
        "t+0s general-a fails",
        "t+50s general-a gets node.kubernetes.io/not-ready:NoExecute",
        "t+80s general-a: pods of StatefulSet db/postgres evicted (toleration "
        "node.kubernetes.io/not-ready:NoExecute (Exists) for 30s)",
    ]


def test_a_gpu_job_with_no_gpu_node_schedules_only_through_the_gpu_nodepool() -> None:
    result = invoke("--nodes", KARPENTER_NODES, "--node-templates", NODEPOOLS, GPU_JOB)
    assert result.exit_code == 0, result.output
    out = section(result.stdout, "pods of Job ml/train")
    assert "fits no node (0 of 3)" in out
    assert "node templates: a node can be added for it by NodePool gpu\n" in out
    assert (
        "NodePool general: cannot host it\n      - requests nvidia.com/gpu 2: NodePool general "
        "does not say it offers nvidia.com/gpu"
    ) in out
    assert (
        "NodePool gpu: can host it\n      - tolerates nvidia.com/gpu=true:NoSchedule with "
        "nvidia.com/gpu:NoSchedule (Exists), added by admission"
    ) in out
    data = pod_json(
        invoke("--nodes", KARPENTER_NODES, "--node-templates", NODEPOOLS, GPU_JOB, "-o", "json"),
        "pods of Job ml/train",
    )
    assert data["fits"] == [] and data["placeable"] is True
    assert data["scaleUp"]["hosts"] == ["NodePool gpu"]
    infra = next(t for t in data["scaleUp"]["templates"] if t["name"] == "infra")
    assert [u["rule"] for u in infra["unmet"]] == ["static", "resources"]


def test_a_pod_pinned_to_a_zone_no_nodepool_allows_fits_nowhere_and_the_reason_names_it() -> None:
    result = invoke("--nodes", KARPENTER_NODES, "--node-templates", NODEPOOLS, ZONE_PINNED)
    assert result.exit_code == 1
    out = section(result.stdout, "pods of Deployment shop/reports")
    assert "fits no node (0 of 3)" in out
    assert "node templates: none can add a node for it (0 of 3)" in out
    assert (
        "node affinity topology.kubernetes.io/zone In [eu-west-1c] conflicts with NodePool "
        "general's requirement topology.kubernetes.io/zone In [eu-west-1a, eu-west-1b]"
    ) in out


def test_a_device_plugin_without_the_gpu_toleration_leaves_the_gpu_nodepool_uncovered() -> None:
    result = invoke("--nodes", KARPENTER_NODES, "--node-templates", NODEPOOLS, DAEMONSETS)
    coverage = section(result.stdout, "DaemonSet coverage")
    assert (
        "WARNING: NodePool gpu is not covered by DaemonSet kube-system/nvidia-device-plugin: "
        "taint nvidia.com/gpu=true:NoSchedule is not tolerated"
    ) in coverage
    assert (
        "node system-1 (CriticalAddonsOnly=true:NoSchedule)\n    does not run DaemonSet "
        "kube-system/nvidia-device-plugin: taint CriticalAddonsOnly=true:NoSchedule is not "
        "tolerated"
    ) in coverage
    assert (
        "runs DaemonSet kube-system/nvidia-device-plugin (after startup taint "
        "node.cilium.io/agent-not-ready=true:NoExecute is removed)"
    ) in coverage
    data = json.loads(
        invoke(
            "--nodes", KARPENTER_NODES, "--node-templates", NODEPOOLS, DAEMONSETS, "-o", "json"
        ).stdout
    )
    gpu = next(c for c in data["daemonSetCoverage"] if c["target"] == "NodePool gpu")
    assert {d["daemonSet"]: d["runs"] for d in gpu["daemonSets"]} == {
        "DaemonSet kube-system/nvidia-device-plugin": False,
        "DaemonSet monitoring/node-exporter": True,
        "DaemonSet kube-system/cilium": False,
    }
    assert len(data["warnings"]) == 2


def test_a_node_group_template_counts_daemonsets_against_its_allocatable() -> None:
    result = invoke(
        "--nodes", KARPENTER_NODES, "--node-templates", NODE_GROUPS, GPU_JOB, DAEMONSETS
    )
    assert result.exit_code == 1  # two GPUs, and the group's nodes have one
    out = section(result.stdout, "pods of Job ml/train")
    assert "requests cpu 8 (+100m for DaemonSets), the group's nodes have 3920m allocatable" in out
    assert "requests nvidia.com/gpu 2, the group's nodes have 1 allocatable" in out


def test_templates_alone_describe_a_cluster_that_scales_from_zero() -> None:
    result = invoke("--node-templates", NODEPOOLS, GPU_JOB)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Nodes: 0 in 0 zones\nNode templates: 3")


def test_json_lists_the_templates_as_read() -> None:
    data = json.loads(invoke("--node-templates", NODEPOOLS, GPU_JOB, "-o", "json").stdout)
    general = data["templates"][0]
    assert (general["title"], general["weight"], general["remaining"]) == (
        "NodePool general",
        10,
        {"cpu": "48", "memory": "192Gi"},
    )
    assert general["startupTaints"] == [
        {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}
    ]
    assert data["nodeMonitorGracePeriod"] == 50.0


TEMPLATE_USAGE: list[tuple[str, str, str]] = [
    (
        "a requirement Karpenter refuses",
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec:\n  template:\n"
        "    spec:\n      requirements: [{key: zone, operator: Within, values: [a]}]\n",
        '<stdin>:1: spec.template.spec.requirements[0]: operator "Within" is not one of',
    ),
    (
        "only kinds that are not templates: each skipped, and nothing left to read",
        "kind: Pod\nmetadata: {name: p}\n",
        "<stdin>:1: skipped kind Pod\nplacement-webhooks: --node-templates -: no NodePool, Node "
        "or ResourceFlavor",
    ),
    (
        "a document without a kind",
        "metadata: {name: p}\n",
        "<stdin>:1: not a node template (kind null)",
    ),
    (
        "a template listed twice",
        "kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: a}\n",
        "<stdin>:4: node group a is listed twice",
    ),
    ("no templates at all", "", "<stdin>: no manifests found"),
    (
        "queues without a ResourceFlavor: nothing to offer",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q}\n"
        "spec: {clusterQueue: c}\n",
        "placement-webhooks: --node-templates -: no NodePool, Node or ResourceFlavor",
    ),
    (
        "a LocalQueue without spec.clusterQueue, which the API refuses",
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: q}\n",
        "<stdin>:1: a LocalQueue needs spec.clusterQueue",
    ),
    (
        "a LocalQueue listed twice in one namespace",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q}\n"
        "spec: {clusterQueue: c}\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
        "metadata: {name: q, namespace: default}\nspec: {clusterQueue: d}\n",
        "<stdin>:6: LocalQueue default/q is listed twice",
    ),
    (
        "a ClusterQueue whose namespaceSelector the API refuses",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: c}\n"
        "spec: {namespaceSelector: {matchExpressions: [{key: team, operator: Within}]}}\n",
        "<stdin>:1: spec.namespaceSelector: matchExpressions[0].operator",
    ),
    (
        "a ClusterQueue of an API version Kueue never served",
        "apiVersion: kueue.x-k8s.io/v1alpha1\nkind: ClusterQueue\nmetadata: {name: c}\n",
        '<stdin>:1: ClusterQueue apiVersion "kueue.x-k8s.io/v1alpha1"',
    ),
]


@pytest.mark.parametrize(
    ("stdin", "message"), [c[1:] for c in TEMPLATE_USAGE], ids=[c[0] for c in TEMPLATE_USAGE]
)
def test_unusable_templates_exit_2(stdin: str, message: str) -> None:
    result = invoke("--nodes", ONE_ZONE, "--node-templates", "-", stdin=stdin)
    assert result.exit_code == 2
    assert message in result.stderr


# --- mixed template files (issue 19) ----------------------------------------------------------

NODEPOOL_WITH_NODECLASS = str(FIXTURES / "nodepool-with-nodeclass.yaml")
SPOT_JOB = """apiVersion: batch/v1
kind: Job
metadata: {name: crunch, namespace: default}
spec:
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {karpenter.sh/capacity-type: spot}
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "4"}}}]
"""


@pytest.mark.parametrize("output", ["text", "json"])
def test_a_nodepool_and_its_ec2nodeclass_in_one_file_read_the_pool_and_skip_the_class(
    output: str,
) -> None:
    result = invoke("--node-templates", NODEPOOL_WITH_NODECLASS, "-o", output, "-", stdin=SPOT_JOB)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"{NODEPOOL_WITH_NODECLASS}:29: skipped kind EC2NodeClass\n"
    if output == "json":
        data = json.loads(result.stdout)
        assert [t["title"] for t in data["templates"]] == ["NodePool batch"]
        assert data["pods"][0]["scaleUp"]["hosts"] == ["NodePool batch"]
    else:
        assert "    NodePool batch: can host it\n" in result.stdout
