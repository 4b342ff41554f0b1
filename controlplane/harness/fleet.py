"""A simulated fleet: Nodes shaped like a real cluster's, written fast, played by kwok.

Why this shape: what a platform team runs the webhooks for is visible only on a fleet that
has what they guard. So the fleet has three zones (``topology.kubernetes.io/zone``), a GPU
pool tainted ``nvidia.com/gpu=present:NoSchedule`` with ``nvidia.com/gpu`` capacity and one
DRA ResourceSlice per node (driver :data:`GPU_DRIVER`, with its DeviceClass), dedicated
pools per tenant (taint ``dedicated=<tenant>:NoSchedule`` and label ``dedicated=<tenant>``,
the ``dedicated-nodes`` plugin's defaults, and each tenant's Namespace labelled
``placement-webhooks.io/dedicated=<tenant>``, the label that plugin reads), and general
pools for everything else. Every Node has ``pods: 110`` (a kubelet's default ``maxPods``)
and a pod CIDR of its own (/24, as the node IPAM controller would assign), from which kwok
hands out pod IPs.

:func:`fleet_objects` is pure, so a test or a bench can inspect the fleet without a cluster;
:func:`create_fleet` writes it with concurrent creates and waits until every Node is Ready
(kwok's node Stage marks it) and untainted (the node lifecycle controller lifts the
``not-ready`` taint every new Node is created with).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from controlplane.harness.components import ApiServer, ControllerManagerOptions
from controlplane.harness.kwok import MANAGED_LABEL, managed_labels
from controlplane.harness.process import wait_until

ZONE_LABEL = "topology.kubernetes.io/zone"
#: Which pool a Node is in: ``general``, ``gpu`` or the tenant's name.
POOL_LABEL = "scale.placement-webhooks.io/pool"
GPU_RESOURCE = "nvidia.com/gpu"
GPU_TAINT = {"key": GPU_RESOURCE, "value": "present", "effect": "NoSchedule"}
GPU_DRIVER = "gpu.example.com"
GPU_CLASS = "gpu.example.com"
RESOURCE_API = "resource.k8s.io/v1"
#: The ``dedicated-nodes`` plugin's defaults: taint and node label key, Namespace label.
DEDICATED_KEY = "dedicated"
TENANT_NAMESPACE_LABEL = "placement-webhooks.io/dedicated"
CREATE_THREADS = 16
READY_TIMEOUT = 300.0
#: The controller-manager's client without its default limit of 20 requests/s (burst 30).
#: Why: on a fleet the node lifecycle controller lifts the ``not-ready`` taint of every new
#: Node and taints every failed one, and the taint eviction controller deletes every pod of
#: a failed node when its toleration runs out, all in the same second; at 20/s the client's
#: limit, not the controllers, would decide when the last one happens (200 new Nodes took
#: 44 s to become schedulable, against 6 s without it).
CONTROLLER_MANAGER_ARGS = ("--kube-api-qps=1000", "--kube-api-burst=2000")


def controller_manager(
    grace_seconds: int = 40,
    *,
    period: str = "500ms",
    eviction_rate: float | None = None,
    controllers: Sequence[str] | None = None,
) -> ControllerManagerOptions:
    """The controller-manager of a fleet: node monitor grace ``grace_seconds`` (40 s:
    upstream's before v1.32), looking every ``period``, with :data:`CONTROLLER_MANAGER_ARGS`.

    ``eviction_rate`` sets ``--node-eviction-rate`` and ``--secondary-node-eviction-rate``
    (nodes tainted per second per zone; upstream's 0.1 when ``None``).
    """
    extra = list(CONTROLLER_MANAGER_ARGS)
    if eviction_rate is not None:
        extra += [
            f"--node-eviction-rate={eviction_rate:g}",
            f"--secondary-node-eviction-rate={eviction_rate:g}",
        ]
    defaults = ControllerManagerOptions()
    return ControllerManagerOptions(
        node_monitor_period=period,
        node_monitor_grace_period=f"{grace_seconds}s",
        controllers=tuple(controllers) if controllers else defaults.controllers,
        extra_args=tuple(extra),
    )


@dataclass(frozen=True, slots=True)
class Machine:
    """A node type: what its kubelet reports as capacity, and what it keeps back."""

    instance_type: str
    cpu: int
    memory_gi: int
    gpus: int = 0

    def capacity(self) -> dict[str, str]:
        """Capacity as a kubelet reports it."""
        found = {
            "cpu": str(self.cpu),
            "memory": f"{self.memory_gi}Gi",
            "pods": "110",
            "ephemeral-storage": "200Gi",
        }
        if self.gpus:
            found[GPU_RESOURCE] = str(self.gpus)
        return found

    def allocatable(self) -> dict[str, str]:
        """Capacity less the system and kube reservations a managed node keeps (about
        a tenth of a core and a few GiB), as the scheduler sees it."""
        found = self.capacity()
        found["cpu"] = f"{self.cpu * 1000 - 90 - 10 * self.cpu}m"
        found["memory"] = f"{self.memory_gi * 1024 - 1024 - 40 * self.memory_gi}Mi"
        found["ephemeral-storage"] = "180Gi"
        return found


GENERAL = Machine("general.8xlarge", cpu=32, memory_gi=128)
GPU = Machine("gpu.12xlarge", cpu=48, memory_gi=384, gpus=8)
DEDICATED = Machine("general.4xlarge", cpu=16, memory_gi=64)


@dataclass(frozen=True, slots=True)
class FleetShape:
    """How many nodes, and how they split into pools and zones.

    Shares are of ``nodes`` and rounded down, with at least one node per GPU and tenant
    pool (so a small test bed still has every pool); the general pool takes the rest.
    """

    nodes: int = 200
    zones: tuple[str, ...] = ("zone-a", "zone-b", "zone-c")
    gpu_share: float = 0.1
    tenants: tuple[str, ...] = ("tenant-a", "tenant-b")
    tenant_share: float = 0.05
    prefix: str = "fleet"

    def pools(self) -> dict[str, int]:
        """Nodes per pool: ``gpu``, each tenant, then ``general``."""
        gpu = max(1, int(self.nodes * self.gpu_share))
        tenant = max(1, int(self.nodes * self.tenant_share))
        counts = {"gpu": gpu, **dict.fromkeys(self.tenants, tenant)}
        general = self.nodes - sum(counts.values())
        if general < 1:
            raise ValueError(f"{self.nodes} nodes leave none for the general pool")
        return {**counts, "general": general}


@dataclass(slots=True)
class Fleet:
    """A written fleet: its shape, node names per pool, and how long it took."""

    shape: FleetShape
    pools: dict[str, list[str]]
    #: Seconds to write every object, and until every Node was Ready and untainted.
    created_in: float = 0.0
    ready_in: float = 0.0
    objects: list[dict[str, Any]] = field(default_factory=list)

    @property
    def nodes(self) -> list[str]:
        """Every node name, pool by pool."""
        return [name for names in self.pools.values() for name in names]


def _pod_cidr(index: int) -> str:
    return f"10.{128 + index // 256}.{index % 256}.0/24"


def _node(
    name: str,
    index: int,
    pool: str,
    zone: str,
    machine: Machine,
    taints: Sequence[Mapping[str, str]],
) -> dict[str, Any]:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": machine.instance_type,
        ZONE_LABEL: zone,
        "topology.kubernetes.io/region": "region-1",
        POOL_LABEL: pool,
        **managed_labels(),
    }
    spec: dict[str, Any] = {"podCIDR": _pod_cidr(index), "podCIDRs": [_pod_cidr(index)]}
    if pool not in ("general", "gpu"):
        labels[DEDICATED_KEY] = pool
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    # No conditions: kwok's node-initialize Stage reports the node Ready, as a kubelet would.
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"capacity": machine.capacity(), "allocatable": machine.allocatable()},
    }


def _resource_slice(node: str, gpus: int) -> dict[str, Any]:
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {"model": {"string": "example-80g"}, "index": {"int": i}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for i in range(gpus)
    ]
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{GPU_DRIVER}"},
        "spec": {
            "driver": GPU_DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _device_class() -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": GPU_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]},
    }


def tenant_namespace(tenant: str) -> dict[str, Any]:
    """The Namespace of ``tenant``, named after it, labelled as ``dedicated-nodes`` reads."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": tenant, "labels": {TENANT_NAMESPACE_LABEL: tenant}},
    }


def node_names(shape: FleetShape) -> dict[str, list[str]]:
    """The node names of each pool (``<prefix>-<pool>-<n>``), in :meth:`FleetShape.pools`
    order."""
    return {
        pool: [f"{shape.prefix}-{pool}-{n:04d}" for n in range(count)]
        for pool, count in shape.pools().items()
    }


def fleet_objects(shape: FleetShape) -> list[dict[str, Any]]:
    """Every object of the fleet: the DeviceClass, the tenant Namespaces, the Nodes, one
    ResourceSlice per GPU node; in that order, so each is written after what it refers to.

    Zones go round-robin within each pool, so every pool spans every zone.
    """
    objects: list[dict[str, Any]] = [_device_class()]
    objects += [tenant_namespace(t) for t in shape.tenants]
    slices: list[dict[str, Any]] = []
    index = 0
    for pool, names in node_names(shape).items():
        machine = {"gpu": GPU, "general": GENERAL}.get(pool, DEDICATED)
        if pool == "gpu":
            taints: list[Mapping[str, str]] = [GPU_TAINT]
        elif pool == "general":
            taints = []
        else:
            taints = [{"key": DEDICATED_KEY, "value": pool, "effect": "NoSchedule"}]
        for n, name in enumerate(names):
            zone = shape.zones[n % len(shape.zones)]
            objects.append(_node(name, index, pool, zone, machine, taints))
            index += 1
            if machine.gpus:
                slices.append(_resource_slice(name, machine.gpus))
    return objects + slices


_PATHS = {
    "Node": "/api/v1/nodes",
    "Namespace": "/api/v1/namespaces",
    "DeviceClass": f"/apis/{RESOURCE_API}/deviceclasses",
    "ResourceSlice": f"/apis/{RESOURCE_API}/resourceslices",
}


def _create(server: ApiServer, manifest: Mapping[str, Any]) -> None:
    status, body = server.request("POST", _PATHS[manifest["kind"]], manifest)
    if status not in (200, 201, 409):
        name = manifest["metadata"]["name"]
        raise RuntimeError(f"could not create {manifest['kind']} {name}: {status} {body}")


def ready_nodes(server: ApiServer) -> set[str]:
    """Names of kwok-managed Nodes that are Ready and carry no not-ready/unreachable taint."""
    status, body = server.get(f"/api/v1/nodes?labelSelector={MANAGED_LABEL}")
    if status != 200:
        return set()
    ready: set[str] = set()
    for node in body.get("items", []):
        conditions = node.get("status", {}).get("conditions") or []
        is_ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        tainted = any(
            t.get("key", "").startswith("node.kubernetes.io/not-ready")
            or t.get("key", "").startswith("node.kubernetes.io/unreachable")
            for t in node.get("spec", {}).get("taints") or []
        )
        if is_ready and not tainted:
            ready.add(node["metadata"]["name"])
    return ready


def create_fleet(
    server: ApiServer, shape: FleetShape | None = None, *, timeout: float = READY_TIMEOUT
) -> Fleet:
    """Write the fleet of ``shape`` into ``server`` and wait until every Node is Ready.

    kwok must be running (:func:`controlplane.harness.kwok.start_kwok`) and so must the
    controller-manager's node lifecycle controller: the first marks the Nodes Ready, the
    second lifts their ``not-ready`` taint. Why concurrent creates: one client writes a
    thousand Nodes in seconds only when it does not wait for each answer in turn. Namespaces
    and the DeviceClass go first, Nodes next, ResourceSlices last (a slice names its node).
    """
    shape = shape or FleetShape()
    objects = fleet_objects(shape)
    fleet = Fleet(shape, node_names(shape), objects=objects)
    began = time.monotonic()
    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        for kinds in (("DeviceClass", "Namespace"), ("Node",), ("ResourceSlice",)):
            batch = [o for o in objects if o["kind"] in kinds]
            list(pool.map(lambda o: _create(server, o), batch))
    fleet.created_in = time.monotonic() - began
    wanted = set(fleet.nodes)
    wait_until(
        lambda: wanted <= ready_nodes(server),
        timeout=timeout,
        what=f"Ready ({len(wanted)} nodes)",
        interval=0.5,
    )
    fleet.ready_in = time.monotonic() - began
    return fleet
