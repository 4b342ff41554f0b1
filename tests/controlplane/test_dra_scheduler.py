"""DRA on the real scheduler: it allocates claims from written ResourceSlices, and
``explain`` says where each pod can go before it is made.

No driver runs: DeviceClasses, ResourceSlices, a DeviceTaintRule, ResourceClaimTemplates
and a shared ResourceClaim are written by the test, which is all the scheduler's allocator
reads (``resource.k8s.io/v1``, GA in v1.37; extended resources backed by DRA, KEP-5004, and
device taints with DeviceTaintRules, KEP-5055, are GA and on by default there, so no feature
gate is set). The controller-manager runs the ResourceClaim controller, which makes each
pod's claims from its templates, and the device taint eviction controller.

Every pod is explained against the cluster as it stands just before it is created (so the
devices earlier pods were allocated count as in use, as they do for the scheduler), then
created, then compared with the scheduler's decision: bound to a node explain fits it on,
or unschedulable exactly when explain fits it nowhere, for the same reasons per node. The
pods cover claims through templates of several classes with CEL selectors on attributes,
capacities and versions, ``count``, ``All``, ``firstAvailable`` and ``matchAttribute``,
device taints in a slice and from a DeviceTaintRule (tolerated and not), devices reached
through a node selector and by every node, a ResourceClaim two pods share, and the
extended resource ``example.com/gpu`` served by DRA on nodes that do not list it, beside a
node whose device plugin does.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from controlplane.harness import (
    ControllerManagerOptions,
    ControlPlane,
    ControlPlaneOptions,
    create_namespace,
    create_pods,
    heartbeating,
    node_manifest,
    pod_manifest,
    running,
)
from controlplane.harness.cli import in_process
from controlplane.harness.compare import disagreements
from controlplane.harness.components import DRA_CONTROLLERS
from controlplane.harness.scheduling import decisions
from controlplane.harness.timeline import Timeline
from controlplane.release import RELEASE
from tests import dra
from tests.command import invoke_cli
from tests.controlplane.conftest import FIGURES

NAMESPACE = "dra"
GPU_CLASS, FPGA, NIC, LICENSE = (
    "gpu.example.com",
    "fpga.example.com",
    "nic.example.com",
    "license.example.com",
)

NODES = [
    node_manifest("dra-1", labels={"fabric": "shared"}),
    node_manifest("dra-2"),
    node_manifest("dra-3", labels={"fabric": "shared"}),
    # A device plugin's GPUs, the old way; as many as the pods here ask for, since explain
    # places each pod as if alone on the node (it counts DRA devices in use, not requests).
    node_manifest("dra-4", extended={dra.GPU: "4"}),
    node_manifest("dra-5"),
    node_manifest("plain"),
]


def _gpu(name: str, model: str, memory: str, version: str, **extra: Any) -> dict[str, Any]:
    attributes = {"model": {"string": model}, "driverVersion": {"version": version}}
    return dra.device(name, attributes=attributes, capacity={"memory": memory}, **extra)


def _speed(name: str, gbps: int) -> dict[str, Any]:
    return dra.device(name, attributes={"speed": {"int": gbps}})


SLICES = [
    dra.resource_slice(
        "dra-1-gpus",
        _gpu("gpu-0", "a100", "40Gi", "550.1.0"),
        _gpu("gpu-1", "a100", "40Gi", "550.1.0"),
        _gpu("gpu-2", "t4", "16Gi", "535.2.0"),
        node="dra-1",
    ),
    dra.resource_slice(
        "dra-2-gpus",
        _gpu("gpu-0", "h100", "80Gi", "550.1.0", taints=[dra.taint("maintenance", "NoSchedule")]),
        _gpu("gpu-1", "h100", "80Gi", "550.1.0"),
        node="dra-2",
    ),
    dra.resource_slice(
        "dra-5-gpus",
        _gpu("gpu-0", "l4", "24Gi", "550.1.0"),
        _gpu("gpu-1", "l4", "24Gi", "550.1.0"),
        _gpu("gpu-2", "a10", "24Gi", "535.2.0"),
        node="dra-5",
    ),
    dra.resource_slice(
        "dra-3-fpgas",
        dra.device("fpga-0", attributes={"family": {"string": "agilex"}}),
        node="dra-3",
        driver=FPGA,
    ),
    dra.resource_slice(
        "dra-3-nics", _speed("nic-0", 25), _speed("nic-1", 100), node="dra-3", driver=NIC
    ),
    dra.resource_slice(
        "fabric-nics",
        _speed("nic-x", 100),
        driver=NIC,
        pool="fabric",
        node_selector=dra.node_selector(fabric="shared"),
    ),
    dra.resource_slice(
        "licenses",
        dra.device("license-0"),
        dra.device("license-1"),
        driver=LICENSE,
        pool="licenses",
        all_nodes=True,
    ),
]
RULES = [
    dra.device_taint_rule(
        "degraded-t4", "degraded", "NoSchedule", driver=GPU_CLASS, pool="dra-1", device="gpu-2"
    )
]
CLASSES = [
    dra.device_class(GPU_CLASS, extended=dra.GPU, selectors=[f'device.driver == "{GPU_CLASS}"']),
    dra.device_class(FPGA, selectors=[f'device.driver == "{FPGA}"']),
    dra.device_class(NIC, selectors=[f'device.driver == "{NIC}"']),
    dra.device_class(LICENSE, selectors=[f'device.driver == "{LICENSE}"']),
]
MODEL = f'device.attributes["{GPU_CLASS}"].model'
TEMPLATES = [
    dra.claim_template("one-gpu", dra.exactly("gpu", GPU_CLASS)),
    dra.claim_template(
        "big-gpu",
        dra.exactly(
            "gpu",
            GPU_CLASS,
            selectors=[f'device.capacity["{GPU_CLASS}"].memory.compareTo(quantity("64Gi")) >= 0'],
        ),
    ),
    dra.claim_template(
        "gpu-in-maintenance",
        dra.exactly(
            "gpu",
            GPU_CLASS,
            selectors=[f'{MODEL} == "h100"'],
            tolerations=[{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}],
        ),
    ),
    dra.claim_template(
        "two-of-a-model",
        dra.exactly("gpu", GPU_CLASS, count=2),
        constraints=[{"requests": ["gpu"], "matchAttribute": f"{GPU_CLASS}/model"}],
    ),
    dra.claim_template(
        "all-a100", dra.exactly("gpu", GPU_CLASS, mode="All", selectors=[f'{MODEL} == "a100"'])
    ),
    dra.claim_template(
        "new-driver",
        dra.exactly(
            "gpu",
            GPU_CLASS,
            selectors=[
                f'device.attributes["{GPU_CLASS}"].driverVersion.isGreaterThan(semver("540.0.0"))'
            ],
        ),
    ),
    dra.claim_template("v100", dra.exactly("gpu", GPU_CLASS, selectors=[f'{MODEL} == "v100"'])),
    dra.claim_template("t4", dra.exactly("gpu", GPU_CLASS, selectors=[f'{MODEL} == "t4"'])),
    dra.claim_template(
        "t4-degraded-is-fine",
        dra.exactly(
            "gpu",
            GPU_CLASS,
            selectors=[f'{MODEL} == "t4"'],
            tolerations=[{"key": "degraded", "operator": "Exists"}],
        ),
    ),
    dra.claim_template(
        "fpga-or-gpu", dra.first_available("accel", ("fpga", FPGA), ("gpu", GPU_CLASS))
    ),
    dra.claim_template(
        "fast-nic",
        dra.exactly("nic", NIC, selectors=[f'device.attributes["{NIC}"].speed >= 100']),
    ),
    dra.claim_template("license", dra.exactly("license", LICENSE)),
]
SHARED = dra.resource_claim("shared-fabric", dra.exactly("nic", NIC), namespace=NAMESPACE)


def _claims(name: str, what: str, *templates: str, claim: str = "", **spec: Any) -> dict[str, Any]:
    entries = [{"name": f"c{i}", "resourceClaimTemplateName": t} for i, t in enumerate(templates)]
    if claim:
        entries.append({"name": "shared", "resourceClaimName": claim})
    pod = pod_manifest(name, resourceClaims=entries, terminationGracePeriodSeconds=0, **spec)
    pod["metadata"]["annotations"] = {"corpus/what": what}
    return pod


def _wants(name: str, what: str, resource: str, count: str = "1", **spec: Any) -> dict[str, Any]:
    pod = pod_manifest(name, terminationGracePeriodSeconds=0, **spec)
    pod["spec"]["containers"][0]["resources"] = {
        "requests": {resource: count},
        "limits": {resource: count},
    }
    pod["metadata"]["annotations"] = {"corpus/what": what}
    return pod


#: In the order they are made: each is explained against what the ones before it hold.
PODS = [
    _claims("big-gpu", "a GPU with at least 64Gi (capacity selector)", "big-gpu"),
    _claims("two-of-a-model", "two GPUs of one model (matchAttribute)", "two-of-a-model"),
    _wants(
        "extended-dra-5",
        "example.com/gpu where only DRA serves it",
        dra.GPU,
        nodeSelector={"kubernetes.io/hostname": "dra-5"},
    ),
    _wants(
        "implicit-fpga",
        "the implicit class name of the FPGAs",
        f"deviceclass.resource.kubernetes.io/{FPGA}",
    ),
    _claims("new-driver", "a GPU whose driver is newer than 540 (semver)", "new-driver"),
    _claims(
        "maintenance", "an h100 tolerating the slice's maintenance taint", "gpu-in-maintenance"
    ),
    _claims("all-a100", "every a100 of a node (All)", "all-a100"),
    _claims("one-gpu", "a GPU from a template", "one-gpu"),
    _claims("v100", "a model no slice has", "v100"),
    _claims("t4", "the t4 a DeviceTaintRule taints, untolerated", "t4"),
    _claims("t4-tolerating", "the same t4, tolerating the rule's taint", "t4-degraded-is-fine"),
    _claims("accel-1", "an FPGA, else a GPU (firstAvailable)", "fpga-or-gpu"),
    _claims("accel-2", "an FPGA, else a GPU, once the FPGA is taken", "fpga-or-gpu"),
    _claims("shared-a", "a ResourceClaim two pods share, first", claim="shared-fabric"),
    _claims("shared-b", "the shared ResourceClaim, allocated already", claim="shared-fabric"),
    _wants(
        "implicit-nic-early",
        "a NIC by its class's implicit name",
        f"deviceclass.resource.kubernetes.io/{NIC}",
    ),
    _claims("fast-nic-1", "a 100G NIC, local or on the fabric", "fast-nic"),
    _claims("fast-nic-2", "another 100G NIC", "fast-nic"),
    _claims("fast-nic-3", "a third 100G NIC, when two exist", "fast-nic"),
    _claims("license-1", "a license any node can use (allNodes)", "license"),
    _claims("license-2", "the second license", "license"),
    _claims("license-3", "a third license, when two exist", "license"),
    _claims("gpu-and-license", "a GPU and a license, none left", "one-gpu", "license"),
    _claims(
        "gpu-on-plain",
        "a GPU on a node without devices",
        "one-gpu",
        nodeSelector={"kubernetes.io/hostname": "plain"},
    ),
    _wants("extended-1", "example.com/gpu served by DRA or the device plugin", dra.GPU),
    _wants("extended-2", "example.com/gpu, two of them", dra.GPU, "2"),
    _wants(
        "extended-dra-4",
        "example.com/gpu on the device-plugin node",
        dra.GPU,
        nodeSelector={"kubernetes.io/hostname": "dra-4"},
    ),
    _wants(
        "extended-dra-5-again",
        "example.com/gpu where only DRA serves it, none left",
        dra.GPU,
        nodeSelector={"kubernetes.io/hostname": "dra-5"},
    ),
    _wants(
        "implicit-nic",
        "the implicit class name of the NICs",
        f"deviceclass.resource.kubernetes.io/{NIC}",
    ),
]


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """The control plane with the DRA controllers, the Nodes and every DRA object."""
    options = ControlPlaneOptions(
        controller_manager=ControllerManagerOptions(controllers=DRA_CONTROLLERS)
    )
    with running(options) as started, started.api.client() as api, heartbeating(api, NODES):
        resource = client.ResourceV1Api(api)
        for device_class in CLASSES:
            resource.create_device_class(device_class)
        for found in SLICES:
            resource.create_resource_slice(found)
        # Where DeviceTaintRules are not served by default (before 1.37) there is no rule to
        # write: the cluster runs without, and explain must agree with the scheduler anyway.
        for rule in RULES if RELEASE.device_taint_rules_by_default else ():
            resource.create_device_taint_rule(rule)
        create_namespace(api, NAMESPACE)
        for template in TEMPLATES:
            resource.create_namespaced_resource_claim_template(NAMESPACE, template)
        resource.create_namespaced_resource_claim(NAMESPACE, copy.deepcopy(SHARED))
        yield started


def test_the_api_server_serves_device_taint_rules_with_no_gate_where_the_table_says(
    plane: ControlPlane,
) -> None:
    status, body = plane.api.get("/apis/resource.k8s.io/v1")
    assert status == 200
    served = {r["name"] for r in body["resources"]}
    assert {"deviceclasses", "resourceslices", "resourceclaims"} <= served
    assert ("devicetaintrules" in served) is RELEASE.device_taint_rules_by_default


def test_explain_agrees_with_the_scheduler_on_every_dra_pod(
    plane: ControlPlane, tmp_path: Path
) -> None:
    answers, outcomes, stored = {}, {}, {}
    with plane.api.client() as api:
        for pod in PODS:
            name = pod["metadata"]["name"]
            manifest = tmp_path / f"{name}.yaml"
            manifest.write_text(yaml.safe_dump(pod))
            run = in_process(plane.api, "explain", "-n", NAMESPACE, str(manifest), "-o", "json")
            assert run.code in (0, 1), run.stderr
            (answers[name],) = run.json()["pods"]
            stored.update(create_pods(api, NAMESPACE, [pod]))
            outcomes.update(decisions(api, NAMESPACE, [name]))
    found = disagreements(answers, outcomes, stored)
    bound = sum(o.bound for o in outcomes.values())
    lines = [
        f"  {name}: {'bound to ' + str(o.node) if o.bound else 'unschedulable'}; "
        f"explain fits {answers[name]['fits'] or 'none'}"
        for name, o in outcomes.items()
    ]
    FIGURES.append(
        f"explain vs scheduler with DRA: {len(outcomes)} pods ({bound} bound, "
        f"{len(outcomes) - bound} unschedulable), {len(outcomes) - len(found)} agree\n"
        + "\n".join(lines)
    )
    assert not found, "\n".join(found)
    assert 0 < bound < len(outcomes)


# --- a NoExecute device taint: explain's forecast against the device taint eviction controller

EVICT = "evict.example.com"
DRAIN = "drain"
HELD = {
    "now": [],
    "later": [{"key": DRAIN, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 6}],
    "never": [{"key": DRAIN, "operator": "Exists", "effect": "NoExecute"}],
}


@pytest.mark.skipif(
    not RELEASE.device_taint_rules_by_default,
    reason=f"Kubernetes {RELEASE.name} serves no DeviceTaintRule without a gate "
    f"({RELEASE.gate_state(RELEASE.device_taint_rule_gate)})",
)
def test_a_noexecute_device_taint_evicts_when_explain_forecasts(
    plane: ControlPlane, tmp_path: Path
) -> None:
    """Three pods hold devices through ResourceClaims that tolerate a ``drain`` NoExecute
    taint not at all, for 6 s, and forever. explain is asked what a DeviceTaintRule adding
    that taint would do (the cluster's objects read into files, the rule added there only);
    then the rule is created, and the device taint eviction controller's deletions are
    timed from its creation, each within 2 s of the forecast."""
    namespace = "evict"
    with plane.api.client() as api:
        resource = client.ResourceV1Api(api)
        resource.create_device_class(
            dra.device_class(EVICT, selectors=[f'device.driver == "{EVICT}"'])
        )
        devices = [dra.device(f"dev-{i}") for i in range(3)]
        resource.create_resource_slice(
            dra.resource_slice("plain-evictable", *devices, node="plain", driver=EVICT)
        )
        create_namespace(api, namespace)
        pods = []
        for name, tolerations in HELD.items():
            request = dra.exactly("dev", EVICT, tolerations=tolerations or None)
            claim = dra.resource_claim(f"hold-{name}", request, namespace=namespace)
            resource.create_namespaced_resource_claim(namespace, claim)
            pods.append(
                pod_manifest(
                    f"ev-{name}",
                    resourceClaims=[{"name": "dev", "resourceClaimName": f"hold-{name}"}],
                    terminationGracePeriodSeconds=30,
                )
            )
        create_pods(api, namespace, pods)
        placed = decisions(api, namespace, [p["metadata"]["name"] for p in pods])
        assert {o.node for o in placed.values()} == {"plain"}

        rule = dra.device_taint_rule("drain-plain", DRAIN, "NoExecute", driver=EVICT)
        core = client.CoreV1Api(api)
        listed = [
            ("v1", "Node", core.list_node()),
            (dra.API, "ResourceSlice", resource.list_resource_slice()),
            (dra.API, "DeviceClass", resource.list_device_class()),
            (dra.API, "ResourceClaim", resource.list_namespaced_resource_claim(namespace)),
            (dra.API, "DeviceTaintRule", resource.list_device_taint_rule()),
            ("v1", "Pod", core.list_namespaced_pod(namespace)),
        ]
        # List items come without kind and apiVersion; files must say them.
        cluster = [
            {"apiVersion": version, "kind": kind, **api.sanitize_for_serialization(item)}
            for version, kind, found in listed
            for item in found.items
        ]
        stored = [obj for obj in cluster if obj["kind"] == "Pod"]
        cluster = [obj for obj in cluster if obj["kind"] != "Pod"] + [rule]
        inventory = tmp_path / "what-if.yaml"
        inventory.write_text(yaml.safe_dump_all(cluster))
        manifests = tmp_path / "pods.yaml"
        manifests.write_text(yaml.safe_dump_all(stored))
        answer = invoke_cli(
            ["explain", "--nodes", str(inventory), "-n", namespace, str(manifests), "-o", "json"]
        )
        assert answer.exit_code in (0, 1), answer.stderr
        forecast: dict[str, float | None] = {}
        for found in json.loads(answer.stdout)["pods"]:
            name = found["pod"].rsplit("/", 1)[1]
            (here,) = [f for f in found["nodes"] if f["node"] == "plain"]
            # A taint the claim tolerates forever is no eviction, and is not listed.
            evictions = [e for e in here["deviceEvictions"] if e["outcome"] != "never"]
            forecast[name] = float(evictions[0]["seconds"] or 0) if evictions else None
            assert len(evictions) <= 1, evictions

        timeline = Timeline(api, namespace)
        try:
            time.sleep(1)  # the watch is open before the taint exists
            resource.create_device_taint_rule(rule)
            tainted_at = time.monotonic()
            latest = max((s for s in forecast.values() if s is not None), default=0.0)
            while time.monotonic() < tainted_at + latest + 5:
                time.sleep(0.2)
            seen = {name: timeline.deletion_seen(name) for name in forecast}
        finally:
            timeline.close()
    measured = {n: None if at is None else at - tainted_at for n, at in seen.items()}
    lines = [
        f"  {name}: measured {'never' if measured[name] is None else f'{measured[name]:.1f} s'}, "
        f"forecast {'never' if forecast[name] is None else f'{forecast[name]:.1f} s'}"
        for name in sorted(forecast)
    ]
    FIGURES.append(
        "NoExecute device taint (times from the DeviceTaintRule's creation):\n" + "\n".join(lines)
    )
    assert forecast == {"ev-now": 0.0, "ev-later": 6.0, "ev-never": None}
    wrong = [
        line
        for name, line in zip(sorted(forecast), lines, strict=True)
        if (measured[name] is None) != (forecast[name] is None)
        or (
            measured[name] is not None
            and forecast[name] is not None
            and abs(measured[name] - forecast[name]) > 2.0
        )
    ]
    assert not wrong, "\n".join(lines + timeline.errors)
