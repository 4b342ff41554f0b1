"""The offline tools on the scale bed, small: ``explain`` agrees with the real scheduler on a
sample of a fleet's pods, and ``audit`` reads every one of them through the API server.

One control plane (the in-tree plugins of our default config, as ``explain`` admits), kwok,
a fleet of :data:`NODES` nodes (general, GPU and two tenant pools over three zones) and the
workload of :mod:`controlplane.harness.workload` at :data:`PODS` pods: Deployments spread
over zones or pinned to one, GPU and tenant Deployments, bare pods, and pods that fit
nowhere. ``bench/scale/offline.py`` runs the same at a thousand nodes and thirty thousand
pods.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.harness.binaries import NotBuilt
from controlplane.harness.fleet import POOL_LABEL, FleetShape
from controlplane.harness.kwok import KwokNotBuilt
from controlplane.harness.offline import (
    Bed,
    audit_cluster,
    explain_sample,
    offline_bed,
    redecide,
    sample,
    settle,
)
from controlplane.harness.process import wait_until
from controlplane.harness.workload import (
    KIND_LABEL,
    Workload,
    WorkloadShape,
    create_workload,
    created_count,
    stored_pods,
    undecided,
    workload_objects,
)
from tests.controlplane.conftest import FIGURES

NODES = 40
PODS = 600
SAMPLE = 50
SEED = 32
SHAPE = FleetShape(nodes=NODES)
FLEET_CONFIG = Path(__file__).parents[2] / "bench" / "configs" / "fleet.yaml"


class Loaded:
    """The bed with its workload decided: the stored pods by ``namespace/name``."""

    def __init__(self, bed: Bed, workload: Workload, pods: dict[str, dict[str, Any]]) -> None:
        self.bed = bed
        self.workload = workload
        self.pods = pods


@pytest.fixture(scope="module")
def loaded() -> Iterator[Loaded]:
    """The bed, the workload created, and every pod bound or found unschedulable."""
    workload = workload_objects(SHAPE, WorkloadShape(pods=PODS, replicas=20))
    try:
        with offline_bed(SHAPE, ready_timeout=120) as bed:
            create_workload(bed.api, workload)

            def decided() -> bool:
                if created_count(bed.api, workload) < workload.expected:
                    return False
                pending, undecided_ = undecided(bed.api)
                return undecided_ == 0 and pending <= workload.stranded

            wait_until(decided, timeout=120, what=f"decided ({workload.expected} pods)")
            yield Loaded(bed, workload, stored_pods(bed.api))
    except (KwokNotBuilt, NotBuilt) as exc:
        pytest.fail(str(exc), pytrace=False)


def _kind(pod: dict[str, Any]) -> str:
    return str(pod["metadata"]["labels"][KIND_LABEL])


POOLS = [
    pytest.param("plain", {"general"}, id="a plain Deployment's pods run on the general pool"),
    pytest.param(
        "zone-pinned", {"general"}, id="a Deployment pinned to a zone stays on the general pool"
    ),
    pytest.param("gpu", {"gpu"}, id="pods requesting nvidia.com/gpu run on the GPU pool"),
    pytest.param(
        "tenant", {"tenant-a", "tenant-b"}, id="a tenant's pods run on the tenant pools only"
    ),
    pytest.param("stranded", set(), id="pods that fit no node are bound nowhere"),
]


@pytest.mark.parametrize(("kind", "pools"), POOLS)
def test_the_scheduler_places_each_kind_of_pod_on_its_pool(
    loaded: Loaded, kind: str, pools: set[str]
) -> None:
    status, body = loaded.bed.api.get("/api/v1/nodes")
    assert status == 200, body
    pool_of = {n["metadata"]["name"]: n["metadata"]["labels"][POOL_LABEL] for n in body["items"]}
    mine = [p for p in loaded.pods.values() if _kind(p) == kind]
    assert mine, f"the workload has {kind} pods"
    found = {pool_of[p["spec"]["nodeName"]] for p in mine if p["spec"].get("nodeName")}
    assert found <= pools
    if not pools:
        assert all(not p["spec"].get("nodeName") for p in mine)


def test_explain_agrees_with_the_scheduler_on_a_sample_of_the_fleets_pods(
    loaded: Loaded, tmp_path: Path
) -> None:
    assert len(loaded.pods) == loaded.workload.expected
    keys = sample(loaded.pods, SAMPLE, SEED)
    settle(loaded.bed.api, timeout=60)
    pods = redecide(loaded.bed.api, loaded.pods, keys)
    agreement = explain_sample(loaded.bed.api, pods, keys, tmp_path)
    FIGURES.append(
        f"scale offline: explain over {agreement.nodes} nodes and {agreement.sampled} of "
        f"{len(loaded.pods)} pods ({agreement.bound} bound, {agreement.unschedulable} "
        f"unschedulable): {agreement.agreed} agree, {agreement.run.seconds:.1f} s, "
        f"peak RSS {agreement.run.peak_rss_mib:.0f} MiB"
    )
    assert agreement.nodes == NODES, "every node is judged"
    assert agreement.sampled == SAMPLE
    assert agreement.bound and agreement.unschedulable, "the sample has both outcomes"
    assert not agreement.disagreements, "\n".join(agreement.disagreements)


def test_audit_reads_every_pod_of_the_cluster_through_the_api_server(
    loaded: Loaded, tmp_path: Path
) -> None:
    audited = audit_cluster(loaded.bed.api, tmp_path, FLEET_CONFIG)
    FIGURES.append(
        f"scale offline: audit of {audited.objects.get('Pod', 0)} pods, {audited.findings} "
        f"results, {audited.run.seconds:.1f} s, peak RSS {audited.run.peak_rss_mib:.0f} MiB"
    )
    assert audited.objects.get("Pod") == len(loaded.pods)
    assert audited.objects.get("Node") == NODES
    assert audited.findings, "the fleet's policy finds what the defaults admitted"
