"""Growth surfaces of admission: each plugin alone on each part of the pod it reads, and
both chains.

Why one surface per plugin and dimension: a review's cost must be linear in the pod's size
whatever part of the pod grows (docs/operations.md, "Input budgets"), and a plugin that is
quadratic in one list hides behind the others when only whole chains are measured. Each
surface is one review as the API server makes it for the ``only`` plugin
(``/mutate/<plugin>`` then ``/validate/<plugin>``; here both phases in one
:meth:`Admission.handle`, as ``review`` runs them: bytes in, bytes out) under
``bench/configs/full.yaml``, where every plugin is enabled, in namespace ``shop`` of
``bench/configs/cluster.yaml`` unless a surface says otherwise. The chains run the default
and the full configuration on the benchmarks' pod with N containers, and more.

Three surfaces whose cost is nearly all the review's JSON parse (anti-affinity terms,
containers and init containers, the chains' containers) run where the body stays near a
megabyte at 2N: past that, ``orjson.loads`` and the garbage collector's schedule over the
parsed objects make the step, not the plugins (anti-affinity terms: 2.1x from 4,000, 4.7x
from 24,000 and 2.3x with the collector off; the chain's containers: 1.9x from 500, 2.8x
from 1,500), as the calls counted by ``tests/plugins/test_linear.py`` show: they double.

Every input carries the run's number in its names and values, so no bounded memo of the
plugins (resource names, tolerations' descriptions, quantities) answers a run from an
earlier one: the bench measures what a client sending new pods meets. Surfaces whose N is
in a Namespace build a new cluster (and :class:`Admission`) per run, as a changed
Namespace is read again.

:data:`CASES` is the table; ``tests/plugins/test_linear.py`` runs the same cases at small
sizes and counts the calls each makes, so the table is also what the unit tests hold.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from bench import payloads, scenario
from bench.growth.measure import Surface, in_process
from webhooks.core.admission import Admission
from webhooks.core.plugin import Phase
from webhooks.plugins import REGISTRY

_RUNS = itertools.count()
#: Both phases, as ``review`` runs them: the validating half sees the mutated object.
PHASES: tuple[Phase, ...] = ("mutate", "validate")
#: A Namespace the cluster does not hold: no labels, so actions fall back to the plugin's
#: own (``warn`` for dedicated-nodes), and no annotations.
ELSEWHERE = "elsewhere"
#: The Namespace of surfaces that grow a Namespace: built per run (:func:`wide_namespace`).
WIDE = "wide"

Pod = dict[str, Any]


@functools.cache
def admission(config: str) -> Admission:
    """The :class:`Admission` of ``config`` over the benchmarks' cluster, built once."""
    return Admission(REGISTRY, scenario.config(config), scenario.cluster())


@dataclass(frozen=True, slots=True)
class Case:
    """One surface: a pod of size n (``build(n, run)``) reviewed by ``only`` (``None``: the
    chain) under ``config``; ``namespace(n, run)``, when given, is a Namespace added to the
    cluster for that review."""

    name: str
    unit: str
    size: int
    build: Callable[[int, int], Pod]
    only: str | None
    config: str = "full"
    namespace: Callable[[int, int], dict[str, Any]] | None = None

    def review(self, n: int) -> tuple[Admission, bytes]:
        """A new input of size ``n``: the Admission to ask and the review's body."""
        run = next(_RUNS)
        pod = self.build(n, run)
        review = payloads.review(pod)
        review["request"]["namespace"] = pod["metadata"]["namespace"]
        answering = admission(self.config)
        if self.namespace is not None:
            cluster = scenario.cluster()
            cluster.add(self.namespace(n, run))
            answering = Admission(REGISTRY, answering.config, cluster)
        return answering, orjson.dumps(review)

    def answer(self, given: tuple[Admission, bytes]) -> object:
        """One review of ``given`` by this case's plugin (or the chain), both phases."""
        answering, body = given
        return answering.handle(body, PHASES, self.only)

    def surface(self) -> Surface:
        """The case as the growth bench measures it."""
        return Surface(self.name, self.unit, self.size, in_process(self.review, self.answer))


def _pod(spec: dict[str, Any], namespace: str = "shop", **metadata: Any) -> Pod:
    """A small Pod around ``spec`` (one container unless ``spec`` says otherwise)."""
    body: dict[str, Any] = {
        "containers": [{"name": "app", "image": "registry.example.com/app:1.0"}],
        **spec,
    }
    meta = {"generateName": "web-", "namespace": namespace, "labels": {"app": "web"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {**meta, **metadata}, "spec": body}


# --- pods, one per dimension ---------------------------------------------------------------


def extended_resources(n: int, run: int) -> Pod:
    """One container whose limits name ``n`` distinct extended resources."""
    limits = {f"example.com/r{run}-{i}": "1" for i in range(n)}
    container = {"name": "app", "image": "app:1", "resources": {"limits": limits}}
    return _pod({"containers": [container]})


def tolerated_resources(n: int, run: int) -> Pod:
    """:func:`extended_resources` already carrying every toleration it gets: the pod the
    API server sends on reinvocation, or one whose author wrote the tolerations."""
    pod = extended_resources(n, run)
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    pod["spec"]["tolerations"] = [
        {"key": name, "operator": "Exists", "effect": "NoSchedule"} for name in sorted(limits)
    ]
    return pod


def gpu_containers(n: int, run: int) -> Pod:
    """``n`` containers and as many init containers, each requesting a GPU and a resource
    of the run's."""
    resources = {"limits": {"nvidia.com/gpu": "1", f"example.com/c{run}": "1"}}
    return _pod(
        {
            "containers": [
                {"name": f"app-{i}", "image": "app:1", "resources": resources} for i in range(n)
            ],
            "initContainers": [
                {"name": f"init-{i}", "image": "app:1", "resources": resources} for i in range(n)
            ],
        }
    )


def best_effort_containers(n: int, run: int) -> Pod:
    """``n`` containers requesting zero cpu and memory (spelt anew per run), so that
    deciding the pod is BestEffort reads every one of them."""
    zero = {"cpu": f"0e{run}", "memory": f"0e-{run}"}
    return _pod(
        {
            "containers": [
                {"name": f"app-{i}", "image": "app:1", "resources": {"requests": zero}}
                for i in range(n)
            ]
        }
    )


def claims(n: int, run: int) -> Pod:
    """``n`` resource claims, none of which the cluster holds (each is a warning), and a
    toleration only a claim could justify: without it ``enforce`` would resolve none of
    them, as the answer would not depend on them."""
    entries = [{"name": f"c{i}", "resourceClaimName": f"claim-{run}-{i}"} for i in range(n)]
    toleration = {"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    return _pod({"resourceClaims": entries, "tolerations": [toleration]})


def long_resource_name(n: int, run: int) -> Pod:
    """One container requesting a resource whose name is ``n`` characters long."""
    name = f"example.com/{run}" + "r" * n
    container = {"name": "app", "image": "app:1", "resources": {"limits": {name: "1"}}}
    return _pod({"containers": [container]})


def _tolerations(key: str, n: int, run: int) -> list[dict[str, Any]]:
    return [
        {"key": key, "operator": "Equal", "value": f"v{run}-{i}", "effect": "NoSchedule"}
        for i in range(n)
    ]


def in_namespace(namespace: str) -> Callable[[int, int], Pod]:
    """A small pod of the run in ``namespace`` (whose Namespace is what grows)."""

    def build(n: int, run: int) -> Pod:
        return _pod({}, namespace, labels={"app": f"web-{run}"})

    return build


def tolerations(key: str, namespace: str = "shop") -> Callable[[int, int], Pod]:
    """``n`` tolerations on ``key``, each with its own value: one key, so a merge or a
    whitelist check meets them all in the same bucket."""

    def build(n: int, run: int) -> Pod:
        return _pod({"tolerations": _tolerations(key, n, run)}, namespace)

    return build


def distinct_tolerations(n: int, run: int) -> Pod:
    """``n`` tolerations with distinct keys, none of them covering not-ready or unreachable."""
    items = [
        {"key": f"example.com/t{run}-{i}", "operator": "Exists", "effect": "NoSchedule"}
        for i in range(n)
    ]
    return _pod({"tolerations": items})


def guarded_tolerations(n: int, run: int) -> Pod:
    """``n`` tolerations of the GPU taint the full config guards (distinct values), and no
    request that earns it: one refusal each."""
    items = [
        {
            "key": "nvidia.com/gpu",
            "operator": "Equal",
            "value": f"v{run}-{i}",
            "effect": "NoSchedule",
        }
        for i in range(n)
    ]
    return _pod({"tolerations": items})


def invalid_tolerations(n: int, run: int) -> Pod:
    """``n`` tolerations, each with an invalid key (one error each)."""
    items = [{"key": f"bad key {run} {i}!", "operator": "Exists"} for i in range(n)]
    return _pod({"tolerations": items})


def long_toleration_value(n: int, run: int) -> Pod:
    """One toleration of another dedicated group whose value is ``n`` characters long and
    not a label value (an error for taint-toleration-rules, a violation for dedicated-nodes)."""
    value = f"g{run}-" + "v" * n + "!"
    return _pod({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": value}]})


def daemonset_pod(n: int, run: int) -> Pod:
    """A DaemonSet pod with ``n`` tolerations of its own (the defaults go after them)."""
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u"}
    pod = distinct_tolerations(n, run)
    pod["metadata"]["ownerReferences"] = [{**owner, "controller": True}]
    return pod


def owner_references(n: int, run: int) -> Pod:
    """A pod with ``n`` non-controller owner references before its DaemonSet controller."""
    refs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": f"cm-{run}-{i}", "uid": f"u{i}"}
        for i in range(n)
    ]
    refs.append(
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "a", "uid": "u", "controller": True}
    )
    return _pod({}, ownerReferences=refs)


def node_selector(n: int, run: int) -> Pod:
    """A nodeSelector of ``n`` pairs (none in the namespace's whitelist)."""
    return _pod({"nodeSelector": {f"example.com/k{run}-{i}": "v" for i in range(n)}})


def overhead(n: int, run: int) -> Pod:
    """A RuntimeClass pod that sets an overhead of ``n`` resources itself."""
    values = {f"example.com/o{run}-{i}": f"{i}.{run}m" for i in range(n)}
    return _pod({"runtimeClassName": "gvisor", "overhead": values})


def long_overhead_quantity(n: int, run: int) -> Pod:
    """A RuntimeClass pod whose overhead holds a quantity of ``n`` digits and a letter
    outside the grammar (what a backtracking expression took seconds to refuse)."""
    return _pod({"runtimeClassName": "gvisor", "overhead": {"cpu": f"{run}" + "1" * n + "x"}})


def sandbox_tolerations(n: int, run: int) -> Pod:
    """A RuntimeClass pod with ``n`` tolerations on the RuntimeClass's own taint key."""
    pod = tolerations("sandbox")(n, run)
    pod["spec"]["runtimeClassName"] = "gvisor"
    return pod


def _required(terms: list[dict[str, Any]]) -> dict[str, Any]:
    required = {"nodeSelectorTerms": terms}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def node_affinity_terms(n: int, run: int) -> Pod:
    """A required node affinity of ``n`` terms, each with two expressions, half of them
    excluding the namespace's dedicated group (each of those a warning)."""
    terms = []
    for i in range(n):
        group = "web" if i % 2 == 0 else f"other-{run}"
        terms.append(
            {
                "matchExpressions": [
                    {"key": "zone", "operator": "In", "values": [f"z{run}-{i}"]},
                    {"key": "dedicated", "operator": "In", "values": [group]},
                ]
            }
        )
    return _pod({"affinity": _required(terms)})


def node_affinity_expressions(n: int, run: int) -> Pod:
    """One required term of ``n`` expressions on the dedicated key, each allowing the
    namespace's group and a group of its own."""
    expressions = [
        {"key": "dedicated", "operator": "In", "values": ["web", f"g{run}-{i}"]} for i in range(n)
    ]
    return _pod({"affinity": _required([{"matchExpressions": expressions}])})


def anti_affinity_terms(n: int, run: int) -> Pod:
    """``n`` required anti-affinity terms, every one on the allowed hostname key."""
    terms = [
        {
            "labelSelector": {"matchLabels": {"app": f"web-{run}-{i}"}},
            "topologyKey": "kubernetes.io/hostname",
        }
        for i in range(n)
    ]
    anti = {"requiredDuringSchedulingIgnoredDuringExecution": terms}
    return _pod({"affinity": {"podAntiAffinity": anti}})


def long_topology_key(n: int, run: int) -> Pod:
    """One required anti-affinity term whose topology key is ``n`` characters long."""
    term = {"labelSelector": {}, "topologyKey": f"example.com/{run}" + "k" * n}
    return _pod(
        {
            "affinity": {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        }
    )


def containers(n: int, run: int) -> Pod:
    """The benchmarks' Pod (``bench/payloads.py``) with ``n`` containers."""
    pod = payloads.pod(n, big=False)
    pod["metadata"]["labels"]["run"] = str(run)
    return pod


def ephemeral_containers(n: int, run: int) -> Pod:
    """The benchmarks' Pod with one container and ``n`` ephemeral ones (no plugin reads
    them: they come through a subresource)."""
    pod = containers(1, run)
    pod["spec"]["ephemeralContainers"] = [
        {"name": f"debug-{run}-{i}", "image": "busybox:1.36"} for i in range(n)
    ]
    return pod


def labels_and_annotations(n: int, run: int) -> Pod:
    """The benchmarks' Pod with ``n`` labels and ``n`` annotations."""
    pod = containers(1, run)
    pod["metadata"]["labels"].update({f"example.com/l{run}-{i}": "x" for i in range(n)})
    pod["metadata"]["annotations"].update({f"example.com/a{run}-{i}": "y" for i in range(n)})
    return pod


def many_tolerations(n: int, run: int) -> Pod:
    """The benchmarks' Pod with ``n`` whitelisted tolerations of the RuntimeClass's key."""
    pod = containers(1, run)
    pod["spec"]["tolerations"] = _tolerations("sandbox", n, run)
    return pod


# --- Namespaces that grow -------------------------------------------------------------------


def _namespace(run: int, annotations: dict[str, str]) -> dict[str, Any]:
    meta = {"name": WIDE, "labels": {"run": str(run)}, "annotations": annotations}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def wide_whitelist(n: int, run: int) -> dict[str, Any]:
    """A Namespace whose tolerations whitelist has ``n`` entries of the key ``sandbox``."""
    entries = _tolerations("sandbox", n, run)
    key = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
    return _namespace(run, {key: orjson.dumps(entries).decode()})


def wide_defaults(n: int, run: int) -> dict[str, Any]:
    """A Namespace whose default tolerations are ``n`` entries of the key ``sandbox``."""
    entries = _tolerations("sandbox", n, run + 1)
    key = "scheduler.alpha.kubernetes.io/defaultTolerations"
    return _namespace(run, {key: orjson.dumps(entries).decode()})


def wide_selector(n: int, run: int) -> dict[str, Any]:
    """A Namespace whose node selector has ``n`` pairs."""
    pairs = ",".join(f"example.com/k{run}-{i}=v" for i in range(n))
    return _namespace(run, {"scheduler.alpha.kubernetes.io/node-selector": pairs})


ERT = "extended-resource-toleration"
DTS = "default-toleration-seconds"
PTR = "pod-toleration-restriction"
PNS = "pod-node-selector"
DST = "daemonset-tolerations"
RC = "runtime-class"
DN = "dedicated-nodes"
TTR = "taint-toleration-rules"
AAT = "anti-affinity-topology"

#: Every surface: (plugin or chain, what grows), its unit, N, the pod, who answers.
CASES: list[Case] = [
    Case(f"plugin {ERT}: extended resources", "resources", 8000, extended_resources, ERT),
    Case(
        f"plugin {ERT}: extended resources already tolerated",
        "resources",
        8000,
        tolerated_resources,
        ERT,
    ),
    Case(f"plugin {ERT}: containers and init containers", "each", 2000, gpu_containers, ERT),
    Case(f"plugin {ERT}: unresolved resource claims", "claims", 8000, claims, ERT),
    Case(f"plugin {ERT}: tolerations (enforce)", "tolerations", 8000, guarded_tolerations, ERT),
    Case(f"plugin {ERT}: length of a resource name", "chars", 1_000_000, long_resource_name, ERT),
    Case(f"plugin {DTS}: tolerations", "tolerations", 16000, distinct_tolerations, DTS),
    Case(f"plugin {PNS}: nodeSelector pairs", "pairs", 16000, node_selector, PNS),
    Case(
        f"plugin {PNS}: namespace selector pairs",
        "pairs",
        4000,
        in_namespace(WIDE),
        PNS,
        namespace=wide_selector,
    ),
    Case(f"plugin {PTR}: tolerations of one key", "tolerations", 8000, tolerations("sandbox"), PTR),
    Case(
        f"plugin {PTR}: namespace whitelist entries and tolerations",
        "each",
        4000,
        tolerations("sandbox", WIDE),
        PTR,
        namespace=wide_whitelist,
    ),
    Case(
        f"plugin {PTR}: namespace default tolerations and tolerations",
        "each",
        4000,
        tolerations("sandbox", WIDE),
        PTR,
        namespace=wide_defaults,
    ),
    Case(f"plugin {PTR}: containers (BestEffort)", "containers", 4000, best_effort_containers, PTR),
    Case(f"plugin {DST}: tolerations", "tolerations", 16000, daemonset_pod, DST),
    Case(f"plugin {DST}: owner references", "references", 16000, owner_references, DST),
    Case(f"plugin {RC}: overhead resources", "resources", 8000, overhead, RC),
    Case(
        f"plugin {RC}: length of an overhead quantity",
        "digits",
        1_000_000,
        long_overhead_quantity,
        RC,
    ),
    Case(f"plugin {RC}: tolerations of its key", "tolerations", 8000, sandbox_tolerations, RC),
    Case(f"plugin {DN}: node affinity terms", "terms", 4000, node_affinity_terms, DN),
    Case(
        f"plugin {DN}: expressions of one term", "expressions", 8000, node_affinity_expressions, DN
    ),
    Case(
        f"plugin {DN}: foreign tolerations (enforce)",
        "tolerations",
        8000,
        tolerations("dedicated"),
        DN,
    ),
    Case(
        f"plugin {DN}: foreign tolerations (warn)",
        "tolerations",
        8000,
        tolerations("dedicated", ELSEWHERE),
        DN,
    ),
    Case(
        f"plugin {DN}: length of a toleration's value",
        "chars",
        1_000_000,
        long_toleration_value,
        DN,
    ),
    Case(f"plugin {TTR}: invalid tolerations", "tolerations", 8000, invalid_tolerations, TTR),
    Case(
        f"plugin {TTR}: length of a toleration's value",
        "chars",
        1_000_000,
        long_toleration_value,
        TTR,
    ),
    Case(f"plugin {AAT}: required anti-affinity terms", "terms", 4000, anti_affinity_terms, AAT),
    Case(f"plugin {AAT}: length of a topology key", "chars", 1_000_000, long_topology_key, AAT),
    Case("chain default: containers", "containers", 500, containers, None, "default"),
    Case("chain full: containers", "containers", 500, containers, None),
    Case("chain full: ephemeral containers", "containers", 4000, ephemeral_containers, None),
    Case("chain full: labels and annotations", "each", 8000, labels_and_annotations, None),
    Case("chain full: tolerations", "tolerations", 4000, many_tolerations, None),
]


SURFACES = [case.surface() for case in CASES]
