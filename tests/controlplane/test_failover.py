"""``explain --fail`` against the real node lifecycle and taint eviction controllers.

One of four written Nodes in a zone stops renewing its Lease, as a node whose kubelet died.
The real controller-manager (``--node-monitor-grace-period`` 6 s) marks it unreachable and
taints it ``node.kubernetes.io/unreachable:NoExecute``; the taint eviction controller then
deletes each pod bound there when its tolerations run out. No kubelet ever ran those pods:
the controllers act on the binding alone, so the pods need no status.

``explain --kubeconfig -n failover --fail <node>`` is asked before the node fails, with the
same grace period and the same policy (DefaultTolerationSeconds at 10 s, in tree and in
explain's admission alike). Its forecast for the taint and for every pod is compared with
what a watch saw, counted from the node's last Lease renewal; the pods' tolerations cover
every way a forecast is made: evicted at once (0 s and negative seconds), after 3, 7 and
12 s, after the first matching toleration's seconds rather than the smallest, after the
seconds DefaultTolerationSeconds added, and never. A pod on a healthy node is the control.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from controlplane.harness import (
    ControllerManagerOptions,
    ControlPlane,
    ControlPlaneOptions,
    LeaseRenewer,
    create_namespace,
    create_pods,
    heartbeating,
    node_manifest,
    pod_manifest,
    running,
)
from controlplane.harness.cli import placement_webhooks
from controlplane.harness.modes import apiserver_options
from controlplane.harness.nodes import UNREACHABLE
from controlplane.harness.scheduling import decisions
from controlplane.harness.timeline import Timeline
from tests.controlplane.conftest import FIGURES

CONFIG = Path(__file__).parent / "configs" / "failover.yaml"
GRACE = 6
#: How far a measured time may be from the forecast (the issue's bound).
WITHIN = 2.0
FAILING = "fail-1"
NODES = [node_manifest(f"fail-{i}", labels={"topology.kubernetes.io/zone": "z"}) for i in range(4)]
NAMESPACE = "failover"


def _unreachable(seconds: int | None = None, **more: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        found["tolerationSeconds"] = seconds
    return {**found, **more}


#: (pod, its tolerations, why it is there). DefaultTolerationSeconds adds the not-ready and
#: unreachable tolerations (10 s) to a pod that has none for that taint.
PODS: list[tuple[str, list[dict[str, Any]], str]] = [
    ("at-once", [_unreachable(0)], "tolerationSeconds 0: evicted when the taint lands"),
    ("negative", [_unreachable(-5)], "negative seconds count as zero"),
    ("three", [_unreachable(3)], "evicted 3 s after the taint"),
    ("seven", [_unreachable(7)], "evicted 7 s after the taint"),
    ("twelve", [_unreachable(12)], "evicted 12 s after the taint"),
    (
        "first-match",
        [_unreachable(9), {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2}],
        "two tolerations match: the first one's 9 s count, not the smaller 2 s",
    ),
    ("defaulted", [], "DefaultTolerationSeconds' 10 s"),
    ("forever", [_unreachable()], "no tolerationSeconds: never evicted"),
    ("everything", [{"operator": "Exists"}], "tolerates every taint forever"),
]
CONTROL = "healthy-node"


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """In-tree admission with the failover policy and a 6 s grace period.

    The node monitor looks every 0.5 s: the controller notices a lapsed Lease at its next
    look, so the period is the part of every delay that no forecast can know.
    """
    options = ControlPlaneOptions(
        apiservers=(apiserver_options("in-tree", CONFIG, name="main"),),
        controller_manager=ControllerManagerOptions(
            node_monitor_period="500ms", node_monitor_grace_period=f"{GRACE}s"
        ),
    )
    with running(options) as started:
        yield started


def _seconds(answer: float | None) -> str:
    return "never" if answer is None else f"{answer:.1f} s"


def test_the_measured_taint_and_evictions_are_within_2s_of_explains_forecast(
    plane: ControlPlane,
) -> None:
    with plane.api.client() as api, heartbeating(api, NODES, interval=0.5) as renewer:
        _run(plane, api, renewer)


def _run(plane: ControlPlane, api: Any, renewer: LeaseRenewer) -> None:
    create_namespace(api, NAMESPACE)
    pods = [
        pod_manifest(
            name,
            nodeSelector={"kubernetes.io/hostname": FAILING},
            tolerations=tolerations,
            terminationGracePeriodSeconds=30,
        )
        for name, tolerations, _ in PODS
    ]
    pods.append(pod_manifest(CONTROL, nodeSelector={"kubernetes.io/hostname": "fail-2"}))
    create_pods(api, NAMESPACE, pods)
    bound = decisions(api, NAMESPACE, [p["metadata"]["name"] for p in pods])
    assert {n: o.node for n, o in bound.items()} == {
        **{name: FAILING for name, _, _ in PODS},
        CONTROL: "fail-2",
    }

    run = placement_webhooks(
        plane.api,
        "explain",
        "-n",
        NAMESPACE,
        "--fail",
        FAILING,
        "--node-monitor-grace-period",
        f"{GRACE}s",
        "--config",
        str(CONFIG),
        "-o",
        "json",
    )
    # Exit 1: the pods pinned to the failed node fit nowhere once it is down, as they should.
    assert run.code in (0, 1), run.stderr
    simulation = run.json()["failure"]
    (taint,) = [t for t in simulation["taints"] if t["node"] == FAILING]
    forecast_taint = taint["at"]
    forecast = {
        e["pod"].rsplit("/", 1)[1]: e["at"] for e in simulation["evictions"] if e["node"] == FAILING
    }
    assert set(forecast) == {name for name, _, _ in PODS}, "every pod of the node is forecast"
    assert taint["taint"] == f"{UNREACHABLE}:NoExecute"

    timeline = Timeline(api, NAMESPACE)
    try:
        renewer.stop_node(FAILING)
        time.sleep(renewer.interval * 2)  # a round that had already begun renews once more
        failed_at = renewer.last_renewal(FAILING)
        assert failed_at is not None
        latest = max((at for at in forecast.values() if at is not None), default=0.0)
        deadline = failed_at + max(latest, forecast_taint) + WITHIN + 3
        while time.monotonic() < deadline:
            time.sleep(0.2)
        measured_taint = timeline.taint_seen(FAILING, UNREACHABLE, "NoExecute")
        measured = {name: timeline.deletion_seen(name) for name, _, _ in PODS}
        control = timeline.deletion_seen(CONTROL)
    finally:
        timeline.close()

    def since(moment: float | None) -> float | None:
        return None if moment is None else moment - failed_at

    rows = [("taint", since(measured_taint), forecast_taint)]
    rows += [(name, since(measured[name]), forecast[name]) for name, _, _ in PODS]
    report = [
        f"  {what}: measured {_seconds(seen)}, forecast {_seconds(expected)}"
        + ("" if seen is None or expected is None else f", delta {seen - expected:+.1f} s")
        for what, seen, expected in rows
    ]
    FIGURES.append(
        f"failover (grace {GRACE}s, times from the last Lease renewal of {FAILING}):\n"
        + "\n".join(report)
    )
    wrong = [
        line
        for (what, seen, expected), line in zip(rows, report, strict=True)
        if (seen is None) != (expected is None)
        or (seen is not None and expected is not None and abs(seen - expected) > WITHIN)
    ]
    assert not wrong, "\n".join(report + timeline.errors)
    assert control is None, "the pod on a healthy node stays"
    core = client.CoreV1Api(api)
    for name, seen in measured.items():
        if seen is not None:
            pod = core.read_namespaced_pod(name, NAMESPACE)
            why = {c.type: c.reason for c in pod.status.conditions or []}
            assert why.get("DisruptionTarget") == "DeletionByTaintManager", (name, why)
    node = core.read_node(FAILING)
    ready = next(c for c in node.status.conditions if c.type == "Ready")
    assert ready.status == "Unknown"
