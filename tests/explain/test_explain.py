"""The ``explain`` model: scheduler filters, NoExecute, and the node lifecycle controller."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest

from tests.reviews import taint, tol
from webhooks.explain.explanation import explain
from webhooks.explain.failure import Rates, failover, parse_duration, simulate, zone_state
from webhooks.explain.fit import fit, no_execute, place
from webhooks.explain.nodes import NOT_READY, UNREACHABLE, InventoryError, Node, parse_node, zone_of
from webhooks.explain.pods import PodView, pod_requests, show_quantity
from webhooks.explain.templates import parse_template

ZONE = "topology.kubernetes.io/zone"


def node_obj(
    name: str,
    *taints: dict[str, str],
    labels: dict[str, str] | None = None,
    ready: str | None = "True",
    allocatable: dict[str, str] | None = None,
    unschedulable: bool = False,
    conditions: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = list(taints)
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {}
    conds = dict(conditions or {})
    if ready is not None:
        conds["Ready"] = ready
    status["conditions"] = [{"type": k, "status": v} for k, v in conds.items()]
    if allocatable is not None:
        status["allocatable"] = allocatable
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": status,
    }


def node(name: str, *taints: dict[str, str], fail: str | None = None, **kw: Any) -> Node:
    return parse_node(node_obj(name, *taints, **kw), fail)  # type: ignore[arg-type]


def pod(daemon: bool = False, **spec: Any) -> PodView:
    spec.setdefault("containers", [{"name": "c", "image": "busybox"}])
    return PodView(subject="Pod default/p", spec=spec, daemon=daemon)


DEFAULTS = [
    tol(NOT_READY, "Exists", effect="NoExecute", seconds=300),
    tol(UNREACHABLE, "Exists", effect="NoExecute", seconds=300),
]


# --- the node inventory -------------------------------------------------------------------


def test_a_node_keeps_its_spec_taints_in_order() -> None:
    n = node("n", taint("a", "NoSchedule", "1"), taint("b", "NoExecute"))
    assert [str(t) for t in n.taints] == ["a=1:NoSchedule", "b:NoExecute"]
    assert all(t.source == "" for t in n.taints)


IMPLIED: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "spec.unschedulable means the unschedulable NoSchedule taint",
        {"unschedulable": True},
        ["node.kubernetes.io/unschedulable:NoSchedule"],
    ),
    (
        "Ready False means the not-ready NoSchedule taint",
        {"ready": "False"},
        [f"{NOT_READY}:NoSchedule"],
    ),
    (
        "Ready Unknown means the unreachable NoSchedule taint",
        {"ready": "Unknown"},
        [f"{UNREACHABLE}:NoSchedule"],
    ),
    (
        "memory pressure means its NoSchedule taint",
        {"conditions": {"MemoryPressure": "True"}},
        ["node.kubernetes.io/memory-pressure:NoSchedule"],
    ),
    (
        "a network-unavailable condition means its NoSchedule taint",
        {"conditions": {"NetworkUnavailable": "True"}},
        ["node.kubernetes.io/network-unavailable:NoSchedule"],
    ),
    ("a node without a Ready condition is taken as Ready", {"ready": None}, []),
    ("a Ready node with no pressure has no implied taint", {}, []),
]


@pytest.mark.parametrize(("kw", "want"), [c[1:] for c in IMPLIED], ids=[c[0] for c in IMPLIED])
def test_the_controller_taints_a_node_for_its_conditions(
    kw: dict[str, Any], want: list[str]
) -> None:
    n = node("n", **kw)
    assert [str(t) for t in n.taints if t.source] == want


def test_an_implied_taint_is_not_added_twice() -> None:
    n = node("n", taint(UNREACHABLE, "NoSchedule"), ready="Unknown")
    assert [str(t) for t in n.taints] == [f"{UNREACHABLE}:NoSchedule"]


@pytest.mark.parametrize(
    ("fail", "ready", "key"),
    [("unreachable", "Unknown", UNREACHABLE), ("not-ready", "False", NOT_READY)],
    ids=["--fail makes a node unreachable by default", "--fail-as not-ready makes Ready False"],
)
def test_a_failed_node(fail: str, ready: str, key: str) -> None:
    n = node("n", fail=fail, conditions={"MemoryPressure": "True"})
    assert n.ready == ready and n.failed
    assert n.controller_taint.key == key and n.controller_taint.effect == "NoExecute"
    implied = [str(t) for t in n.taints if t.source]
    assert f"{key}:NoSchedule" in implied
    # an unreachable node's kubelet conditions go Unknown, so pressure taints go with them
    assert ("node.kubernetes.io/memory-pressure:NoSchedule" in implied) is (fail == "not-ready")


ZONES: list[tuple[str, dict[str, str], str]] = [
    ("no zone label is the one unlabelled zone", {}, ""),
    ("the zone label names the zone", {ZONE: "a"}, "a"),
    ("a region prefixes the zone", {ZONE: "a", "topology.kubernetes.io/region": "r"}, "r/a"),
    (
        "the beta zone label wins when present, as upstream reads it first",
        {ZONE: "a", "failure-domain.beta.kubernetes.io/zone": "b"},
        "b",
    ),
]


@pytest.mark.parametrize(("labels", "want"), [c[1:] for c in ZONES], ids=[c[0] for c in ZONES])
def test_zone_of(labels: dict[str, str], want: str) -> None:
    assert zone_of(labels) == want


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"kind": "Pod", "metadata": {"name": "p"}}, 'not a Node (kind "Pod")'),
        ({"kind": "Node", "metadata": {}}, "without metadata.name"),
        ({"kind": "Node", "metadata": {"name": "n"}, "spec": {"taints": "x"}}, "must be a list"),
        (
            {"kind": "Node", "metadata": {"name": "n"}, "spec": {"taints": [{"key": "a"}]}},
            "needs a key and an effect",
        ),
        (
            {"kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "x"}}},
            "node n: status.allocatable",
        ),
    ],
    ids=[
        "a Pod is not a node",
        "a node needs a name",
        "taints must be a list",
        "a taint needs an effect",
        "allocatable must hold quantities",
    ],
)
def test_unusable_inventory_entries(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(InventoryError, match=re.escape(message)):
        parse_node(obj)


# --- scheduler matching -------------------------------------------------------------------


TAINTS: list[tuple[str, dict[str, str], list[dict[str, Any]], bool]] = [
    ("an untolerated NoSchedule taint keeps the pod off", taint("a", "NoSchedule"), [], False),
    ("an untolerated NoExecute taint keeps the pod off", taint("a", "NoExecute"), [], False),
    ("an untolerated PreferNoSchedule taint does not", taint("a", "PreferNoSchedule"), [], True),
    (
        "Equal compares values",
        taint("a", "NoSchedule", "1"),
        [tol("a", value="1", effect="NoSchedule")],
        True,
    ),
    (
        "Equal with another value does not tolerate",
        taint("a", "NoSchedule", "1"),
        [tol("a", "Equal", "2", "NoSchedule")],
        False,
    ),
    (
        "Exists ignores the value",
        taint("a", "NoSchedule", "1"),
        [tol("a", "Exists", effect="NoSchedule")],
        True,
    ),
    (
        "an empty effect matches every effect",
        taint("a", "NoExecute", "1"),
        [tol("a", value="1")],
        True,
    ),
    (
        "an empty key with Exists matches every key",
        taint("z", "NoSchedule", "9"),
        [tol(operator="Exists")],
        True,
    ),
    (
        "another effect does not tolerate",
        taint("a", "NoSchedule"),
        [tol("a", "Exists", effect="NoExecute")],
        False,
    ),
    (
        "another key does not tolerate",
        taint("a", "NoSchedule"),
        [tol("b", "Exists", effect="NoSchedule")],
        False,
    ),
    (
        "an unknown operator tolerates nothing",
        taint("a", "NoSchedule"),
        [tol("a", "Lt", effect="NoSchedule")],
        False,
    ),
]


@pytest.mark.parametrize(("t", "tols", "fits"), [c[1:] for c in TAINTS], ids=[c[0] for c in TAINTS])
def test_taints_filter_like_the_scheduler(
    t: dict[str, str], tols: list[dict[str, Any]], fits: bool
) -> None:
    result = fit(pod(tolerations=tols), node("n", t))
    assert result.fits is fits
    if not fits:
        assert [u.rule for u in result.unmet] == ["taint"]


def test_every_untolerated_taint_is_reported() -> None:
    n = node("n", taint("a", "NoSchedule"), taint("b", "NoExecute"), taint("c", "NoSchedule"))
    result = fit(pod(tolerations=[tol("b", "Exists")]), n)
    assert [u.message for u in result.unmet] == [
        "taint a:NoSchedule is not tolerated",
        "taint c:NoSchedule is not tolerated",
    ]


def test_a_prefer_no_schedule_taint_makes_a_poor_choice_not_a_refusal() -> None:
    result = fit(pod(), node("n", taint("spot", "PreferNoSchedule", "true")))
    assert result.fits
    assert result.prefer_no_schedule == ("spot=true:PreferNoSchedule",)


def test_the_taint_docs_example_keeps_a_running_pod_but_schedules_no_new_one() -> None:
    n = node(
        "node1",
        taint("key1", "NoSchedule", "value1"),
        taint("key1", "NoExecute", "value1"),
        taint("key2", "NoSchedule", "value1"),
    )
    p = pod(
        tolerations=[
            tol("key1", "Equal", "value1", "NoSchedule"),
            tol("key1", "Equal", "value1", "NoExecute"),
        ]
    )
    result = fit(p, n)
    assert not result.fits
    assert [u.message for u in result.unmet] == ["taint key2=value1:NoSchedule is not tolerated"]
    assert result.no_execute.outcome == "never"


def test_an_admitted_toleration_is_marked_as_added_by_admission() -> None:
    t = tol("nvidia.com/gpu", "Exists", effect="NoSchedule")
    p = PodView(
        "Pod p",
        {"tolerations": [t]},
        added=frozenset({(("nvidia.com/gpu", "Exists", "", "NoSchedule"), None)}),
    )
    result = fit(p, node("g", taint("nvidia.com/gpu", "NoSchedule", "present")))
    assert [(x.taint, x.added) for x in result.tolerated] == [
        ("nvidia.com/gpu=present:NoSchedule", True)
    ]


# --- NoExecute ----------------------------------------------------------------------------


NOEXEC: list[tuple[str, list[dict[str, str]], list[dict[str, Any]], str, int | None]] = [
    ("no NoExecute taint means nothing to forecast", [taint("a", "NoSchedule")], [], "none", None),
    ("an untolerated NoExecute taint evicts at once", [taint("a", "NoExecute")], [], "at-once", 0),
    (
        "a toleration without seconds keeps the pod forever",
        [taint("a", "NoExecute")],
        [tol("a", "Exists", effect="NoExecute")],
        "never",
        None,
    ),
    (
        "tolerationSeconds delays the eviction",
        [taint("a", "NoExecute")],
        [tol("a", "Exists", effect="NoExecute", seconds=60)],
        "after",
        60,
    ),
    (
        "zero seconds evicts at once",
        [taint("a", "NoExecute")],
        [tol("a", "Exists", effect="NoExecute", seconds=0)],
        "at-once",
        0,
    ),
    (
        "negative seconds evict at once",
        [taint("a", "NoExecute")],
        [tol("a", "Exists", effect="NoExecute", seconds=-5)],
        "at-once",
        0,
    ),
    (
        "the smallest seconds of the tolerations used wins",
        [taint("a", "NoExecute"), taint("b", "NoExecute")],
        [tol("a", "Exists", seconds=600), tol("b", "Exists", seconds=60)],
        "after",
        60,
    ),
    (
        "a forever toleration does not outlast another taint's seconds",
        [taint("a", "NoExecute"), taint("b", "NoExecute")],
        [tol("a", "Exists"), tol("b", "Exists", seconds=60)],
        "after",
        60,
    ),
    (
        "one untolerated NoExecute taint evicts at once whatever else is tolerated",
        [taint("a", "NoExecute"), taint("b", "NoExecute")],
        [tol("a", "Exists")],
        "at-once",
        0,
    ),
    (
        "only the first toleration matching a taint is used",
        [taint("a", "NoExecute")],
        [tol("a", "Exists"), tol("a", "Exists", seconds=5)],
        "never",
        None,
    ),
    (
        "so a timed first match wins over a later forever one",
        [taint("a", "NoExecute")],
        [tol("a", "Exists", seconds=5), tol(operator="Exists")],
        "after",
        5,
    ),
]


@pytest.mark.parametrize(
    ("taints", "tols", "outcome", "seconds"), [c[1:] for c in NOEXEC], ids=[c[0] for c in NOEXEC]
)
def test_no_execute_follows_the_taint_eviction_controller(
    taints: list[dict[str, str]], tols: list[dict[str, Any]], outcome: str, seconds: int | None
) -> None:
    n = node("n", *taints)
    verdict = no_execute(tols, n.taints)
    assert (verdict.outcome, verdict.seconds) == (outcome, seconds)


# --- nodeSelector, affinity, nodeName, resources -----------------------------------------


def required(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
            }
        }
    }


def ex(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


AFFINITY: list[tuple[str, dict[str, Any], dict[str, str], list[str]]] = [
    (
        "nodeSelector needs every pair",
        {"nodeSelector": {"disk": "ssd", "arch": "arm64"}},
        {"disk": "ssd"},
        ["nodeSelector arch=arm64: the node has no label arch"],
    ),
    (
        "nodeSelector names the value the node has",
        {"nodeSelector": {"disk": "ssd"}},
        {"disk": "hdd"},
        ["nodeSelector disk=ssd: the node has disk=hdd"],
    ),
    (
        "In",
        {"affinity": required([ex("zone", "In", "a", "b")])},
        {"zone": "c"},
        ["zone In [a, b]: the node has zone=c"],
    ),
    (
        "NotIn",
        {"affinity": required([ex("zone", "NotIn", "c")])},
        {"zone": "c"},
        ["zone NotIn [c]: the node has zone=c"],
    ),
    (
        "Exists",
        {"affinity": required([ex("gpu", "Exists")])},
        {},
        ["gpu Exists: the node has no label gpu"],
    ),
    (
        "DoesNotExist",
        {"affinity": required([ex("spot", "DoesNotExist")])},
        {"spot": "true"},
        ["spot DoesNotExist: the node has spot=true"],
    ),
    (
        "Gt",
        {"affinity": required([ex("cores", "Gt", "8")])},
        {"cores": "8"},
        ["cores Gt 8: the node has cores=8"],
    ),
    (
        "Lt on a label that is not a number",
        {"affinity": required([ex("cores", "Lt", "8")])},
        {"cores": "many"},
        ["cores Lt 8: the node's cores=many is not an integer"],
    ),
    (
        "expressions in a term are ANDed",
        {"affinity": required([ex("a", "Exists"), ex("b", "Exists")])},
        {"a": "1"},
        ["b Exists: the node has no label b"],
    ),
    (
        "terms are ORed: one matching term is enough",
        {"affinity": required([ex("a", "Exists")], [ex("b", "Exists")])},
        {"b": "1"},
        [],
    ),
    (
        "when no term matches, the closest term is reported",
        {"affinity": required([ex("a", "Exists"), ex("b", "Exists")], [ex("c", "Exists")])},
        {},
        ["term 1 of 2 (closest): c Exists: the node has no label c"],
    ),
    (
        "a required affinity without terms matches no node",
        {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}},
        {},
        ["required node affinity has no terms: no node"],
    ),
]


@pytest.mark.parametrize(
    ("spec", "labels", "want"), [c[1:] for c in AFFINITY], ids=[c[0] for c in AFFINITY]
)
def test_node_selector_and_required_affinity(
    spec: dict[str, Any], labels: dict[str, str], want: list[str]
) -> None:
    result = fit(pod(**spec), node("n", labels=labels))
    assert [u.message for u in result.unmet] == want


def test_node_name_pins_the_pod_and_bypasses_no_schedule_taints() -> None:
    p = pod(nodeName="n2")
    assert [u.rule for u in fit(p, node("n1")).unmet] == ["nodeName"]
    pinned = fit(p, node("n2", taint("a", "NoSchedule"), taint("b", "NoExecute")))
    assert pinned.ignored == ("a:NoSchedule",)
    assert [u.message for u in pinned.unmet] == ["taint b:NoExecute is not tolerated"]


def test_resources_are_compared_with_allocatable() -> None:
    p = pod(
        containers=[
            {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "2", "cpu": "500m"}}}
        ]
    )
    assert fit(p, node("cpu", allocatable={"cpu": "4"})).unmet[0].message == (
        "requests nvidia.com/gpu 2, the node has 0 allocatable"
    )
    assert fit(p, node("gpu", allocatable={"cpu": "4", "nvidia.com/gpu": "2"})).fits
    assert fit(p, node("unknown")).fits  # no status.allocatable: not checked


@pytest.mark.parametrize(
    ("allocatable", "unmet"),
    [
        ({"cpu": "4", "pods": "0"}, ["requests pods 1, the node has 0 allocatable"]),
        ({"cpu": "4", "pods": "1"}, []),
        ({"cpu": "4"}, []),
    ],
    ids=[
        "a node that allows no pods fits none, whatever else it has",
        "a node with room for one pod fits it",
        "an inventory that does not list pods leaves the count unchecked",
    ],
)
def test_the_pod_takes_one_of_the_nodes_allocatable_pods(
    allocatable: dict[str, str], unmet: list[str]
) -> None:
    p = pod(containers=[{"name": "c"}])
    assert [u.message for u in fit(p, node("n", allocatable=allocatable)).unmet] == unmet
    group = parse_template(node_obj("ng", allocatable=allocatable))
    assert [u.message for u in fit(p, group).unmet] == [
        m.replace("the node has", "the group's nodes have") for m in unmet
    ]


def test_effective_requests_count_init_containers_sidecars_and_overhead() -> None:
    spec = {
        "containers": [
            {"resources": {"requests": {"cpu": "1"}}},
            {"resources": {"requests": {"cpu": "1"}}},
        ],
        "initContainers": [
            {"restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
            {"resources": {"requests": {"cpu": "3", "memory": "1Gi"}}},
        ],
        "overhead": {"cpu": "250m"},
    }
    # app 2 + sidecar 0.5 = 2.5; the init container runs with the sidecar: 3.5; plus overhead
    assert pod_requests(spec) == {"cpu": Decimal("3.75"), "memory": Decimal(2**30)}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {
                "resources": {"requests": {"cpu": "3"}},
                "containers": [{"resources": {"requests": {"cpu": "10m", "memory": "1Gi"}}}],
            },
            {"cpu": Decimal(3), "memory": Decimal(2**30)},
        ),
        (
            {
                "resources": {"requests": {"memory": "6Gi", "hugepages-2Mi": "4Mi"}},
                "containers": [{"resources": {"requests": {"memory": "1Mi"}}}],
                "overhead": {"memory": "64Mi"},
            },
            {"memory": Decimal(6 * 2**30 + 64 * 2**20), "hugepages-2Mi": Decimal(4 * 2**20)},
        ),
        (
            {
                "resources": {"requests": {"cpu": "2"}},
                "initContainers": [{"resources": {"requests": {"cpu": "3"}}}],
                "containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}],
            },
            {"cpu": Decimal(2), "nvidia.com/gpu": Decimal(1)},
        ),
    ],
    ids=[
        "a pod-level CPU request replaces the containers' CPU, their memory stays",
        "pod-level memory and huge pages, then the overhead on top",
        "the pod level outranks an init container; an extended resource stays the containers'",
    ],
)
def test_pod_level_requests_replace_the_containers_for_what_they_name(
    spec: dict[str, Any], expected: dict[str, Decimal]
) -> None:
    assert pod_requests(spec) == expected


@pytest.mark.parametrize(
    ("name", "amount", "text"),
    [
        ("cpu", Decimal("0.5"), "500m"),
        ("cpu", Decimal(8), "8"),
        ("memory", Decimal(32 * 2**30), "32Gi"),
        ("memory", Decimal(1000), "1000"),
        ("nvidia.com/gpu", Decimal(2), "2"),
    ],
    ids=[
        "fractional CPU in millicores",
        "whole CPUs",
        "memory in binary units",
        "memory that is no whole unit",
        "extended resources as counts",
    ],
)
def test_show_quantity(name: str, amount: Decimal, text: str) -> None:
    assert show_quantity(name, amount) == text


def test_a_pod_that_fits_no_node_reports_the_closest() -> None:
    nodes = [
        node("a", taint("x", "NoSchedule"), taint("y", "NoSchedule")),
        node("b", taint("x", "NoSchedule"), labels={"disk": "ssd"}),
        node("c", taint("x", "NoSchedule")),
    ]
    placement = place(pod(nodeSelector={"disk": "ssd"}), nodes)
    assert placement.nodes == []
    assert placement.closest is not None and placement.closest.name == "b"
    assert [u.message for u in placement.closest.unmet] == ["taint x:NoSchedule is not tolerated"]


def test_the_exit_code_fails_a_pod_that_fits_nowhere_or_is_denied() -> None:
    nodes = [node("n", taint("x", "NoSchedule"))]
    assert explain(nodes, [pod()], Rates()).exit_code == 1
    assert explain(nodes, [pod(tolerations=[tol("x", "Exists")])], Rates()).exit_code == 0
    denied = PodView("Pod p", {"tolerations": [tol(operator="Exists")]}, denied=("x: no",))
    assert explain(nodes, [denied], Rates()).exit_code == 1


# --- the node lifecycle controller --------------------------------------------------------


STATES: list[tuple[str, int, int, float, str]] = [
    ("no node Ready is FullDisruption", 3, 3, 0.55, "FullDisruption"),
    ("a single node down is FullDisruption", 1, 1, 0.55, "FullDisruption"),
    ("3 of 4 not Ready is PartialDisruption", 3, 4, 0.55, "PartialDisruption"),
    ("2 not Ready is never PartialDisruption", 2, 3, 0.55, "Normal"),
    ("below the threshold is Normal", 3, 10, 0.55, "Normal"),
    ("exactly the threshold is PartialDisruption", 11, 20, 0.55, "PartialDisruption"),
    (
        "the share is compared in float32 as upstream does (1/3 rounds up to the threshold)",
        3,
        9,
        0.33333334,
        "PartialDisruption",
    ),
    ("a threshold of 1 leaves a zone with one Ready node Normal", 3, 4, 1.0, "Normal"),
]


@pytest.mark.parametrize(
    ("down", "size", "threshold", "want"), [c[1:] for c in STATES], ids=[c[0] for c in STATES]
)
def test_zone_state(down: int, size: int, threshold: float, want: str) -> None:
    assert zone_state(down, size, threshold) == want


def cluster(n: int, down: int, zone: str = "", **kw: Any) -> list[Node]:
    labels = {ZONE: zone} if zone else {}
    return [
        node(f"{zone or 'w'}-{i}", labels=labels, fail="unreachable" if i < down else None, **kw)
        for i in range(n)
    ]


def test_all_ready_means_no_simulation() -> None:
    assert simulate(cluster(3, 0), [], Rates()) is None


def test_the_small_cluster_partial_disruption_trap_stops_evictions() -> None:
    sim = simulate(cluster(4, 3), [pod(tolerations=DEFAULTS)], Rates())
    assert sim is not None
    (zone,) = sim.zones
    assert (zone.state, zone.rate, zone.stopped) == ("PartialDisruption", 0.0, True)
    assert [t.at for t in sim.taints] == [None, None, None]
    assert {(e.node, e.at) for e in sim.evictions} == {("w-0", None), ("w-1", None), ("w-2", None)}
    (warning,) = sim.warnings
    assert "evictions stop" in warning and "at most 50 nodes" in warning
    assert "--unhealthy-zone-threshold" in warning and "--large-cluster-size-threshold" in warning


def test_a_large_partially_disrupted_zone_uses_the_secondary_rate() -> None:
    sim = simulate(cluster(60, 40), [], Rates())
    assert sim is not None
    (zone,) = sim.zones
    assert (zone.state, zone.rate) == ("PartialDisruption", 0.01)
    assert [t.at for t in sim.taints][:3] == [50.0, 150.0, 250.0]
    assert sim.warnings == ()


def test_a_secondary_rate_of_zero_stops_a_large_zone_and_names_its_flag() -> None:
    sim = simulate(cluster(60, 40), [], Rates(secondary_node_eviction_rate=0))
    assert sim is not None and "--secondary-node-eviction-rate" in sim.warnings[0]


def test_a_normal_zone_taints_nodes_at_the_normal_rate_and_pods_go_after_their_seconds() -> None:
    sim = simulate(cluster(10, 3), [pod(tolerations=DEFAULTS)], Rates())
    assert sim is not None
    assert sim.zones[0].state == "Normal"
    assert [(t.node, t.at) for t in sim.taints] == [("w-0", 50.0), ("w-1", 60.0), ("w-2", 70.0)]
    assert [(e.node, e.at) for e in sim.evictions] == [
        ("w-0", 350.0),
        ("w-1", 360.0),
        ("w-2", 370.0),
    ]


def test_a_pod_tolerating_unreachable_for_6000_seconds() -> None:
    tols = [tol(UNREACHABLE, "Exists", effect="NoExecute", seconds=6000), DEFAULTS[0]]
    sim = simulate(cluster(10, 1), [pod(tolerations=tols)], Rates())
    assert sim is not None
    (eviction,) = sim.evictions
    assert (eviction.at, eviction.verdict.outcome, eviction.verdict.seconds) == (
        6050.0,
        "after",
        6000,
    )
    # the same pod on a node that reports Ready False is gone after 50 s + the not-ready 300 s
    sim = simulate(
        [node("n", fail="not-ready"), node("m"), node("o")], [pod(tolerations=tols)], Rates()
    )
    assert sim is not None and sim.evictions[0].at == 350.0


def test_daemonset_pods_are_never_evicted() -> None:
    forever = [
        tol(NOT_READY, "Exists", effect="NoExecute"),
        tol(UNREACHABLE, "Exists", effect="NoExecute"),
    ]
    sim = simulate(cluster(10, 2), [pod(daemon=True, tolerations=forever)], Rates())
    assert sim is not None
    assert [(e.at, e.verdict.outcome, e.daemon) for e in sim.evictions] == [
        (None, "never", True),
        (None, "never", True),
    ]


def test_a_fully_disrupted_zone_keeps_the_normal_rate_while_another_zone_is_up() -> None:
    nodes = cluster(2, 2, "a") + cluster(2, 0, "b")
    sim = simulate(nodes, [], Rates())
    assert sim is not None
    assert [(z.name, z.state, z.rate) for z in sim.zones] == [
        ("a", "FullDisruption", 0.1),
        ("b", "Normal", 0.1),
    ]
    assert [t.at for t in sim.taints] == [50.0, 60.0]


def test_when_every_zone_is_fully_disrupted_all_evictions_stop_and_taints_are_removed() -> None:
    nodes = cluster(2, 2, "a") + cluster(1, 1, "b")
    nodes[0] = parse_node(
        node_obj("a-0", taint(UNREACHABLE, "NoExecute"), labels={ZONE: "a"}), "unreachable"
    )
    sim = simulate(nodes, [pod(tolerations=DEFAULTS)], Rates())
    assert sim is not None and sim.all_fully_disrupted
    assert all(z.stopped for z in sim.zones)
    assert [(t.node, t.at, t.removed) for t in sim.taints] == [
        ("a-0", None, True),
        ("a-1", None, False),
        ("b-0", None, False),
    ]
    assert all(e.at is None for e in sim.evictions)
    assert "every zone is FullDisruption" in sim.warnings[0]


def test_excluded_nodes_do_not_count_towards_zone_health() -> None:
    excluded = {"node.kubernetes.io/exclude-disruption": ""}
    nodes = [parse_node(node_obj(f"x-{i}", labels=excluded), "unreachable") for i in range(3)]
    sim = simulate([*nodes, node("ok")], [], Rates())
    assert sim is not None
    (zone,) = sim.zones
    # without the label, 3 of 4 down would be PartialDisruption and stop evictions
    assert (zone.counted, zone.not_ready, zone.state) == (1, 0, "Normal")
    assert [t.at for t in sim.taints] == [50.0, 60.0, 70.0]  # excluded nodes are still tainted


def test_a_control_plane_node_counts_like_any_other() -> None:
    cp = node(
        "cp",
        taint("node-role.kubernetes.io/control-plane", "NoSchedule"),
        labels={"node-role.kubernetes.io/control-plane": ""},
    )
    sim = simulate([cp, *cluster(3, 3)], [], Rates())
    assert sim is not None and cp.control_plane
    assert (sim.zones[0].counted, sim.zones[0].state) == (4, "PartialDisruption")


def test_a_node_already_tainted_is_not_queued_again() -> None:
    tainted = parse_node(node_obj("t", taint(NOT_READY, "NoExecute")), "unreachable")
    sim = simulate([tainted, *cluster(9, 1)], [], Rates())
    assert sim is not None
    # the taint is swapped to unreachable at once; the other failed node takes the first token
    assert [(t.node, t.taint.key, t.at, t.already) for t in sim.taints] == [
        ("t", UNREACHABLE, 0.0, True),
        ("w-0", UNREACHABLE, 50.0, False),
    ]


def test_pods_pinned_by_node_name_are_only_on_their_node() -> None:
    sim = simulate(cluster(10, 2), [pod(nodeName="w-1", tolerations=DEFAULTS)], Rates())
    assert sim is not None
    assert [(e.node, e.at) for e in sim.evictions] == [("w-1", 360.0)]


def test_pods_that_could_not_run_on_a_failed_node_are_not_evicted_from_it() -> None:
    nodes = [
        parse_node(node_obj("gpu", taint("nvidia.com/gpu", "NoSchedule")), "unreachable"),
        *cluster(3, 0),
    ]
    sim = simulate(nodes, [pod(tolerations=DEFAULTS)], Rates())
    assert sim is not None and sim.evictions == ()


def test_on_a_tie_the_closest_node_is_one_the_manifest_can_fix() -> None:
    gpu = {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}
    nodes = [
        node("cpu", allocatable={"cpu": "8"}),
        node("gpu", taint("nvidia.com/gpu", "NoSchedule"), allocatable={"nvidia.com/gpu": "4"}),
    ]
    closest = place(pod(**gpu), nodes).closest
    assert closest is not None and closest.name == "gpu"


# --- failover time --------------------------------------------------------------------------

FAILOVER: list[tuple[str, list[dict[str, Any]], float, list[tuple[str, float | None]]]] = [
    (
        "the in-tree defaults fail over after 50 s + 300 s for both taints",
        DEFAULTS,
        50.0,
        [("after", 350.0), ("after", 350.0)],
    ),
    (
        "a 30 s not-ready toleration fails over after 80 s",
        [tol(NOT_READY, "Exists", effect="NoExecute", seconds=30), DEFAULTS[1]],
        50.0,
        [("after", 80.0), ("after", 350.0)],
    ),
    (
        "a grace period of 40 s, as before v1.32, gives 70 s",
        [tol(NOT_READY, "Exists", effect="NoExecute", seconds=30)],
        40.0,
        [("after", 70.0), ("at-once", 40.0)],
    ),
    (
        "no toleration means eviction as soon as the node is marked",
        [],
        50.0,
        [("at-once", 50.0), ("at-once", 50.0)],
    ),
    (
        "zero or negative seconds evict as soon as the node is marked",
        [
            tol(NOT_READY, "Exists", effect="NoExecute", seconds=0),
            tol(UNREACHABLE, "Exists", effect="NoExecute", seconds=-5),
        ],
        50.0,
        [("at-once", 50.0), ("at-once", 50.0)],
    ),
    (
        "a toleration without seconds never evicts, as DaemonSet pods",
        [tol(NOT_READY, "Exists", effect="NoExecute"), tol(UNREACHABLE, "Exists")],
        50.0,
        [("never", None), ("never", None)],
    ),
    (
        "the first matching toleration is the one used, as the taint manager uses it",
        [tol(operator="Exists"), tol(NOT_READY, "Exists", effect="NoExecute", seconds=30)],
        50.0,
        [("never", None), ("never", None)],
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "grace", "want"),
    [c[1:] for c in FAILOVER],
    ids=[c[0] for c in FAILOVER],
)
def test_failover_is_the_grace_period_plus_the_tolerations_seconds(
    tolerations: list[dict[str, Any]], grace: float, want: list[tuple[str, float | None]]
) -> None:
    found = failover(pod(tolerations=tolerations), grace)
    assert [f.taint for f in found] == [f"{NOT_READY}:NoExecute", f"{UNREACHABLE}:NoExecute"]
    assert [(f.outcome, f.seconds) for f in found] == want
    assert all(f.grace == grace for f in found)


def test_the_default_grace_period_is_current_upstreams() -> None:
    assert Rates().node_monitor_grace_period == 50.0


DURATIONS: list[tuple[str, float]] = [
    ("50s", 50.0),
    ("40", 40.0),
    ("1m30s", 90.0),
    ("500ms", 0.5),
    ("1h", 3600.0),
    ("1.5m", 90.0),
    ("0", 0.0),
]


@pytest.mark.parametrize(("text", "seconds"), DURATIONS, ids=[t for t, _ in DURATIONS])
def test_a_grace_period_is_read_as_go_writes_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "-5", "5x", "", "inf", "nan", "1m-5s"])
def test_a_grace_period_that_is_not_a_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)
