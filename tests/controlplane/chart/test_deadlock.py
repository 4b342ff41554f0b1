"""No deadlock when the webhook is down (issue 21's done-when), on the real control plane.

The chart's configurations are registered exactly as rendered, with their configured
failure policies (validating ``Fail``), and ``serve`` answers behind the chart's Service
until it is killed. Then, with no replica answering:

* a Pod in an ordinary namespace is refused (the configuration is live and fails closed);
* the node lifecycle controller still marks a Node whose Lease stopped as unreachable and
  taints it (Nodes are not registered by default; with the opt-in Node webhook the node
  controllers' writes are never sent);
* a ReplicaSet in an ordinary namespace still scales (an UPDATE leaving placement unchanged
  is never sent);
* the chart's Deployment gets new webhook pods: the ReplicaSet controller creates them in the
  release namespace (never sent) with ``system-cluster-critical`` (the chart's
  ResourceQuota admits it) and the scheduler binds them to the healthy Node.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controlplane.harness import (
    ControlPlane,
    LeaseRenewer,
    create_namespace,
    node_manifest,
    write_node,
)
from controlplane.harness.apply import apply_objects, delete_objects
from controlplane.harness.nodes import NOT_READY, UNREACHABLE
from controlplane.harness.process import Component
from tests.controlplane.chart.conftest import FIGURES
from tests.controlplane.chart.served import refusal, rendered, serve_release
from tests.waiting import eventually

WEBHOOK_POD = "app.kubernetes.io/component=webhook"


REPLICA_SET = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 0,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
        },
    },
}


def _taints(core: client.CoreV1Api, node: str) -> dict[str, str]:
    return {t.key: t.effect for t in core.read_node(node).spec.taints or []}


def _ready(core: client.CoreV1Api, node: str) -> str:
    for condition in core.read_node(node).status.conditions or []:
        if condition.type == "Ready":
            return str(condition.status)
    return ""


@pytest.mark.parametrize(
    ("values", "case"),
    [
        pytest.param(None, "default", id="the default chart, which registers no Node webhook"),
        pytest.param(
            {"webhooks": {"nodes": {"enabled": True}}},
            "nodes",
            id="the opt-in Node webhook, which never sees the node controllers",
        ),
    ],
)
def test_with_every_replica_stopped_a_failed_node_is_tainted_and_webhook_pods_are_scheduled(
    plane: ControlPlane,
    admin: Any,
    renewer: LeaseRenewer,
    tmp_path: Path,
    processes: list[Component],
    values: dict[str, Any] | None,
    case: str,
) -> None:
    core = client.CoreV1Api(admin)
    apps = client.AppsV1Api(admin)
    release, namespace, workloads = f"dl-{case}", f"placement-{case}", f"shop-{case}"
    objects = rendered(values, release, namespace)
    deployment = next(obj for obj in objects if obj["kind"] == "Deployment")
    everything_else = [obj for obj in objects if obj["kind"] != "Deployment"]
    hooks = {
        hook["name"]: hook["failurePolicy"]
        for obj in objects
        if obj["kind"].endswith("WebhookConfiguration")
        for hook in obj["webhooks"]
    }
    assert "Fail" in hooks.values(), "the default chart has a fail-closed webhook"
    create_namespace(admin, namespace)
    create_namespace(admin, workloads)
    try:
        apply_objects(admin, everything_else)
        served = serve_release(
            plane, admin, release, namespace, tmp_path, processes=processes, deployment=deployment
        )
        # Up: the API server calls the webhook through the chart's Service and it answers.
        eventually(
            lambda: (
                refusal(admin, workloads, "answered") == ""
                and any(r.get("namespace") == workloads for r in served.reviews())
            ),
            "a Pod create in a workload namespace answered by the webhook",
            limit=30,
        )
        apps.create_namespaced_replica_set(workloads, REPLICA_SET)
        # Every replica stopped, as a crash or a lost node would stop them.
        served.component.stop(signal.SIGKILL)
        message = eventually(
            lambda: refusal(admin, workloads, "refused"),
            "a Pod create refused once the webhook is down",
            limit=30,
        )
        assert "failed calling webhook" in message

        for node in (f"healthy-{case}", f"failing-{case}"):
            write_node(admin, node_manifest(node))
            renewer.add(node)
        eventually(
            lambda: (
                _ready(core, f"failing-{case}") == "True"
                and NOT_READY not in _taints(core, f"failing-{case}")
            ),
            "the written Nodes are Ready and untainted",
            limit=30,
        )
        renewer.stop_node(f"failing-{case}")
        stopped = time.monotonic()
        taints = eventually(
            lambda: (t := _taints(core, f"failing-{case}")).get(UNREACHABLE) and t,
            "the node lifecycle controller taints the failed Node",
            limit=60,
        )
        tainted_in = time.monotonic() - stopped
        FIGURES.append(
            (
                f"webhook down ({case}): Lease stopped -> {UNREACHABLE} taint",
                f"{tainted_in:.1f} s (node-monitor-grace-period 10s)",
            )
        )
        assert taints[UNREACHABLE] in {"NoSchedule", "NoExecute"}
        assert _ready(core, f"failing-{case}") == "Unknown"
        assert UNREACHABLE not in _taints(core, f"healthy-{case}")

        # Scaling a workload outside the excluded namespaces is an UPDATE that leaves the
        # placement fields alone: never sent, so it goes through with the webhook down; a
        # change to its pod template is sent, and refused.
        apps.patch_namespaced_replica_set("web", workloads, {"spec": {"replicas": 2}})
        assert apps.read_namespaced_replica_set("web", workloads).spec.replicas == 2
        with pytest.raises(ApiException, match="failed calling webhook"):
            apps.patch_namespaced_replica_set(
                "web",
                workloads,
                {"spec": {"template": {"metadata": {"annotations": {"changed": "yes"}}}}},
            )

        # New webhook pods: the ReplicaSet controller creates them, the scheduler binds them.
        started = time.monotonic()
        apply_objects(admin, [deployment])
        bound = eventually(
            lambda: (
                (pods := core.list_namespaced_pod(namespace, label_selector=WEBHOOK_POD).items)
                and len(pods) == deployment["spec"]["replicas"]
                and all(p.spec.node_name for p in pods)
                and pods
            ),
            "the chart's webhook pods created and bound",
            limit=60,
        )
        FIGURES.append(
            (
                f"webhook down ({case}): Deployment applied -> every webhook pod bound",
                f"{time.monotonic() - started:.1f} s",
            )
        )
        # Only healthy Nodes (this case's, or an earlier case's) are chosen, never a failed one.
        assert all(p.spec.node_name.startswith("healthy-") for p in bound)
        assert {p.spec.priority_class_name for p in bound} == {"system-cluster-critical"}
    finally:
        delete_objects(admin, [o for o in objects if o["kind"].endswith("Configuration")])
