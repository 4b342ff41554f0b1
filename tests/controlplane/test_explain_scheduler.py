"""``explain --kubeconfig`` against the real scheduler: the same Nodes, the same pods, the
same answer.

Fourteen written Nodes cover what the scheduler's filters read (allocatable, labels, every
taint effect, a cordon, a node reporting Ready False, a node with no room for pods, an arm64
node, one without ephemeral storage) and a generated corpus of pods combines selectors,
required affinity (every operator, matchFields, several terms), tolerations, requests
(extended, ephemeral, init containers, sidecars, pod-level) and RuntimeClasses with
overhead and scheduling. The API server runs the in-tree plugins our default config stands
for, so explain admits each pod exactly as the cluster did.

Three rounds, each a claim about every pod:

1. the corpus itself, all at once, as a user would see it: the scheduler binds a pod to a
   node explain says it fits, or finds it unschedulable exactly when explain fits it
   nowhere, for the same reasons on the same number of nodes;
2. a twin of every placed pod that may not use the nodes explain named
   (``metadata.name NotIn``): no other node takes it, again for the reasons explain gives;
3. a twin pinned to each node explain named (``metadata.name In``): the scheduler binds it
   there. Rounds 2 and 3 together say that explain's set of nodes is exactly the
   scheduler's.

Resources are sized so that no pod is refused for room other pods took (explain places each
pod alone); round 1 checks that assumption rather than trusting it.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

import pytest
from kubernetes import client

from controlplane.harness import (
    ControlPlane,
    ControlPlaneOptions,
    create_namespace,
    create_pods,
    delete_pods,
    heartbeating,
    node_manifest,
    running,
)
from controlplane.harness.compare import disagreements, explained
from controlplane.harness.modes import apiserver_options
from controlplane.harness.scheduling import decisions
from tests.controlplane.conftest import FIGURES
from webhooks.explain.pods import pod_requests
from webhooks.k8s.quantity import parse_resource_list

SEED = 20
RANDOM_PODS = 180
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
PAUSE = "registry.k8s.io/pause:3.10"


def _node(name: str, zone: str, *, cores: int, **kw: Any) -> dict[str, Any]:
    """A Node labelled with its zone and ``cores`` (for Gt/Lt), roomy unless told otherwise:
    a pod refused for room must be refused for its own request, never for its neighbours'."""
    labels = {ZONE: zone, "cores": str(cores), **kw.pop("labels", {})}
    cpu = kw.pop("cpu", "128")
    memory = kw.pop("memory", "512Gi")
    extended = {"ephemeral-storage": kw.pop("storage", "1Ti"), **kw.pop("extended", {})}
    if extended["ephemeral-storage"] is None:
        del extended["ephemeral-storage"]
    return node_manifest(name, labels=labels, cpu=cpu, memory=memory, extended=extended, **kw)


def _taint(key: str, value: str, effect: str) -> dict[str, str]:
    return (
        {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}
    )


NODES = [
    _node("web-a", "a", cores=16, labels={"tier": "web", "disk": "ssd"}),
    _node("web-b", "b", cores=16, labels={"tier": "web", "disk": "hdd"}),
    _node(
        "batch-small",
        "a",
        cores=2,
        cpu="2",
        memory="4Gi",
        storage="20Gi",
        labels={"tier": "batch", "disk": "hdd"},
    ),
    _node("batch-big", "b", cores=64, labels={"tier": "batch", "disk": "ssd"}),
    _node(
        "gpu",
        "c",
        cores=32,
        labels={"tier": "gpu", "accelerator": "a100"},
        extended={GPU: "4"},
        taints=[_taint(GPU, "present", "NoSchedule")],
    ),
    _node(
        "infra",
        "c",
        cores=8,
        labels={"tier": "infra", "dedicated": "infra"},
        taints=[_taint("dedicated", "infra", "NoExecute")],
    ),
    _node(
        "spot",
        "a",
        cores=8,
        labels={"tier": "web", "lifecycle": "spot"},
        taints=[_taint("spot", "true", "PreferNoSchedule")],
    ),
    _node("cordoned", "b", cores=16, labels={"tier": "web", "disk": "ssd"}, unschedulable=True),
    _node(
        "team-a",
        "c",
        cores=8,
        labels={"tier": "batch", "team": "a"},
        taints=[_taint("team", "a", "NoSchedule"), _taint("maintenance", "", "NoSchedule")],
    ),
    _node("not-ready", "a", cores=16, labels={"tier": "web", "disk": "ssd"}, ready=False),
    _node("full", "b", cores=8, labels={"tier": "batch"}, pods="0"),
    _node("arm", "b", cores=8, labels={"tier": "web", "kubernetes.io/arch": "arm64"}),
    _node(
        "sandbox",
        "a",
        cores=8,
        labels={"sandbox": "gvisor"},
        taints=[_taint("sandbox", "gvisor", "NoSchedule")],
    ),
    _node("no-storage", "c", cores=8, storage=None, labels={"tier": "batch"}),
]
CORDONED = {n["metadata"]["name"] for n in NODES if n["spec"].get("unschedulable")}

RUNTIME_CLASSES = [
    {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "gvisor"},
        "handler": "runsc",
        "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
        "scheduling": {
            "nodeSelector": {"sandbox": "gvisor"},
            "tolerations": [
                {"key": "sandbox", "operator": "Equal", "value": "gvisor", "effect": "NoSchedule"}
            ],
        },
    },
    {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "kata"},
        "handler": "kata",
        "overhead": {"podFixed": {"cpu": "1800m", "memory": "128Mi"}},
    },
]

# --- the corpus ------------------------------------------------------------------------------

SELECTORS: list[dict[str, str] | None] = [
    None,
    None,
    {"tier": "web"},
    {"tier": "batch"},
    {"disk": "ssd"},
    {ZONE: "c"},
    {HOST: "web-b"},
    {"tier": "none"},
    {"kubernetes.io/arch": "arm64"},
    {"tier": "batch", "disk": "ssd"},
]


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    found: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        found["values"] = list(values)
    return found


def _name(operator: str, name: str) -> dict[str, Any]:
    """A ``metadata.name`` field requirement; the API takes exactly one value for it."""
    return {"key": "metadata.name", "operator": operator, "values": [name]}


TERMS: list[list[dict[str, Any]] | None] = [
    None,
    None,
    [{"matchExpressions": [_expr(ZONE, "In", "a", "b")]}],
    [{"matchExpressions": [_expr("tier", "NotIn", "web")]}],
    [{"matchExpressions": [_expr("accelerator", "Exists")]}],
    [{"matchExpressions": [_expr("dedicated", "DoesNotExist")]}],
    [{"matchExpressions": [_expr("cores", "Gt", "8")]}],
    [{"matchExpressions": [_expr("cores", "Lt", "10")]}],
    [
        {"matchExpressions": [_expr("tier", "In", "infra")]},
        {"matchExpressions": [_expr("disk", "In", "ssd")]},
    ],
    [{"matchFields": [_name("In", name)]} for name in ("web-a", "batch-small", "gpu")],
    [{"matchFields": [_name("NotIn", "web-a"), _name("NotIn", "web-b")]}],
    [
        {"matchExpressions": [_expr(ZONE, "In", "c")], "matchFields": [_name("In", name)]}
        for name in ("infra", "team-a", "web-a")
    ],
    [{"matchFields": [_name("In", "web-a"), _name("In", "web-b")]}],
    [{"matchExpressions": [_expr("cores", "Gt", "100")]}],
]


def _tol(key: str, operator: str, value: str = "", effect: str = "", **more: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"operator": operator}
    if key:
        found["key"] = key
    if value:
        found["value"] = value
    if effect:
        found["effect"] = effect
    return {**found, **more}


TOLERATIONS: list[list[dict[str, Any]]] = [
    [],
    [],
    [_tol(GPU, "Exists", effect="NoSchedule")],
    [_tol("dedicated", "Equal", "infra", "NoExecute", tolerationSeconds=600)],
    [_tol("dedicated", "Exists")],
    [_tol("spot", "Equal", "true", "PreferNoSchedule")],
    [_tol("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule")],
    [_tol("node.kubernetes.io/not-ready", "Exists", effect="NoSchedule")],
    [_tol("team", "Equal", "a", "NoSchedule")],
    [_tol("team", "Equal", "a", "NoSchedule"), _tol("maintenance", "Exists", effect="NoSchedule")],
    [_tol("team", "Equal", "b", "NoSchedule")],
    [_tol("", "Exists")],
    [_tol("sandbox", "Equal", "gvisor", "NoSchedule")],
    [_tol(GPU, "Equal", "absent", "NoSchedule")],
]


def _container(name: str = "main", **requests: str) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "image": PAUSE}
    if requests:
        wanted = {k.replace("_", "-"): v for k, v in requests.items()}
        found["resources"] = {"requests": wanted}
        extended = {k: v for k, v in wanted.items() if "/" in k}
        if extended:
            found["resources"]["limits"] = extended
    return found


#: How a pod asks for resources: its containers and any pod-level spec, by name.
RESOURCES: dict[str, dict[str, Any]] = {
    "none": {"containers": [_container()]},
    "tiny": {"containers": [_container(cpu="1m", memory="1Mi")]},
    "three cores": {"containers": [_container(cpu="3")]},
    "eight gigabytes": {"containers": [_container(memory="8Gi")]},
    "two hundred cores": {"containers": [_container(cpu="200")]},
    "one gpu": {"containers": [_container(**{GPU: "1"})]},
    "eight gpus": {"containers": [_container(**{GPU: "8"})]},
    "ephemeral 2Gi": {"containers": [_container(ephemeral_storage="2Gi")]},
    "ephemeral 30Gi": {"containers": [_container(ephemeral_storage="30Gi")]},
    "two containers, 3 cores": {
        "containers": [_container("a", cpu="1500m"), _container("b", cpu="1500m")]
    },
}
#: Requests that are decisive only near a small node's capacity: one pod each, so no two of
#: them compete for the same room (explain places every pod alone).
TIGHT: dict[str, dict[str, Any]] = {
    "an init container of 3 cores": {
        "initContainers": [_container("init", cpu="3")],
        "containers": [_container(cpu="1m")],
    },
    "a sidecar and an app of 2.5 cores together": {
        "initContainers": [{**_container("proxy", cpu="1500m"), "restartPolicy": "Always"}],
        "containers": [_container(cpu="1")],
    },
    "an init container smaller than the sidecar and app": {
        "initContainers": [
            {**_container("proxy", cpu="1"), "restartPolicy": "Always"},
            _container("init", cpu="1500m"),
        ],
        "containers": [_container(cpu="500m")],
    },
    "pod-level requests of 3 cores": {
        "resources": {"requests": {"cpu": "3"}},
        "containers": [_container(cpu="1m")],
    },
    "pod-level requests of 6Gi": {
        "resources": {"requests": {"memory": "6Gi"}},
        "containers": [_container(memory="1Mi")],
    },
    "kata overhead with 1m": {"runtimeClassName": "kata", "containers": [_container(cpu="1m")]},
    "kata overhead with 250m": {
        "runtimeClassName": "kata",
        "containers": [_container(cpu="250m")],
    },
}


def _pod(name: str, what: str, body: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": {"corpus/what": what}},
        "spec": {"terminationGracePeriodSeconds": 0, **copy.deepcopy(dict(body))},
    }


def _with(
    spec: dict[str, Any], selector: Any, terms: Any, preferred: bool, tolerations: Any
) -> None:
    if selector:
        spec["nodeSelector"] = dict(selector)
    node_affinity: dict[str, Any] = {}
    if terms:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": copy.deepcopy(terms)
        }
    if preferred:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": 50, "preference": {"matchExpressions": [_expr("disk", "In", "ssd")]}}
        ]
    if node_affinity:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    if tolerations:
        spec["tolerations"] = copy.deepcopy(tolerations)


def corpus(seed: int = SEED, size: int = RANDOM_PODS) -> list[dict[str, Any]]:
    """The pods of round 1: ``size`` random combinations, then one of each tight request.

    Why seeded: a disagreement must be reproducible by the pod's name; a new :data:`SEED`
    gives a fresh corpus to try.
    """
    rng = random.Random(seed)
    pods = []
    for i in range(size):
        # Each constraint is often left out, so most pods have one or two and the corpus
        # places about two pods in three; the rest fail for every reason there is.
        selector = rng.choice(SELECTORS) if rng.random() < 0.5 else None
        terms = rng.choice(TERMS) if rng.random() < 0.5 else None
        tolerations = rng.choice(TOLERATIONS) if rng.random() < 0.6 else []
        resources = rng.choice(list(RESOURCES)) if rng.random() < 0.6 else "tiny"
        runtime = rng.random() < 0.1
        preferred = rng.random() < 0.2
        what = f"selector {selector}, terms {terms}, tolerations {tolerations}, {resources}" + (
            ", gvisor" if runtime else ""
        )
        pod = _pod(f"p{i:03d}", what, RESOURCES[resources])
        _with(pod["spec"], selector, terms, preferred, tolerations)
        if runtime:
            pod["spec"]["runtimeClassName"] = "gvisor"
        pods.append(pod)
    for j, (what, body) in enumerate(TIGHT.items()):
        pods.append(_pod(f"t{j:02d}", what, body))
    return pods


# --- the cluster -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """A control plane with the in-tree plugins of our default config, and the Nodes."""
    options = ControlPlaneOptions(apiservers=(apiserver_options("in-tree", name="main"),))
    with running(options) as started, started.api.client() as api, heartbeating(api, NODES):
        node = client.NodeV1Api(api)
        for runtime_class in RUNTIME_CLASSES:
            node.create_runtime_class(runtime_class)
        yield started


@pytest.fixture(scope="module")
def round_one(plane: ControlPlane) -> Iterator[tuple[dict[str, Any], ...]]:
    """Round 1 run once for the module: (stored pods, outcomes, explain's answers)."""
    with plane.api.client() as api:
        create_namespace(api, "corpus")
        stored = create_pods(api, "corpus", corpus())
        outcomes = decisions(api, "corpus", stored)
        answers = explained(plane.api, "corpus")
        yield stored, outcomes, answers
        delete_pods(api, "corpus")


def _room(stored: Mapping[str, Mapping[str, Any]], fits: Mapping[str, list[str]]) -> list[str]:
    """Nodes whose allocatable the pods explain fits there would exceed together."""
    allocatable = {
        n["metadata"]["name"]: parse_resource_list(n["status"]["allocatable"]) for n in NODES
    }
    wanted: dict[str, Counter[str]] = {name: Counter() for name in allocatable}
    for name, nodes in fits.items():
        requests = pod_requests(stored[name]["spec"])
        for node in nodes:
            for resource, amount in requests.items():
                wanted[node][resource] += amount  # type: ignore[assignment]
    return [
        f"{node}: {resource} {total} > {allocatable[node].get(resource, Decimal(0))}"
        for node, totals in wanted.items()
        for resource, total in totals.items()
        if total > allocatable[node].get(resource, Decimal(0))
    ]


def test_explain_agrees_with_the_scheduler_on_every_pod_of_the_corpus(
    round_one: tuple[dict[str, Any], ...],
) -> None:
    stored, outcomes, answers = round_one
    assert set(answers) == set(stored), "explain answers for exactly the pods created"
    room = _room(stored, {n: a["fits"] for n, a in answers.items()})
    assert not room, "the corpus is sized so no pod competes for room"
    found = disagreements(answers, outcomes, stored, CORDONED)
    bound = sum(o.bound for o in outcomes.values())
    FIGURES.append(
        f"explain vs scheduler, round 1 (the corpus): {len(outcomes)} pods "
        f"({bound} bound, {len(outcomes) - bound} unschedulable), "
        f"{len(outcomes) - len(found)} agree"
    )
    assert not found, "\n".join(found)
    assert 0 < bound < len(outcomes), "the corpus has both placed and unplaceable pods"


def _narrowed(
    pod: Mapping[str, Any], operator: str, names: list[str], suffix: str
) -> dict[str, Any]:
    """A copy of a stored pod with ``metadata.name <operator> name`` for each of ``names``
    added to every required term (or as its only term), under a new name and without what
    the server set."""
    spec = copy.deepcopy(pod["spec"])
    spec.pop("nodeName", None)
    fields = [_name(operator, name) for name in names]
    required = (
        spec.setdefault("affinity", {})
        .setdefault("nodeAffinity", {})
        .setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": [{}]})
    )
    for term in required["nodeSelectorTerms"]:
        term.setdefault("matchFields", []).extend(fields)
    name = f"{pod['metadata']['name']}-{suffix}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": dict(pod["metadata"]["annotations"])},
        "spec": spec,
    }


def test_no_node_outside_explains_set_takes_the_pod(
    plane: ControlPlane, round_one: tuple[dict[str, Any], ...]
) -> None:
    stored, _, answers = round_one
    twins = [
        _narrowed(stored[name], "NotIn", answer["fits"], "elsewhere")
        for name, answer in sorted(answers.items())
        if answer["fits"]
    ]
    with plane.api.client() as api:
        create_namespace(api, "elsewhere")
        made = create_pods(api, "elsewhere", twins)
        outcomes = decisions(api, "elsewhere", made)
        twin_answers = explained(plane.api, "elsewhere")
        delete_pods(api, "elsewhere")
    unexpected = [n for n, a in twin_answers.items() if a["fits"]]
    found = disagreements(twin_answers, outcomes, made, CORDONED)
    FIGURES.append(
        f"explain vs scheduler, round 2 (twins kept off explain's nodes): {len(outcomes)} pods, "
        f"{len(outcomes) - len(found)} agree"
    )
    assert unexpected == [], "explain itself fits the twins nowhere"
    assert not found, "\n".join(found)


def _batches(
    stored: Mapping[str, Mapping[str, Any]], answers: Mapping[str, Mapping[str, Any]]
) -> list[list[tuple[str, str]]]:
    """(pod, node) pins in batches where the pods pinned to one node fit it together.

    Why: each batch runs at once, and a pinned pod must be refused only for what explain
    judged, never for room its batch-mates took.
    """
    allocatable = {
        n["metadata"]["name"]: parse_resource_list(n["status"]["allocatable"]) for n in NODES
    }
    pending = [(name, node) for name, a in sorted(answers.items()) for node in a["fits"]]
    batches = []
    while pending:
        used: dict[str, Counter[str]] = {node: Counter() for node in allocatable}
        batch, rest = [], []
        for name, node in pending:
            requests = pod_requests(stored[name]["spec"])
            room = all(
                used[node][r] + amount <= allocatable[node].get(r, Decimal(0))
                for r, amount in requests.items()
            )
            if room and sum(1 for _, n in batch if n == node) < 20:
                for r, amount in requests.items():
                    used[node][r] += amount  # type: ignore[assignment]
                batch.append((name, node))
            else:
                rest.append((name, node))
        batches.append(batch)
        pending = rest
    return batches


def test_every_node_in_explains_set_takes_the_pod(
    plane: ControlPlane, round_one: tuple[dict[str, Any], ...]
) -> None:
    stored, _, answers = round_one
    wrong = []
    total = 0
    with plane.api.client() as api:
        create_namespace(api, "pinned")
        for batch in _batches(stored, answers):
            twins = {
                f"{name}-{node}": _narrowed(stored[name], "In", [node], node)
                for name, node in batch
            }
            create_pods(api, "pinned", list(twins.values()))
            outcomes = decisions(api, "pinned", twins)
            total += len(outcomes)
            for name, node in batch:
                outcome = outcomes[f"{name}-{node}"]
                if outcome.node != node:
                    what = stored[name]["metadata"]["annotations"]["corpus/what"]
                    wrong.append(
                        f"{name} ({what}) pinned to {node}, which explain says it fits: "
                        f"{outcome.node or outcome.message}"
                    )
            delete_pods(api, "pinned")
    FIGURES.append(
        f"explain vs scheduler, round 3 (a twin pinned to each node explain names): "
        f"{total} pods, {total - len(wrong)} bound there"
    )
    assert not wrong, "\n".join(wrong)
