"""The scale bed, small: a kwok fleet of tens of nodes with hundreds of pods, in tree and
through the webhooks, and one node failing.

Each mode gets its own control plane (the scheduler and the controller-manager serve one
API server), kwok, and the fleet of :mod:`controlplane.harness.fleet` (30 nodes: general,
GPU and two tenant pools over three zones). ``in-tree`` runs upstream's plugins with our
defaults; ``webhooks`` runs ``serve`` with the fleet's policy (``bench/configs/fleet.yaml``:
dedicated tenant pools, the GPU taint guarded, per-namespace failover times).

What is checked, in both modes unless a row says otherwise: a Deployment of
:data:`REPLICAS` is scheduled onto kwok's nodes and every pod Running; pods land on the
pool their policy says (a GPU pod on the GPU pool, a DRA claim on a node whose slice has
the device, a tenant's pod on its pool through the webhooks and on the general pool in
tree, where nothing pins it); the webhooks refuse what the fleet's policy refuses; and one
node that stops renewing its Lease has its pods evicted at ``explain``'s forecast, within
2 s, for a namespace whose own failover time is 3 s. Apart from any cluster: the fleet's
objects have every pool over every zone, its tenant pools are what ``dedicated-nodes`` reads,
and its policy lacks in tree exactly the settings upstream has no counterpart for.

kwok renews Leases every quarter of :data:`LEASE_SECONDS` (2 s here), writes node status
heartbeats every :data:`STATUS_SECONDS`, and the node monitor grace period is 10 s, so the
failure shows in seconds, and the test sees that the failed node's Lease and heartbeat both
stopped while another node's went on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.harness import ControlPlane, ControlPlaneOptions
from controlplane.harness.admission import read, untranslatable
from controlplane.harness.cli import placement_webhooks
from controlplane.harness.components import DRA_CONTROLLERS
from controlplane.harness.fleet import (
    DEDICATED_KEY,
    GPU_CLASS,
    GPU_RESOURCE,
    POOL_LABEL,
    TENANT_NAMESPACE_LABEL,
    Fleet,
    FleetShape,
    controller_manager,
    create_fleet,
    fleet_objects,
)
from controlplane.harness.kwok import (
    KwokNotBuilt,
    heartbeats,
    lease_renewals,
    start_kwok,
    stop_heartbeats,
)
from controlplane.harness.modes import apiserver_options
from controlplane.harness.objects import create_namespace, pod_manifest
from controlplane.harness.process import wait_until
from tests.controlplane.conftest import FIGURES, started_plane
from webhooks.plugins import dedicated_nodes

FLEET_CONFIG = Path(__file__).parents[2] / "bench" / "configs" / "fleet.yaml"
NODES = 30
REPLICAS = 300
LEASE_SECONDS = 8
STATUS_SECONDS = 4
GRACE = 10
FAST = 3
WITHIN = 2.0
SHAPE = FleetShape(nodes=NODES, gpu_share=0.1, tenant_share=0.1)
MODES = {"in-tree": None, "webhooks": FLEET_CONFIG}


class Bed:
    """A mode's control plane with kwok and its fleet."""

    def __init__(self, mode: str, plane: ControlPlane, fleet: Fleet) -> None:
        self.mode = mode
        self.plane = plane
        self.fleet = fleet

    def pool_of(self, node: str) -> str:
        status, body = self.plane.api.get(f"/api/v1/nodes/{node}")
        assert status == 200, body
        return str(body["metadata"]["labels"][POOL_LABEL])


@pytest.fixture(scope="module", params=list(MODES), ids=lambda mode: f"mode {mode}")
def bed(request: pytest.FixtureRequest) -> Iterator[Bed]:
    """A control plane of the mode, kwok, and the fleet written and Ready."""
    mode = request.param
    options = ControlPlaneOptions(
        apiservers=(apiserver_options(mode, MODES[mode], name="main"),),
        controller_manager=controller_manager(
            GRACE, eviction_rate=100, controllers=DRA_CONTROLLERS
        ),
    )
    with started_plane(options, f"scale bed, {mode}") as plane:
        try:
            kwok = start_kwok(
                plane.directory / "kwok",
                plane.api,
                lease_seconds=LEASE_SECONDS,
                status_seconds=STATUS_SECONDS,
            )
        except KwokNotBuilt as exc:
            pytest.fail(str(exc), pytrace=False)
        try:
            fleet = create_fleet(plane.api, SHAPE, timeout=120)
            FIGURES.append(
                f"scale bed ({mode}): {NODES} nodes written in {fleet.created_in:.1f} s, "
                f"Ready in {fleet.ready_in:.1f} s"
            )
            yield Bed(mode, plane, fleet)
        finally:
            kwok.stop()


def _pods(bed: Bed, namespace: str) -> list[dict[str, Any]]:
    status, body = bed.plane.api.get(f"/api/v1/namespaces/{namespace}/pods")
    assert status == 200, body
    items: list[dict[str, Any]] = body["items"]
    return items


def test_a_deployment_of_hundreds_of_replicas_runs_on_the_kwok_fleet(bed: Bed) -> None:
    with bed.plane.api.client() as api:
        create_namespace(api, "spread")
    container = {
        "name": "main",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
    }
    labels = {"app": "spread"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "spread"},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }
    began = time.monotonic()
    status, body = bed.plane.api.request(
        "POST", "/apis/apps/v1/namespaces/spread/deployments", deployment
    )
    assert status == 201, body

    def all_running() -> bool:
        pods = _pods(bed, "spread")
        return len(pods) == REPLICAS and all(p["status"].get("phase") == "Running" for p in pods)

    wait_until(all_running, timeout=90, what=f"Running ({REPLICAS} pods)", interval=1)
    FIGURES.append(
        f"scale bed ({bed.mode}): {REPLICAS} replicas Running in {time.monotonic() - began:.1f} s"
    )
    pods = _pods(bed, "spread")
    used = {p["spec"]["nodeName"] for p in pods}
    assert used <= set(bed.fleet.pools["general"]), "untolerated pools stay free"
    assert len(used) == len(bed.fleet.pools["general"]), "the scheduler spreads them"


def _gpu_pod(name: str) -> dict[str, Any]:
    return pod_manifest(
        name,
        containers=[
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"limits": {GPU_RESOURCE: "1"}},
            }
        ],
    )


def _claim_pod(name: str) -> dict[str, Any]:
    return pod_manifest(
        name,
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        containers=[
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"claims": [{"name": "gpu"}]},
            }
        ],
        tolerations=[{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}],
    )


CLAIM_TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "one-gpu"},
    "spec": {
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU_CLASS}}]}
        }
    },
}

#: (namespace, pod, the pool it lands on by mode, why).
PLACEMENTS = [
    pytest.param(
        "jobs",
        _gpu_pod("trainer"),
        {"in-tree": "gpu", "webhooks": "gpu"},
        id="a pod requesting nvidia.com/gpu gets the GPU taint's toleration and a GPU node",
    ),
    pytest.param(
        "jobs",
        _claim_pod("claimant"),
        {"in-tree": "gpu", "webhooks": "gpu"},
        id="a pod claiming a device of the fleet's DeviceClass lands where a slice offers one",
    ),
    pytest.param(
        "tenant-a",
        pod_manifest("tenant-pod"),
        {"in-tree": "general", "webhooks": "tenant-a"},
        id="a tenant's pod is pinned to its pool by the webhooks, and nowhere in tree",
    ),
    pytest.param(
        "jobs",
        pod_manifest("plain"),
        {"in-tree": "general", "webhooks": "general"},
        id="a pod asking for nothing lands on the general pool",
    ),
]


@pytest.mark.parametrize(("namespace", "pod", "pools"), PLACEMENTS)
def test_pods_land_on_the_pool_their_policy_says(
    bed: Bed, namespace: str, pod: dict[str, Any], pools: dict[str, str]
) -> None:
    api = bed.plane.api
    if api.get(f"/api/v1/namespaces/{namespace}")[0] == 404:
        with api.client() as client:
            create_namespace(client, namespace)
    path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaimtemplates"
    if "resourceClaims" in pod["spec"]:
        status, body = api.request("POST", path, CLAIM_TEMPLATE)
        assert status in (201, 409), body
    status, body = api.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
    assert status == 201, body
    name = pod["metadata"]["name"]

    def bound() -> bool:
        stored = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")[1]
        return bool(stored["spec"].get("nodeName")) and stored["status"].get("phase") == "Running"

    wait_until(bound, timeout=60, what=f"running ({namespace}/{name})")
    stored = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")[1]
    assert bed.pool_of(stored["spec"]["nodeName"]) == pools[bed.mode]


#: (namespace, pod, what the refusal says).
REFUSALS = [
    pytest.param(
        "jobs",
        pod_manifest(
            "gpu-squatter",
            tolerations=[{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}],
        ),
        "toleration nvidia.com/gpu:NoSchedule",
        id="a pod tolerating the GPU taint without a GPU request or claim is refused",
    ),
    pytest.param(
        "jobs",
        pod_manifest(
            "tenant-squatter",
            tolerations=[
                {
                    "key": "dedicated",
                    "operator": "Equal",
                    "value": "tenant-a",
                    "effect": "NoSchedule",
                }
            ],
        ),
        "toleration dedicated=tenant-a:NoSchedule",
        id="a pod outside tenant-a tolerating its taint is refused",
    ),
]


@pytest.mark.parametrize(("namespace", "pod", "says"), REFUSALS)
def test_the_webhooks_refuse_what_the_fleets_policy_refuses(
    bed: Bed, namespace: str, pod: dict[str, Any], says: str
) -> None:
    if bed.mode != "webhooks":
        pytest.skip("in tree nothing guards the GPU and tenant pools")
    api = bed.plane.api
    if api.get(f"/api/v1/namespaces/{namespace}")[0] == 404:
        with api.client() as client:
            create_namespace(client, namespace)
    answer = api.call("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
    assert answer.status == 403, answer.body
    assert says in answer.message


def _heartbeats(bed: Bed) -> dict[str, Any]:
    status, body = bed.plane.api.get("/api/v1/nodes")
    assert status == 200, body
    return dict(heartbeats(body["items"]))


def test_a_node_that_stops_renewing_has_its_pods_evicted_at_explains_forecast(bed: Bed) -> None:
    if bed.mode != "webhooks":
        pytest.skip("the namespace's own failover time is the webhooks' (namespaceOverrides)")
    api = bed.plane.api
    namespace = "failover"
    with api.client() as client:
        create_namespace(
            client, namespace, annotations={"placement-webhooks.io/unreachable-seconds": str(FAST)}
        )
    failing = bed.fleet.pools["general"][0]
    names = [f"victim-{i}" for i in range(5)]
    for name in names:
        pod = pod_manifest(name, nodeSelector={"kubernetes.io/hostname": failing})
        status, body = api.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
        assert status == 201, body
    wait_until(
        lambda: all(p["status"].get("phase") == "Running" for p in _pods(bed, namespace)),
        timeout=60,
        what="running",
    )
    run = placement_webhooks(
        api,
        "explain",
        "-n",
        namespace,
        "--fail",
        failing,
        "--node-monitor-grace-period",
        f"{GRACE}s",
        "--node-eviction-rate",
        "100",
        "--config",
        str(FLEET_CONFIG),
        "-o",
        "json",
    )
    assert run.code in (0, 1), run.stderr
    (forecast,) = {e["at"] for e in run.json()["failure"]["evictions"] if e["node"] == failing}
    assert forecast == GRACE + FAST

    stop_heartbeats(api, [failing])
    stopped = time.time()
    beats = _heartbeats(bed)
    seen: dict[str, float] = {}

    def all_evicted() -> bool:
        moment = time.time()
        present = {p["metadata"]["name"]: p for p in _pods(bed, namespace)}
        for name in names:
            if name not in present or present[name]["metadata"].get("deletionTimestamp"):
                seen.setdefault(name, moment)
        return set(names) <= set(seen)

    wait_until(all_evicted, timeout=forecast + 20, what="evicted", interval=0.1)
    # The node lifecycle controller counts the grace from the later of the node's two
    # signals, its Lease renewal and its Ready heartbeat; a write kwok had under way when
    # the label went can still land a moment later, so both are read once they are final.
    renewed = lease_renewals(api)[failing].timestamp()
    after = _heartbeats(bed)
    beat = after[failing].timestamp()
    last = max(renewed, beat)
    measured = {name: seen[name] - last for name in names}
    FIGURES.append(
        f"scale bed failover: forecast {forecast} s, measured "
        + ", ".join(f"{s:.1f}" for s in sorted(measured.values()))
        + f" s (last signal {last - stopped:+.1f} s from the stop)"
    )
    assert last < stopped + GRACE, "kwok stopped the Lease and the heartbeat"
    healthy = bed.fleet.pools["general"][1]
    assert after[healthy] != beats[healthy], "and goes on beating for the others"
    assert all(abs(s - forecast) <= WITHIN for s in measured.values()), measured


# -- the fleet and its policy, without a cluster ------------------------------------------


def test_the_fleets_tenant_pools_are_what_dedicated_nodes_reads_by_default() -> None:
    settings = dedicated_nodes.Settings()
    assert (
        settings.key,
        settings.effect,
        settings.namespace_label,
    ) == (DEDICATED_KEY, "NoSchedule", TENANT_NAMESPACE_LABEL)


def test_the_fleets_policy_lacks_in_tree_exactly_the_three_settings_upstream_has_not() -> None:
    problems = untranslatable(read(FLEET_CONFIG))
    assert [p.split(":")[0] for p in problems] == [
        "plugins.default-toleration-seconds.namespaceOverrides",
        "plugins.extended-resource-toleration.enforce",
        "plugins.dedicated-nodes",
    ]


SHAPES = [
    pytest.param(SHAPE, id="the small bed's thirty nodes have every pool"),
    pytest.param(FleetShape(), id="the default two hundred nodes"),
    pytest.param(
        FleetShape(nodes=1000, tenants=("a", "b", "c")), id="a thousand nodes, three tenants"
    ),
]


@pytest.mark.parametrize("shape", SHAPES)
def test_the_fleet_has_its_pools_over_every_zone_and_a_slice_per_gpu_node(
    shape: FleetShape,
) -> None:
    objects = fleet_objects(shape)
    nodes = [o for o in objects if o["kind"] == "Node"]
    assert len(nodes) == shape.nodes
    assert len({n["metadata"]["name"] for n in nodes}) == shape.nodes
    assert len({n["spec"]["podCIDR"] for n in nodes}) == shape.nodes
    pools: dict[str, set[str]] = {}
    for node in nodes:
        labels = node["metadata"]["labels"]
        pools.setdefault(labels[POOL_LABEL], set()).add(labels["topology.kubernetes.io/zone"])
        assert node["status"]["capacity"]["pods"] == "110"
    assert set(pools) == {"general", "gpu", *shape.tenants}
    assert pools["general"] == set(shape.zones)
    gpu_nodes = {n["metadata"]["name"] for n in nodes if GPU_RESOURCE in n["status"]["capacity"]}
    assert gpu_nodes == {
        n["metadata"]["name"] for n in nodes if n["metadata"]["labels"][POOL_LABEL] == "gpu"
    }
    slices = [o for o in objects if o["kind"] == "ResourceSlice"]
    assert sorted(s["spec"]["nodeName"] for s in slices) == sorted(gpu_nodes)
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "DeviceClass"] == [GPU_CLASS]
    namespaces = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Namespace"}
    assert set(namespaces) == set(shape.tenants)
