"""``explain`` with DRA: devices from ResourceSlices, claims allocated as the scheduler
allocates them, DRA-backed extended resources, device taints; Kueue flavors; Gt/Lt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import dra
from tests.command import invoke_cli
from webhooks.explain.allocation import STEPS, Claim, allocate
from webhooks.explain.devices import Device, DeviceInventory, device_count
from webhooks.k8s.claims import ALL, DeviceRequest, MatchAttribute
from webhooks.k8s.devicetaints import DeviceTaint

FIXTURES = Path(__file__).parent.parent / "fixtures" / "dra"
NODES = str(FIXTURES / "nodes.yaml")
JOB = str(FIXTURES / "extended-resource-job.yaml")
TRAINING = str(FIXTURES / "training-job.yaml")
DEVICE_CLAIMS = str(FIXTURES / "device-claims.yaml")
FLAVORS = str(FIXTURES / "kueue-flavors.yaml")


def explain(*args: str) -> tuple[int, dict[str, Any]]:
    result = invoke_cli(["explain", "-o", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.output)


def write(tmp_path: Path, name: str, *objects: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects), encoding="utf-8")
    return str(path)


# --- the done-when runs ----------------------------------------------------------------------


def test_a_pod_requesting_the_extended_resource_goes_where_the_slice_has_a_device() -> None:
    code, out = explain("--nodes", NODES, JOB)
    assert code == 0
    pod = out["pods"][0]
    assert pod["fits"] == ["gpu-1"]
    gpu = next(n for n in pod["nodes"] if n["node"] == "gpu-1")
    assert gpu["devices"] == [
        {
            "claim": "extended resources backed by DRA",
            "request": dra.GPU,
            "driver": dra.GPU_DRIVER,
            "pool": "gpu-1",
            "device": "gpu-0",
        }
    ]


def test_an_untolerated_device_taint_fits_none_and_a_noexecute_one_evicts(tmp_path: Path) -> None:
    rule = dra.device_taint_rule(
        "gpu-0-ecc", "gpu.example.com/ecc", "NoExecute", value="uncorrectable", device="gpu-0"
    )
    code, out = explain("--nodes", NODES, "--nodes", write(tmp_path, "rule.yaml", rule), JOB)
    assert code == 1
    pod = out["pods"][0]
    assert pod["fits"] == []
    gpu = next(n for n in pod["nodes"] if n["node"] == "gpu-1")
    assert any("gpu.example.com/ecc=uncorrectable:NoExecute" in u["message"] for u in gpu["unmet"])
    assert gpu["deviceEvictions"] == [
        {
            "device": "gpu.example.com/gpu-1/gpu-0",
            "taint": "gpu.example.com/ecc=uncorrectable:NoExecute",
            "source": "DeviceTaintRule gpu-0-ecc",
            "outcome": "at-once",
            "seconds": 0,
            "reason": "the request does not tolerate it with effect NoExecute",
        }
    ]


def test_the_eviction_is_in_the_text_failover_view(tmp_path: Path) -> None:
    rule = dra.device_taint_rule("r", "gpu.example.com/ecc", "NoExecute", device="gpu-0")
    result = invoke_cli(
        ["explain", "--nodes", NODES, "--nodes", write(tmp_path, "r.yaml", rule), JOB]
    )
    assert (
        "    device taint on gpu-1: device gpu.example.com/gpu-1/gpu-0 has "
        "gpu.example.com/ecc:NoExecute: a running pod is evicted at once" in result.output
    )


def test_kueue_flavors_and_a_nodepool_are_read_in_one_run() -> None:
    code, out = explain("--nodes", NODES, "--node-templates", FLAVORS, TRAINING)
    assert code == 0
    assert [t["kind"] for t in out["templates"]] == ["ResourceFlavor", "ResourceFlavor", "NodePool"]
    up = out["pods"][0]["scaleUp"]
    flavors = {t["template"]: t for t in up["templates"]}
    assert flavors["ResourceFlavor gpu-a100"]["fits"]
    assert flavors["ResourceFlavor gpu-a100"]["admittedFitsNodes"] == ["gpu-1"]
    assert [u["rule"] for u in flavors["ResourceFlavor spot"]["unmet"]] == ["kueue"]
    assert up["kueue"]["flavors"] == ["gpu-a100"]


def test_a_claimed_gpu_pod_fits_once_device_claims_add_its_toleration() -> None:
    code, out = explain("--config", DEVICE_CLAIMS, "--nodes", NODES, TRAINING)
    assert code == 0
    assert out["pods"][0]["fits"] == ["gpu-1"]


def test_a_claim_template_missing_from_the_inputs_is_named(tmp_path: Path) -> None:
    job = yaml.safe_load_all((FIXTURES / "training-job.yaml").read_text())
    only_job = write(tmp_path, "job.yaml", list(job)[2])
    code, out = explain("--nodes", NODES, only_job)
    assert code == 1
    messages = [u["message"] for n in out["pods"][0]["nodes"] for u in n["unmet"]]
    assert (
        "claim gpu (ResourceClaimTemplate one-gpu): "
        "ResourceClaimTemplate one-gpu is not among the inputs" in messages
    )


# --- the allocator ---------------------------------------------------------------------------


def dev(name: str, *taints: DeviceTaint, in_use: str = "", **attributes: Any) -> Device:
    attrs = {k: {"string": v} if isinstance(v, str) else {"int": v} for k, v in attributes.items()}
    return Device(dra.GPU_DRIVER, "node-1", name, attrs, {}, tuple(taints), in_use)


CLASSES = {
    dra.GPU_CLASS: dra.device_class(selectors=['device.driver == "gpu.example.com"']),
    "a100.example.com": dra.device_class(
        "a100.example.com", selectors=['device.attributes["gpu.example.com"].model == "A100"']
    ),
}
BROKEN = DeviceTaint("gpu.example.com/broken", "", "NoSchedule")


def want(*requests: DeviceRequest, constraints: tuple[MatchAttribute, ...] = ()) -> Claim:
    return Claim("claim c", tuple((r.name, (r,)) for r in requests), constraints)


def req(name: str = "gpu", device_class: str = dra.GPU_CLASS, **kw: Any) -> DeviceRequest:
    return DeviceRequest(name, device_class, **kw)


ALLOCATIONS: list[tuple[str, list[Claim], list[Device], list[str]]] = [
    ("one device for one request", [want(req())], [dev("g0")], ["g0"]),
    (
        "two requests take two devices",
        [want(req("a"), req("b"))],
        [dev("g0"), dev("g1")],
        ["g0", "g1"],
    ),
    (
        "a count takes that many",
        [want(req(count=2))],
        [dev("g0"), dev("g1"), dev("g2")],
        ["g0", "g1"],
    ),
    (
        "All takes every matching device",
        [want(req(mode=ALL))],
        [dev("g0"), dev("g1")],
        ["g0", "g1"],
    ),
    ("a device in use is skipped", [want(req())], [dev("g0", in_use="team/x"), dev("g1")], ["g1"]),
    ("a tainted device is skipped", [want(req())], [dev("g0", BROKEN), dev("g1")], ["g1"]),
    (
        "a tolerated taint does not stop it",
        [want(req(tolerations=({"key": BROKEN.key, "operator": "Exists"},)))],
        [dev("g0", BROKEN)],
        ["g0"],
    ),
    (
        "the class selector picks the model",
        [want(req(device_class="a100.example.com"))],
        [dev("g0", model="H100"), dev("g1", model="A100")],
        ["g1"],
    ),
    (
        "backtracking gives the narrow request the only device it can take",
        [want(req("any"), req("a100", device_class="a100.example.com"))],
        [dev("g0", model="A100"), dev("g1", model="H100")],
        ["g1", "g0"],
    ),
    (
        "matchAttribute makes the devices agree",
        [
            want(
                req("a"),
                req("b"),
                constraints=(MatchAttribute(("a", "b"), "gpu.example.com/numa"),),
            )
        ],
        [dev("g0", numa=0), dev("g1", numa=1), dev("g2", numa=0)],
        ["g0", "g2"],
    ),
]


@pytest.mark.parametrize(
    ("claims", "devices", "chosen"), [c[1:] for c in ALLOCATIONS], ids=[c[0] for c in ALLOCATIONS]
)
def test_allocation_takes_the_first_solution_in_order(
    claims: list[Claim], devices: list[Device], chosen: list[str]
) -> None:
    found = allocate(claims, devices, CLASSES)
    assert found.ok, found.reasons
    assert [c.device.name for c in found.chosen] == chosen


FAILURES: list[tuple[str, list[Claim], list[Device], str]] = [
    (
        "no device at all",
        [want(req())],
        [],
        "needs 1 device of class gpu.example.com: no device on the node matches",
    ),
    (
        "the only device is tainted",
        [want(req())],
        [dev("g0", BROKEN)],
        "g0 has taint gpu.example.com/broken:NoSchedule, not tolerated by the request",
    ),
    (
        "the only device is in use",
        [want(req())],
        [dev("g0", in_use="team/x")],
        "g0 is in use by claim team/x",
    ),
    (
        "a class not given",
        [want(req(device_class="nope.example.com"))],
        [dev("g0")],
        "DeviceClass nope.example.com is not among the inputs",
    ),
    (
        "All with one unusable device",
        [want(req(mode=ALL))],
        [dev("g0"), dev("g1", BROKEN)],
        "needs all devices of class gpu.example.com: 2 match on the node, 1 usable",
    ),
]


@pytest.mark.parametrize(
    ("claims", "devices", "reason"), [c[1:] for c in FAILURES], ids=[c[0] for c in FAILURES]
)
def test_a_failed_allocation_says_what_the_node_lacks(
    claims: list[Claim], devices: list[Device], reason: str
) -> None:
    found = allocate(claims, devices, CLASSES)
    assert not found.ok
    assert any(reason in r for r in found.reasons), found.reasons


def test_a_search_past_its_budget_is_undecided_not_guessed() -> None:
    # 40 requests over 39 devices: every assignment fails, and trying them all would take
    # far longer than the budget allows.
    claims = [want(*(req(f"r{i}") for i in range(40)))]
    found = allocate(claims, [dev(f"g{i}") for i in range(39)], CLASSES)
    assert found.reasons == (f"not decided within {STEPS} allocation steps",)


def test_a_cel_error_stops_the_allocation_with_its_message() -> None:
    classes = {"bad.example.com": dra.device_class("bad.example.com", selectors=["device.nope"])}
    found = allocate([want(req(device_class="bad.example.com"))], [dev("g0")], classes)
    assert found.reasons[0].startswith("class bad.example.com: selector #0 on device")


COUNTS: list[tuple[str, dict[str, Any], int]] = [
    ("one container", {"containers": [{"resources": {"requests": {dra.GPU: "2"}}}]}, 2),
    (
        "containers add up",
        {"containers": [{"resources": {"requests": {dra.GPU: "1"}}}] * 2},
        2,
    ),
    (
        "an init container reuses what the containers after it get",
        {
            "initContainers": [{"resources": {"requests": {dra.GPU: "1"}}}],
            "containers": [{"resources": {"requests": {dra.GPU: "1"}}}],
        },
        1,
    ),
    (
        "an init container asking for more adds the difference",
        {
            "initContainers": [{"resources": {"requests": {dra.GPU: "3"}}}],
            "containers": [{"resources": {"requests": {dra.GPU: "1"}}}],
        },
        3,
    ),
    (
        "a sidecar counts as long-lived",
        {
            "initContainers": [
                {"restartPolicy": "Always", "resources": {"requests": {dra.GPU: "1"}}}
            ],
            "containers": [{"resources": {"requests": {dra.GPU: "1"}}}],
        },
        2,
    ),
    (
        "a fractional request asks for none",
        {"containers": [{"resources": {"requests": {dra.GPU: "500m"}}}]},
        0,
    ),
]


@pytest.mark.parametrize(("spec", "count"), [c[1:] for c in COUNTS], ids=[c[0] for c in COUNTS])
def test_how_many_devices_an_extended_resource_request_takes(
    spec: dict[str, Any], count: int
) -> None:
    assert device_count(spec, dra.GPU) == count


# --- slices reaching nodes -------------------------------------------------------------------

SLICES: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "a node-local slice reaches its node",
        dra.resource_slice("s", dra.device("d"), node="n1"),
        ["n1"],
    ),
    (
        "allNodes reaches every node",
        dra.resource_slice("s", dra.device("d"), all_nodes=True, pool="net"),
        ["n1", "n2"],
    ),
    (
        "a nodeSelector reaches the nodes it selects",
        dra.resource_slice(
            "s", dra.device("d"), node_selector=dra.node_selector(rack="a"), pool="rack-a"
        ),
        ["n1"],
    ),
    (
        "per-device selection reaches each device's node",
        dra.resource_slice("s", dra.device("d", nodeName="n2"), per_device=True, pool="p"),
        ["n2"],
    ),
    (
        "an incomplete pool is not used",
        dra.resource_slice("s", dra.device("d"), node="n1", slices=2),
        [],
    ),
]


@pytest.mark.parametrize(("item", "reached"), [c[1:] for c in SLICES], ids=[c[0] for c in SLICES])
def test_which_nodes_a_slice_reaches(item: dict[str, Any], reached: list[str]) -> None:
    inventory = DeviceInventory()
    inventory.add(item)
    labels = {"n1": {"rack": "a"}, "n2": {"rack": "b"}}
    found = [n for n in ("n1", "n2") if inventory.devices_for(n, labels[n])[0]]
    assert found == reached


def test_an_older_pool_generation_is_ignored() -> None:
    inventory = DeviceInventory()
    inventory.add(dra.resource_slice("old", dra.device("stale"), node="n1", generation=1))
    inventory.add(dra.resource_slice("new", dra.device("fresh"), node="n1", generation=2))
    devices, _ = inventory.devices_for("n1", {})
    assert [d.name for d in devices] == ["fresh"]


# --- Gt/Lt -----------------------------------------------------------------------------------


def test_gt_tolerations_match_only_with_the_feature_gate(tmp_path: Path) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "tier-7"},
        "spec": {"taints": [{"key": "example.com/tier", "value": "7", "effect": "NoSchedule"}]},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "tolerations": [
                {"key": "example.com/tier", "operator": "Gt", "value": "5", "effect": "NoSchedule"}
            ],
        },
    }
    nodes, pods = write(tmp_path, "n.yaml", node), write(tmp_path, "p.yaml", pod)
    gate = "TaintTolerationComparisonOperators=true"
    code, out = explain("--nodes", nodes, "--feature-gates", gate, pods)
    assert (code, out["pods"][0]["fits"]) == (0, ["tier-7"])
    code, out = explain("--nodes", nodes, pods)
    assert code == 1
    assert out["pods"][0]["denied"]  # without the gate admission refuses Gt, as upstream


def test_an_unknown_feature_gate_is_refused() -> None:
    result = invoke_cli(["explain", "--nodes", NODES, "--feature-gates", "Nope=true", JOB])
    assert result.exit_code == 2
    assert "unknown feature gate 'Nope'" in result.output
