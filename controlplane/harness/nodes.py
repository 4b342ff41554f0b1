"""Written Nodes and their heartbeats: a kubelet's part, played by the tests.

No kubelet runs, so a test writes the Node object itself (labels, taints, capacity,
allocatable and a Ready condition: Node status may be set on create) and keeps its Lease in
``kube-node-lease`` fresh, which is all the node lifecycle controller looks at once the node
is known. :class:`LeaseRenewer` renews the Leases of many nodes from one thread; stopping one
node's renewal is how a failover test makes that node fail, exactly as a kubelet that died
would.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from controlplane.harness.process import wait_until

NODE_LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


def now() -> str:
    """The current time as a MicroTime (``renewTime``'s format)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _seconds_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_manifest(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, Any]] = (),
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    extended: Mapping[str, str] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
) -> dict[str, Any]:
    """A Node as a kubelet would register it: capacity equal to allocatable, Ready unless
    ``ready`` is false (a kubelet that reports itself not ready, and keeps renewing).

    The well-known labels (hostname, os, arch) are set because schedulers and our
    ``explain`` both select on them.
    """
    capacity = {"cpu": cpu, "memory": memory, "pods": pods, **(extended or {})}
    stamp = _seconds_now()
    conditions = [
        {"type": kind, "status": "False", "reason": f"KubeletHas{reason}"}
        for kind, reason in (
            ("MemoryPressure", "SufficientMemory"),
            ("DiskPressure", "NoDiskPressure"),
            ("PIDPressure", "SufficientPID"),
        )
    ]
    conditions.append(
        {"type": "Ready", "status": "True", "reason": "KubeletReady"}
        if ready
        else {"type": "Ready", "status": "False", "reason": "KubeletNotReady"}
    )
    for condition in conditions:
        condition.update(lastHeartbeatTime=stamp, lastTransitionTime=stamp, message="written")
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                **(labels or {}),
            },
        },
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": conditions,
            "addresses": [{"type": "Hostname", "address": name}],
        },
    }


def lease_manifest(node: Mapping[str, Any]) -> dict[str, Any]:
    """The node's Lease, owned by the Node as the kubelet makes it (deleted with it)."""
    name = node["metadata"]["name"]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": NODE_LEASE_NAMESPACE,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}
            ],
        },
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": now(),
        },
    }


def write_node(api_client: Any, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Create the Node and its Lease; returns the stored Node as a dict."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    stored = core.create_node(manifest)
    node: dict[str, Any] = api_client.sanitize_for_serialization(stored)
    client.CoordinationV1Api(api_client).create_namespaced_lease(
        NODE_LEASE_NAMESPACE, lease_manifest(node)
    )
    return node


def expected_taints(node: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The (key, effect) taints the node lifecycle controller keeps on a healthy-lease node.

    A Ready node has no not-ready or unreachable taint (the controller lifts the not-ready
    taint every new Node gets); a node reporting Ready False has not-ready for NoSchedule
    and NoExecute; a cordoned node (``spec.unschedulable``) has unschedulable:NoSchedule.
    """
    wanted: set[tuple[str, str]] = set()
    conditions = node.get("status", {}).get("conditions") or []
    ready = next((c.get("status") for c in conditions if c.get("type") == "Ready"), "Unknown")
    if ready == "False":
        wanted |= {(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")}
    if node.get("spec", {}).get("unschedulable"):
        wanted.add((UNSCHEDULABLE, "NoSchedule"))
    return wanted


def settled(api_client: Any, manifests: Iterable[Mapping[str, Any]]) -> bool:
    """Whether every Node of ``manifests`` carries exactly the lifecycle taints it should.

    Why wait for it: the scheduler and ``explain`` must read the same Nodes, and for a
    moment after it is written every Node still has the not-ready taint it was created
    with, or lacks the one its condition calls for.
    """
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    managed = {NOT_READY, UNREACHABLE, UNSCHEDULABLE}
    for manifest in manifests:
        stored = core.read_node(manifest["metadata"]["name"])
        present = {(t.key, t.effect) for t in stored.spec.taints or [] if t.key in managed}
        if present != expected_taints(manifest):
            return False
    return True


class LeaseRenewer:
    """Renews the Leases of the nodes it is given, every ``interval`` seconds, in one thread.

    ``stop_node`` ends one node's heartbeat (its kubelet "dies"); ``close`` ends them all.
    A renewal that fails is retried on the next round: a missed beat is what the node
    lifecycle controller tolerates anyway, and the test, not this thread, decides when a
    node has failed. :meth:`last_renewal` says when a node's Lease was last renewed, the
    moment a failover test counts from.
    """

    def __init__(self, api_client: Any, interval: float = 1.0) -> None:
        self.api_client = api_client
        self.interval = interval
        self._nodes: set[str] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self.errors: list[str] = []
        self._renewed: dict[str, float] = {}
        self._thread = threading.Thread(target=self._run, name="lease-renewer", daemon=True)
        self._thread.start()

    def add(self, name: str) -> None:
        """Start (or resume) renewing ``name``'s Lease."""
        with self._lock:
            self._nodes.add(name)

    def stop_node(self, name: str) -> None:
        """Stop renewing ``name``'s Lease: from now on the node is failing."""
        with self._lock:
            self._nodes.discard(name)

    def last_renewal(self, name: str) -> float | None:
        """``time.monotonic()`` at the end of the last successful renewal of ``name``.

        After :meth:`stop_node`, wait one ``interval`` before reading it: a round that had
        already picked the node may still renew it once.
        """
        with self._lock:
            return self._renewed.get(name)

    def renewing(self) -> set[str]:
        """The nodes whose Leases are being renewed."""
        with self._lock:
            return set(self._nodes)

    def close(self) -> None:
        """Stop every renewal and the thread."""
        self._stopped.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        from kubernetes import client

        leases = client.CoordinationV1Api(self.api_client)
        while not self._stopped.wait(self.interval):
            for name in sorted(self.renewing()):
                try:
                    leases.patch_namespaced_lease(
                        name, NODE_LEASE_NAMESPACE, {"spec": {"renewTime": now()}}
                    )
                except Exception as exc:  # retried next round; kept for the test
                    self.errors.append(f"{name}: {exc}")
                    continue
                with self._lock:
                    self._renewed[name] = time.monotonic()


@contextlib.contextmanager
def heartbeating(
    api_client: Any, manifests: Sequence[Mapping[str, Any]], *, interval: float = 1.0
) -> Iterator[LeaseRenewer]:
    """Write every Node of ``manifests``, renew their Leases every ``interval`` seconds, and
    wait until they have :func:`settled`; the renewals stop when the block ends.

    Why one helper: a suite that compares what the scheduler, the lifecycle controllers and
    ``explain`` read needs its Nodes written, alive and settled, in that order, and the
    renewing thread stopped even when the test fails.
    """
    renewer = LeaseRenewer(api_client, interval)
    try:
        for manifest in manifests:
            write_node(api_client, manifest)
            renewer.add(manifest["metadata"]["name"])
        wait_until(lambda: settled(api_client, manifests), timeout=60, what="settled")
        yield renewer
    finally:
        renewer.close()
