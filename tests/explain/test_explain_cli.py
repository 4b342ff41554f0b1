"""``explain`` as a user runs it: the real command in a subprocess, and its usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from webhooks.cli import main

ROOT = Path(__file__).parent.parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "explain"
ONE_ZONE = str(FIXTURES / "one-zone.yaml")
WORKLOADS = str(FIXTURES / "workloads.yaml")
TRAP = ["--fail", "worker-1,worker-2,worker-3"]


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "webhooks", "explain", *args],
        input=stdin.decode(),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


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
        "t+0s worker-1 gets node.kubernetes.io/unreachable:NoExecute",
        "t+10s worker-2 gets node.kubernetes.io/unreachable:NoExecute",
        "t+20s worker-3 gets node.kubernetes.io/unreachable:NoExecute",
        "t+300s (5m) worker-1: pods of Deployment shop/web evicted",
        "t+310s (5m10s) worker-2: pods of Deployment shop/web evicted",
        "t+320s (5m20s) worker-3: pods of Deployment shop/web evicted",
        "t+6000s (1h40m) worker-1: pods of StatefulSet shop/db evicted",
        "t+6010s (1h40m10s) worker-2: pods of StatefulSet shop/db evicted",
        "t+6020s (1h40m20s) worker-3: pods of StatefulSet shop/db evicted",
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
    return CliRunner().invoke(main, ["explain", *args], input=stdin)


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
    ("a missing --nodes", [WORKLOADS], "", "give --nodes FILE"),
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
        "all failures are seen at t=0",
        "--node-monitor-grace-period",
        "in inventory order",
        "stays Terminating",
    ):
        assert phrase in text
